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
    if !html && !qp && !quotes {
        return Cow::Borrowed(text);
    }
    let mut s = text.to_string();
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
        ] {
            assert_eq!(normalize(text), want);
        }
    }
}
