//! One precompiled matcher over every form of every known secret: finds them in a text and
//! replaces each with `[redacted NAME]`.
//!
//! The text is searched with its whitespace (space, tab, CR, LF, and the JSON escapes `\n`,
//! `\r`, `\t` of a string inside a string) left out, so a secret split across lines (or a
//! base64 encoding wrapped at 76 columns) is found; the span replaced in the text runs from
//! the match's first byte to its last, whitespace between included. The patterns leave the
//! same whitespace out. One Aho-Corasick automaton (leftmost-longest, so the padded base64
//! wins over its unpadded prefix) makes the search one pass whatever the number of secrets.

use std::borrow::Cow;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};

use super::forms::{self, Form};

/// Secrets shorter than this are not looked for: they are too likely to be ordinary text.
pub(super) const MIN_LEN: usize = 8;

/// The automaton and, per pattern, its replacement. Not `Debug`: its patterns are the
/// secrets (see the impl below, which shows only their number).
#[derive(Default)]
pub(crate) struct Matcher {
    automaton: Option<AhoCorasick>,
    /// The patterns, whitespace left out (what a stream's tail is compared with).
    patterns: Vec<Vec<u8>>,
    replacements: Vec<String>,
    /// The longest pattern's length, whitespace left out (what a stream must hold back).
    longest: usize,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher")
            .field("patterns", &self.patterns.len())
            .field("longest", &self.longest)
            .finish_non_exhaustive()
    }
}

/// A secret found in a text: `text[start..end]` becomes `replacements[pattern]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Found {
    start: usize,
    end: usize,
    pattern: usize,
}

impl Matcher {
    /// A matcher for `secrets` (name, value); values shorter than [`MIN_LEN`] are skipped.
    pub(super) fn build(secrets: &[(String, String)]) -> Matcher {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut replacements = Vec::new();
        for (name, value) in secrets {
            let value = squeeze(value.as_bytes());
            if value.len() < MIN_LEN {
                continue;
            }
            for (pattern, form) in forms::of(&value) {
                if pattern.len() < MIN_LEN || patterns.contains(&pattern) {
                    continue;
                }
                patterns.push(pattern);
                replacements.push(replacement(name, form));
            }
        }
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        let automaton = if patterns.is_empty() {
            None
        } else {
            match AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
            {
                Ok(automaton) => Some(automaton),
                // Only a pattern set past the automaton's size limits fails; a few hundred
                // short patterns never do. Say so loudly rather than redact nothing quietly.
                Err(error) => {
                    tracing::error!(%error, "cannot build the redaction matcher");
                    None
                }
            }
        };
        Matcher {
            automaton,
            patterns,
            replacements,
            longest,
        }
    }

    /// The longest pattern, whitespace left out (0: nothing to look for).
    pub(super) fn longest(&self) -> usize {
        self.longest
    }

    /// `text` with every secret replaced (borrowed when there is none).
    pub(super) fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let found = self.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let bytes = text.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for f in &found {
            out.extend_from_slice(bytes.get(at..f.start).unwrap_or_default());
            out.extend_from_slice(self.replacements[f.pattern].as_bytes());
            at = f.end;
        }
        out.extend_from_slice(bytes.get(at..).unwrap_or_default());
        // Spans start and end on pattern bytes of whole UTF-8 patterns, and only ASCII is
        // left out between them, so they are char boundaries; lossy is only a guard.
        Cow::Owned(
            String::from_utf8(out)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        )
    }

    /// Where the end of `text` that a stream must hold back begins: the first kept byte,
    /// among the last `longest - 1`, from which the rest of `text` (whitespace left out) is
    /// the beginning of a pattern, so that more text could complete a secret there; else
    /// `text.len()`. Ordinary text is released whole; a text that ends in `sk-pro` keeps that.
    pub(super) fn tail_start(&self, text: &str) -> usize {
        if self.longest <= 1 {
            return text.len();
        }
        let window = window_start(text, self.longest);
        let tail = text.as_bytes().get(window..).unwrap_or_default();
        let squeezed = squeeze(tail);
        let every: Vec<usize> = (0..squeezed.len()).collect();
        for (k, offset) in originals(tail, &every).into_iter().enumerate() {
            let rest = squeezed.get(k..).unwrap_or_default();
            if self
                .patterns
                .iter()
                .any(|p| p.len() > rest.len() && p.starts_with(rest))
            {
                // A kept byte a pattern can start with begins a UTF-8 character.
                let mut at = window + offset;
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                return at;
            }
        }
        text.len()
    }

    /// Where the first secret that overlaps `text[from..]` starts, if one starts before
    /// `from` (a stream must hold it back whole).
    pub(super) fn straddling(&self, text: &str, from: usize) -> Option<usize> {
        self.find(text)
            .into_iter()
            .find(|f| f.start < from && f.end > from)
            .map(|f| f.start)
    }

    /// Where `text` holds a secret, in order, as byte spans of `text`.
    fn find(&self, text: &str) -> Vec<Found> {
        let Some(automaton) = &self.automaton else {
            return Vec::new();
        };
        let bytes = text.as_bytes();
        let squeezed = squeeze(bytes);
        let mut found: Vec<Found> = automaton
            .find_iter(&*squeezed)
            .map(|m| Found {
                start: m.start(),
                end: m.end(),
                pattern: m.pattern().as_usize(),
            })
            .collect();
        if found.is_empty() || matches!(squeezed, Cow::Borrowed(_)) {
            return found;
        }
        // Back from positions in the squeezed text to the text's own: one walk.
        let mut wanted: Vec<usize> = found.iter().flat_map(|f| [f.start, f.end - 1]).collect();
        wanted.sort_unstable();
        let at: Vec<(usize, usize)> = wanted
            .iter()
            .copied()
            .zip(originals(bytes, &wanted))
            .collect();
        let original = |kept: usize| {
            at.binary_search_by_key(&kept, |(k, _)| *k)
                .ok()
                .map(|i| at[i].1)
        };
        for f in &mut found {
            if let (Some(start), Some(last)) = (original(f.start), original(f.end - 1)) {
                f.start = start;
                f.end = last + 1;
            }
        }
        found
    }
}

fn replacement(name: &str, form: Form) -> String {
    format!("[redacted {name}{}]", form.suffix())
}

/// The whitespace the search leaves out, as a table (no branch to mispredict).
const BLANK: [bool; 256] = {
    let mut table = [false; 256];
    table[b' ' as usize] = true;
    table[b'\t' as usize] = true;
    table[b'\r' as usize] = true;
    table[b'\n' as usize] = true;
    table
};

/// Whether `byte` is whitespace the search leaves out.
fn blank(byte: u8) -> bool {
    BLANK[usize::from(byte)]
}

/// The offsets in `bytes` of its kept bytes number `wanted` (ascending), as [`squeeze`]
/// counts them. Only walked when something was found; like [`squeeze`], no branch per byte
/// but the rare ones.
fn originals(bytes: &[u8], wanted: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(wanted.len());
    let mut kept = 0;
    let mut i = 0;
    while let (Some(&target), Some(&b)) = (wanted.get(out.len()), bytes.get(i)) {
        if b == b'\\' && matches!(bytes.get(i + 1), Some(b'n' | b'r' | b't')) {
            i += 2;
            continue;
        }
        let is_kept = !blank(b);
        if is_kept & (kept == target) {
            // Not advanced: the same byte may be wanted twice.
            out.push(i);
            continue;
        }
        kept += usize::from(is_kept);
        i += 1;
    }
    out
}

/// `bytes` without the whitespace the search leaves out (borrowed when there is none).
///
/// Written without a branch per byte (each byte is stored, the output advances only past a
/// kept one): in ordinary output a blank comes every few bytes, and a branch on it was
/// mispredicted so often that it cost ten times the search itself (`docs/benchmarks.md`).
pub(super) fn squeeze(bytes: &[u8]) -> Cow<'_, [u8]> {
    if !bytes.iter().any(|&b| blank(b) || b == b'\\') {
        return Cow::Borrowed(bytes);
    }
    let mut out = vec![0u8; bytes.len()];
    let mut kept = 0;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if let Some(slot) = out.get_mut(kept) {
            *slot = b;
        }
        kept += usize::from(!blank(b));
        i += 1;
        // A JSON escape of a blank is rare: this branch is nearly always predicted.
        if b == b'\\' && matches!(bytes.get(i), Some(b'n' | b'r' | b't')) {
            kept -= 1;
            i += 1;
        }
    }
    out.truncate(kept);
    Cow::Owned(out)
}

/// Where the last `longest - 1` kept bytes of `text` begin (with the whitespace among
/// them, counted generously: an escape's backslash counts as kept): no secret of at most
/// `longest` kept bytes that the text does not hold whole can begin before.
fn window_start(text: &str, longest: usize) -> usize {
    if longest <= 1 {
        return text.len();
    }
    let bytes = text.as_bytes();
    let mut kept = 0;
    let mut start = bytes.len();
    while start > 0 && kept < longest - 1 {
        start -= 1;
        if !blank(bytes[start]) {
            kept += 1;
        }
    }
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    start
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    use super::*;

    const KEY: &str = "sk-test-matcher-9f8e7d6c5b4a";

    fn matcher() -> Matcher {
        Matcher::build(&[
            ("OPENAI_API_KEY".into(), KEY.into()),
            ("SHORT".into(), "sk-1".into()),
            ("PREFIX".into(), "sk-test-matcher".into()),
        ])
    }

    #[test]
    fn plain_split_and_encoded_copies_are_replaced() {
        let m = matcher();
        assert_eq!(
            m.redact(&format!("key={KEY}.")),
            "key=[redacted OPENAI_API_KEY]."
        );
        let (a, b) = KEY.split_at(11);
        assert_eq!(
            m.redact(&format!("one {a}\n{b} two")),
            "one [redacted OPENAI_API_KEY] two"
        );
        assert_eq!(
            m.redact(&format!("{{\"cmd\":\"{a}\\n  {b}\"}}")),
            "{\"cmd\":\"[redacted OPENAI_API_KEY]\"}"
        );
        let b64 = STANDARD.encode(KEY);
        assert_eq!(
            m.redact(&format!("<{b64}>")),
            "<[redacted OPENAI_API_KEY, base64]>"
        );
        let inner = URL_SAFE_NO_PAD.encode(format!("Bearer {KEY} and more"));
        let out = m.redact(&inner);
        assert!(out.contains("[redacted OPENAI_API_KEY, base64]"), "{out}");
        let hex: String = KEY.bytes().map(|b| format!("{b:02X}")).collect();
        assert_eq!(m.redact(&hex), "[redacted OPENAI_API_KEY, hex]");
    }

    #[test]
    fn the_longest_wins_short_values_are_ignored_and_clean_text_is_borrowed() {
        let m = matcher();
        assert_eq!(
            m.redact(&format!("{KEY} sk-test-matcher sk-1")),
            "[redacted OPENAI_API_KEY] [redacted PREFIX] sk-1"
        );
        assert!(matches!(m.redact("nothing to see"), Cow::Borrowed(_)));
        assert!(matches!(Matcher::default().redact(KEY), Cow::Borrowed(_)));
    }

    #[test]
    fn text_around_the_secret_keeps_its_unicode() {
        let m = matcher();
        assert_eq!(
            m.redact(&format!("é→{KEY}←ü")),
            "é→[redacted OPENAI_API_KEY]←ü"
        );
    }

    #[test]
    fn squeezing_leaves_out_blanks_and_their_json_escapes_as_the_walk_back_counts() {
        let text = b"a b\tc\r\nd\\ne\\\\nf\\x\\";
        let squeezed = squeeze(text);
        assert_eq!(&*squeezed, b"abcde\\f\\x\\");
        let every: Vec<usize> = (0..squeezed.len()).collect();
        let walked: Vec<u8> = originals(text, &every).iter().map(|&i| text[i]).collect();
        assert_eq!(walked, squeezed.to_vec());
        assert_eq!(originals(text, &[1, 1, 4]), vec![2, 2, 10]);
        assert!(matches!(squeeze(b"no-blanks"), Cow::Borrowed(_)));
    }

    #[test]
    fn the_window_is_the_longest_pattern_less_one_kept_byte() {
        assert_eq!(window_start("abcdef", 3), 4);
        assert_eq!(window_start("abc d\nef", 3), 6);
        assert_eq!(window_start("ab", 10), 0);
        assert_eq!(window_start("abc", 0), 3);
        assert_eq!(window_start("aé", 2), 1);
    }

    #[test]
    fn a_stream_holds_back_only_what_could_begin_a_secret() {
        let m = matcher();
        assert_eq!(m.tail_start("nothing secret here."), 20);
        let text = format!("the key: {}", &KEY[..6]);
        assert_eq!(m.tail_start(&text), 9, "{text}");
        let text = format!("the key: {}\n{}", &KEY[..4], &KEY[4..8]);
        assert_eq!(m.tail_start(&text), 9, "{text}");
        assert_eq!(Matcher::default().tail_start("sk-test"), 7);
    }
}
