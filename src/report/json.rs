//! The JSON form: the stable interface (README.md, "JSON report").

use crate::report::Report;

pub(crate) fn render(r: &Report) -> String {
    let mut s =
        serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
    s.push('\n');
    s
}
