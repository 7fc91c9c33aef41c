//! The lines of a text that hold one of a few words, in any ASCII case,
//! found in one pass over the whole text (an Aho-Corasick automaton)
//! instead of a substring search for each word on each line: what a
//! reader of the whole kernel log runs first, so that its per-line work
//! meets only the lines it can use.

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::noncontiguous::NFA;
use aho_corasick::Input;
use memchr::memmem::Finder;
use std::sync::OnceLock;

/// One word looked for in many lines, its searcher built once: memchr's
/// `memmem::Finder`, where `str::contains` and `str::find` build a
/// searcher on every call (some 900 instructions for the longer words of
/// the kernel log's readers, measured with callgrind: BENCHMARKS.md). A
/// `static` of this type is what a per-line reader uses for its words.
pub(crate) struct Needle {
    word: &'static str,
    finder: OnceLock<Finder<'static>>,
}

impl Needle {
    pub(crate) const fn new(word: &'static str) -> Needle {
        Needle {
            word,
            finder: OnceLock::new(),
        }
    }

    /// Where the word first starts in `hay`, as `str::find` says.
    pub(crate) fn find(&self, hay: &str) -> Option<usize> {
        self.finder
            .get_or_init(|| Finder::new(self.word.as_bytes()))
            .find(hay.as_bytes())
    }

    /// Whether `hay` holds the word, as `str::contains` says.
    pub(crate) fn is_in(&self, hay: &str) -> bool {
        self.find(hay).is_some()
    }

    /// What follows the word's first occurrence in `hay`.
    pub(crate) fn after<'h>(&self, hay: &'h str) -> Option<&'h str> {
        self.find(hay).map(|i| &hay[i + self.word.len()..])
    }

    /// Where the word starts in `hay`, every occurrence, in order (they do
    /// not overlap).
    pub(crate) fn find_all<'h>(&'h self, hay: &'h str) -> impl Iterator<Item = usize> + 'h {
        self.finder
            .get_or_init(|| Finder::new(self.word.as_bytes()))
            .find_iter(hay.as_bytes())
    }
}

/// A set of words to look for.
pub(crate) struct Words(NFA);

impl Words {
    /// The automaton of `words`; `None` only when it cannot be built (far
    /// more words than a reader has). The NFA alone, not `AhoCorasick`,
    /// which links every kind of automaton in (measured: 196 KB more
    /// binary against 144 KB); it builds in a fraction of a DFA's cost.
    pub(crate) fn new<I, P>(words: I) -> Option<Words>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<[u8]>,
    {
        NFA::builder()
            .ascii_case_insensitive(true)
            .build(words)
            .ok()
            .map(Words)
    }

    /// The lines of `text` (as `str::lines` cuts them) that hold one of
    /// the words, in order.
    pub(crate) fn lines_holding<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let Ok(hits) = self.0.try_find_iter(Input::new(text)) else {
            return text.lines().collect();
        };
        // A word holds no newline, so a line with one has a match starting
        // in it, whatever the matches before it.
        let mut hits = hits.map(|m| m.start()).peekable();
        let mut out = Vec::new();
        let mut at = 0;
        for raw in text.split_inclusive('\n') {
            if hits.peek().is_none() {
                break;
            }
            let end = at + raw.len();
            let mut hit = false;
            while hits.next_if(|&h| h < end).is_some() {
                hit = true;
            }
            if hit {
                let line = raw.strip_suffix('\n').unwrap_or(raw);
                out.push(line.strip_suffix('\r').unwrap_or(line));
            }
            at = end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_needle_finds_what_str_finds() {
        static N: Needle = Needle::new("BAR ");
        for hay in ["", "BAR", "BAR ", "a BAR 0 BAR 1", "bar ", "xxBAR BAR "] {
            assert_eq!(N.find(hay), hay.find("BAR "), "{hay:?}");
            assert_eq!(N.is_in(hay), hay.contains("BAR "), "{hay:?}");
            assert_eq!(
                N.after(hay),
                hay.find("BAR ").map(|i| &hay[i + 4..]),
                "{hay:?}"
            );
            let all: Vec<usize> = hay.match_indices("BAR ").map(|(i, _)| i).collect();
            assert_eq!(N.find_all(hay).collect::<Vec<_>>(), all, "{hay:?}");
        }
    }

    proptest::proptest! {
        #[test]
        fn a_needle_agrees_with_str_on_any_text(hay in "[ab: ]{0,40}", word in "[ab:]{1,4}") {
            let w: &'static str = Box::leak(word.clone().into_boxed_str());
            let n = Needle::new(w);
            proptest::prop_assert_eq!(n.find(&hay), hay.find(&word));
            let all: Vec<usize> = hay.match_indices(&word).map(|(i, _)| i).collect();
            proptest::prop_assert_eq!(n.find_all(&hay).collect::<Vec<_>>(), all);
        }
    }

    #[test]
    fn lines_as_lines_cuts_them_that_hold_a_word_in_any_case() {
        let w = Words::new(["bar ", "thunderbolt"]).unwrap();
        let text = "a BAR 0\r\nnone\nbar bar thunderbolt\n\nThunderBolt";
        assert_eq!(
            w.lines_holding(text),
            ["a BAR 0", "bar bar thunderbolt", "ThunderBolt"]
        );
        assert!(w.lines_holding("").is_empty());
        assert!(w.lines_holding("bar\nba r\n").is_empty());
    }
}
