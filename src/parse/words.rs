//! The lines of a text that hold one of a few words, in any ASCII case,
//! found in one pass over the whole text (an Aho-Corasick automaton)
//! instead of a substring search for each word on each line: what a
//! reader of the whole kernel log runs first, so that its per-line work
//! meets only the lines it can use.

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::noncontiguous::NFA;
use aho_corasick::Input;

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
