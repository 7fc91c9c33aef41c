//! Fitting the text reports to a screen: prose wrapped at spaces to the
//! width, each long line's continuation indented under its own text.
//!
//! The width and the character set are the caller's to find (the command
//! line reads the terminal and the locale); this module works on values.
//! Our own few lines rather than a wrapping crate: the reports are ASCII
//! prose with a label at the start of a line, which needs only a split at
//! spaces, and the binary goes into every initramfs.

/// The width a report is written for when stdout is no terminal (a pipe,
/// a file, the journal), and the narrowest one honoured.
pub(crate) const DEFAULT_WIDTH: usize = 80;
const MIN_WIDTH: usize = 40;

/// What the text forms are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Screen {
    /// Columns.
    pub width: usize,
    /// The locale says UTF-8: the address map may draw with block
    /// characters; ASCII otherwise.
    pub utf8: bool,
}

impl Screen {
    /// 80 columns, ASCII: a file, a pipe, a log.
    pub(crate) const PLAIN: Screen = Screen {
        width: DEFAULT_WIDTH,
        utf8: false,
    };

    /// `width` columns (at least 40), `utf8` as the locale says.
    pub(crate) fn new(width: Option<usize>, utf8: bool) -> Screen {
        Screen {
            width: width.unwrap_or(DEFAULT_WIDTH).max(MIN_WIDTH),
            utf8,
        }
    }
}

/// Whether a locale's variables name UTF-8: the first of `LC_ALL`,
/// `LC_CTYPE`, `LANG` that is set and not empty decides, as setlocale(3)
/// takes them.
pub(crate) fn locale_is_utf8(
    lc_all: Option<&str>,
    lc_ctype: Option<&str>,
    lang: Option<&str>,
) -> bool {
    [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty())
        .is_some_and(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("utf-8") || v.contains("utf8")
        })
}

/// Where a wrapped line's continuation starts, and how much of the line
/// is kept as it is (its indent, or a short `label:` and the blanks after
/// it, so that `  window:   ...` continues under its text); a hint's
/// `[id] ...` is a paragraph that continues two columns in.
fn hang(line: &str) -> (usize, usize) {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    if let Some(colon) = rest.find(": ") {
        let label = &rest[..colon];
        if colon <= 12 && !label.contains(' ') && !label.starts_with('[') {
            let after = rest[colon + 1..].len() - rest[colon + 1..].trim_start().len();
            let end = indent + colon + 1 + after;
            return (end, end);
        }
    }
    (indent + 2, indent)
}

/// One line cut at spaces into lines of at most `width` characters (a
/// word longer than that stands alone, whole).
fn wrap_line(line: &str, width: usize, out: &mut String) {
    if line.chars().count() <= width {
        out.push_str(line);
        out.push('\n');
        return;
    }
    let (hang, kept) = hang(line);
    let hang = hang.min(width * 2 / 3);
    let mut cur = line[..kept].to_string();
    let mut cur_len = kept;
    let mut empty = true;
    for word in line[kept..].split(' ').filter(|w| !w.is_empty()) {
        let n = word.chars().count();
        if !empty && cur_len + 1 + n > width {
            out.push_str(&cur);
            out.push('\n');
            cur = " ".repeat(hang);
            cur_len = hang;
            empty = true;
        }
        if !empty {
            cur.push(' ');
            cur_len += 1;
        }
        cur.push_str(word);
        cur_len += n;
        empty = false;
    }
    out.push_str(&cur);
    out.push('\n');
}

/// Every line of `text` wrapped to `width`.
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for line in text.lines() {
        wrap_line(line, width, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_stay_as_they_are() {
        assert_eq!(wrap("a b\n\n  c: d\n", 80), "a b\n\n  c: d\n");
    }

    #[test]
    fn long_lines_break_at_spaces_under_their_label() {
        let line = format!("  window:   {}", "word ".repeat(30).trim_end());
        let got = wrap(&line, 40);
        let lines: Vec<&str> = got.lines().collect();
        assert!(lines.len() > 1);
        for l in &lines {
            assert!(l.chars().count() <= 40, "{l:?}");
            assert!(!l.ends_with(' '), "{l:?}");
        }
        assert!(lines[1].starts_with("            word"), "{:?}", lines[1]);
        // Nothing lost, nothing added but line breaks and indents.
        let words: Vec<&str> = got.split_whitespace().collect();
        assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
    }

    #[test]
    fn a_hint_is_a_paragraph_and_a_long_word_stays_whole() {
        let got = wrap("  [cpu-pdpe1gb] Give the vCPU 1 GiB pages now", 30);
        assert_eq!(got, "  [cpu-pdpe1gb] Give the vCPU\n    1 GiB pages now\n");
        let long = "x".repeat(50);
        assert_eq!(
            wrap(&format!("a {long} b"), 20),
            format!("a\n  {long}\n  b\n")
        );
    }

    #[test]
    fn the_locale_decides_the_character_set_in_setlocales_order() {
        assert!(locale_is_utf8(None, None, Some("en_US.UTF-8")));
        assert!(locale_is_utf8(None, Some("C.utf8"), Some("C")));
        assert!(!locale_is_utf8(Some("C"), Some("en_US.UTF-8"), None));
        assert!(locale_is_utf8(Some(""), None, Some("de_DE.utf8")));
        assert!(!locale_is_utf8(None, None, None));
        assert!(!locale_is_utf8(None, None, Some("POSIX")));
    }

    #[test]
    fn the_width_has_a_floor_and_a_default() {
        assert_eq!(Screen::new(None, false).width, 80);
        assert_eq!(Screen::new(Some(20), false).width, 40);
        assert_eq!(
            Screen::new(Some(132), true),
            Screen {
                width: 132,
                utf8: true
            }
        );
    }
}
