//! What a paste went through on its way to a bug report, undone before the
//! grammars read it: HTML line breaks and entities (`<br>`, `&nbsp;`,
//! `&lt;unassigned&gt;`) from a web page's source, and quoted-printable
//! soft line breaks (`64bit=` + newline, `=3D`) from a mail attachment,
//! and a publishing tool's typographic apostrophes (`can’t assign`, where
//! the kernel printed `can't`). Text that shows none of them is returned
//! as it is.

use std::borrow::Cow;

/// The text with HTML breaks and entities, and quoted-printable soft
/// breaks, undone where the text shows them.
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let html = text.contains("<br") || ENTITIES.iter().any(|(e, _)| text.contains(e));
    // A quoted-printable body encodes `=` as `=3D`; soft breaks end a line
    // with a lone `=`.
    let qp = text.contains("=3D") && text.lines().any(|l| l.ends_with('='));
    // The kernel's messages hold only ASCII apostrophes (`can't assign`,
    // `can't claim`, `can't reserve`); a blog or forum may print them as
    // U+2019 (or U+2018).
    let quotes = text.contains(['\u{2019}', '\u{2018}']);
    // A page or a form that dropped the line breaks runs the log's records
    // together on one line; each record's stamp starts a line again.
    let joined = text.lines().any(|l| !inner_stamps(l).is_empty());
    if !html && !qp && !quotes && !joined {
        return Cow::Borrowed(text);
    }
    let mut s = text.to_string();
    if joined {
        s = split_records(&s);
    }
    if quotes {
        s = s.replace(['\u{2019}', '\u{2018}'], "'");
    }
    if qp {
        s = s
            .replace("=\r\n", "")
            .replace("=\n", "")
            .replace("=3D", "=");
    }
    if html {
        for br in ["<br />", "<br/>", "<br>", "<BR>"] {
            s = s.replace(br, "\n");
        }
        // `&amp;` last: `&amp;lt;` is the text `&lt;`, not `<`.
        for (entity, ch) in ENTITIES {
            s = s.replace(entity, ch);
        }
    }
    Cow::Owned(s)
}

/// The text with every record a line held after its first put on a line
/// of its own (`inner_stamps`).
fn split_records(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let mut from = 0;
        for at in inner_stamps(line) {
            out.push_str(line[from..at].trim_end());
            out.push('\n');
            from = at;
        }
        out.push_str(&line[from..]);
    }
    out
}

/// Where a line holds the start of a kernel log record after its first
/// character: dmesg's `[ 1234.567890] ` and `dmesg -T`'s `[Mon Dec 18
/// 08:34:36 2023] `, or syslog's `May 25 00:08:35 host kernel: `, each
/// after a space or a closing mark of the record before (a page that
/// dropped the breaks: corpus 339, 350). Byte offsets, in order.
fn inner_stamps(line: &str) -> Vec<usize> {
    let b = line.as_bytes();
    let mut at = Vec::new();
    for i in 1..b.len() {
        if !matches!(b[i - 1], b' ' | b'\t' | b'.' | b')' | b']')
            || !(b[i] == b'[' || b[i].is_ascii_alphabetic() || b[i] >= 0x80)
            || !line.is_char_boundary(i)
        {
            continue;
        }
        let rest = &line[i..];
        if dmesg_stamp(rest) || syslog_stamp(rest) {
            at.push(i);
        }
    }
    at
}

/// `[ 1234.567890] ` or `[Mon Dec 18 08:34:36 2023] `.
fn dmesg_stamp(s: &str) -> bool {
    let Some(r) = s.strip_prefix('[') else {
        return false;
    };
    let Some((inner, after)) = r.split_once(']') else {
        return false;
    };
    if !without_caller(after).starts_with(' ') || inner.len() > 30 {
        return false;
    }
    let secs = inner.trim_start();
    let seconds = secs
        .split_once('.')
        .is_some_and(|(a, b)| is_digits(a) && is_digits(b));
    let dated = inner.len() >= 20
        && MONTHS.iter().any(|m| inner.get(4..7) == Some(*m))
        && inner.split(' ').filter(|w| !w.is_empty()).count() == 5;
    seconds || dated
}

/// The text after printk's caller id (`[ T1194]` or `[  C3]`, a kernel
/// built with CONFIG_PRINTK_CALLER, right after the time: corpus 419),
/// or the text itself.
fn without_caller(after: &str) -> &str {
    after
        .strip_prefix('[')
        .and_then(|r| r.split_once(']'))
        .filter(|(id, _)| {
            let id = id.trim_start();
            id.strip_prefix(['T', 'C']).is_some_and(is_digits)
        })
        .map_or(after, |(_, rest)| rest)
}

/// `May 25 00:08:35 host kernel: `, the month in any locale's word.
fn syslog_stamp(s: &str) -> bool {
    let mut w = s.split(' ').filter(|w| !w.is_empty());
    let (Some(month), Some(day), Some(time), Some(_host), Some(tag)) =
        (w.next(), w.next(), w.next(), w.next(), w.next())
    else {
        return false;
    };
    // The month as the host's locale names it (`febr`, `déc.`).
    let month = month.trim_end_matches('.');
    (1..=6).contains(&month.chars().count())
        && month.chars().all(char::is_alphabetic)
        && is_digits(day)
        && day.len() <= 2
        && time.len() == 8
        && time.split(':').all(|p| p.len() == 2 && is_digits(p))
        && tag == "kernel:"
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The entities a web page's source shows in a kernel log: markup's own,
/// the space, and the apostrophes a publishing tool curls (`can&rsquo;t
/// reserve`, where the kernel printed `can't`). `&amp;` is undone last.
const ENTITIES: [(&str, &str); 16] = [
    ("&nbsp;", " "),
    ("&lt;", "<"),
    ("&gt;", ">"),
    ("&quot;", "\""),
    ("&#39;", "'"),
    ("&#039;", "'"),
    ("&#x27;", "'"),
    ("&#X27;", "'"),
    ("&#x2019;", "'"),
    ("&#x2018;", "'"),
    ("&apos;", "'"),
    ("&rsquo;", "'"),
    ("&lsquo;", "'"),
    ("&#8217;", "'"),
    ("&#8216;", "'"),
    ("&amp;", "&"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Splitting run-together records loses and reorders nothing but
        /// the spaces before each break, whatever the text (multi-byte
        /// characters beside the stamps included).
        #[test]
        fn splitting_records_keeps_every_character(
            s in "([ .\\]\\[a-zA-Z0-9:é]|\\[ *[0-9]{1,5}\\.[0-9]{1,6}\\] |Dec 8 10:00:00 h kernel: ){0,40}"
        ) {
            let out = split_records(&s);
            let strip = |t: &str| t.chars().filter(|c| !c.is_whitespace()).collect::<String>();
            prop_assert_eq!(strip(&out), strip(&s));
        }
    }

    #[test]
    fn pastes_lose_their_markup() {
        for (text, want) in [
            (
                "vfio-pci 0000:b3:00.0: BAR 1: can\u{2019}t reserve [mem 0xe0000000-0xefffffff 64bit pref]\n",
                "vfio-pci 0000:b3:00.0: BAR 1: can't reserve [mem 0xe0000000-0xefffffff 64bit pref]\n",
            ),
            (
                "Region 1: Memory at &lt;unassigned&gt; (64-bit, prefetchable) [size=16G]<br>\n&nbsp;&nbsp;Region 3: x<br />",
                "Region 1: Memory at <unassigned> (64-bit, prefetchable) [size=16G]\n\n  Region 3: x\n",
            ),
            (
                "[    0.58] pci 0000:00:02.0: BAR 0 [mem 0x5248000000-0x5248ffffff 64bit=\n pref]\nvgaarb: decodes=3Dio+mem\n",
                "[    0.58] pci 0000:00:02.0: BAR 0 [mem 0x5248000000-0x5248ffffff 64bit pref]\nvgaarb: decodes=io+mem\n",
            ),
            (
                "pci 0000:01:00.0: BAR 1: can&rsquo;t assign [mem size 0x800000000]; Tom&amp;Jerry&#8217;s &amp;lt;\ncan&#039;t claim, can&#x2019;t\n",
                "pci 0000:01:00.0: BAR 1: can't assign [mem size 0x800000000]; Tom&Jerry's &lt;\ncan't claim, can't\n",
            ),
            ("plain text, a=b\n", "plain text, a=b\n"),
            (
                "[    0.5] pci 0000:01:00.0: BAR 1: no space for [mem size 0x400000000 64bit pref] [    0.5] pci 0000:01:00.0: BAR 1: failed to assign [mem size 0x400000000 64bit pref]\n",
                "[    0.5] pci 0000:01:00.0: BAR 1: no space for [mem size 0x400000000 64bit pref]\n[    0.5] pci 0000:01:00.0: BAR 1: failed to assign [mem size 0x400000000 64bit pref]\n",
            ),
            (
                "May 25 00:08:35 k8s kernel: amdgpu 0005:01:00.0: BAR 0: no space for [mem size 0x200000000 64bit pref]. May 25 00:08:35 k8s kernel: amdgpu 0005:01:00.0: x",
                "May 25 00:08:35 k8s kernel: amdgpu 0005:01:00.0: BAR 0: no space for [mem size 0x200000000 64bit pref].\nMay 25 00:08:35 k8s kernel: amdgpu 0005:01:00.0: x",
            ),
            (
                "febr 08 12:57:43 c5 kernel: a. d\u{e9}c. 08 12:57:44 c5 kernel: b\n",
                "febr 08 12:57:43 c5 kernel: a.\nd\u{e9}c. 08 12:57:44 c5 kernel: b\n",
            ),
            (
                "[Mon Dec 18 08:34:36 2023] amdgpu 0000:c7:00.0: a [Mon Dec 18 08:34:37 2023] b\n",
                "[Mon Dec 18 08:34:36 2023] amdgpu 0000:c7:00.0: a\n[Mon Dec 18 08:34:37 2023] b\n",
            ),
            // Prose that quotes records gives them lines of their own (the
            // grammars read a quoted record anyway); a record that prints a
            // bracket of its own stays whole.
            (
                "The log said [    5.01] NVRM: BAR1 is 0M [    5.02] x\n",
                "The log said\n[    5.01] NVRM: BAR1 is 0M\n[    5.02] x\n",
            ),
            // printk's caller id after the time (corpus 419).
            (
                "[  103.4][ T1194] NVRM: x invalid: [  103.4][ T1194] NVRM: BAR0 is 0M @ 0x0\n",
                "[  103.4][ T1194] NVRM: x invalid:\n[  103.4][ T1194] NVRM: BAR0 is 0M @ 0x0\n",
            ),
            (
                "[    1.0][    C3] a [    1.1][ T1] b [    1.2][ X1] c\n",
                "[    1.0][    C3] a\n[    1.1][ T1] b [    1.2][ X1] c\n",
            ),
            (
                "[    1.0] pci 0000:00:01.0: bridge window [mem 0x1000-0x1fff] to [bus 01]\n",
                "[    1.0] pci 0000:00:01.0: bridge window [mem 0x1000-0x1fff] to [bus 01]\n",
            ),
        ] {
            assert_eq!(normalize(text), want);
        }
    }
}
