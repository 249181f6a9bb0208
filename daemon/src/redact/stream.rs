//! Redaction of text that arrives in pieces (the model's streamed deltas): a secret may be
//! split across two pieces, each harmless alone. [`Stream`] holds back the end of what it was
//! given from the first place, within the last (longest pattern − 1) non-blank bytes, where
//! the rest could still grow into a secret (it is the beginning of a pattern), plus any secret
//! found whole that the cut would split; everything before is redacted and released. So what
//! it releases, joined, is the redacted whole; nothing released can be the beginning of a
//! secret that the next piece completes; and ordinary text, which begins no pattern, is
//! released at once (the person's screen does not lag behind the model).

use super::current;

/// Text held back between pieces. Not `Debug`-printed: what it holds may be the beginning
/// of a secret (the impl shows its length).
#[derive(Default)]
pub struct Stream {
    held: String,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("held_bytes", &self.held.len())
            .finish()
    }
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Takes the next piece; returns what may be released now, redacted (maybe empty).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let matcher = current();
        let mut cut = matcher.tail_start(&self.held);
        if let Some(start) = matcher.straddling(&self.held, cut) {
            cut = start;
        }
        let rest = self.held.split_off(cut);
        let ready = std::mem::replace(&mut self.held, rest);
        matcher.redact(&ready).into_owned()
    }

    /// The end of the stream: everything held, redacted.
    pub fn finish(&mut self) -> String {
        let held = std::mem::take(&mut self.held);
        current().redact(&held).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-test-stream-0a1b2c3d4e5f";

    #[test]
    fn ordinary_text_is_released_at_once() {
        super::super::register("STREAM_KEY", KEY);
        // Each piece ends in a character no secret of this process holds (the registry is
        // shared by the tests running beside this one), so none can be a secret's beginning.
        let mut stream = Stream::new();
        assert_eq!(stream.push("Appending step 7."), "Appending step 7.");
        assert_eq!(stream.push(" Now step 8."), " Now step 8.");
        assert_eq!(stream.push(" sk-te"), " ");
        assert_eq!(stream.finish(), "sk-te");
    }

    #[test]
    fn a_whole_secret_whose_end_begins_another_is_not_cut_in_two() {
        // The first ends in 9, the second begins with it: at the end of the first, its last
        // character is held back (it could begin the second), but the first goes out whole.
        super::super::register("FIRST_KEY", "sk-alpha-0123456789");
        super::super::register("SECOND_KEY", "9876-beta-secret-x");
        for size in 1..=8 {
            let text = "x sk-alpha-0123456789, y";
            let mut stream = Stream::new();
            let mut out = String::new();
            for piece in text.as_bytes().chunks(size) {
                let piece = stream.push(std::str::from_utf8(piece).unwrap_or_default());
                assert!(!piece.contains("sk-alpha"), "{size}: {piece}");
                out.push_str(&piece);
            }
            out.push_str(&stream.finish());
            assert_eq!(out, "x [redacted FIRST_KEY], y", "pieces of {size}");
        }
    }

    #[test]
    fn a_secret_split_across_pieces_never_leaves_in_part() {
        super::super::register("STREAM_KEY", KEY);
        let text = format!("The key is {KEY}, and again: {KEY}. Done.");
        for size in 1..=text.len() {
            let mut stream = Stream::new();
            let mut out = String::new();
            let mut at = 0;
            while at < text.len() {
                let end = (at + size).min(text.len());
                let piece = stream.push(&text[at..end]);
                assert!(!piece.contains("sk-test-stream"), "{size}: {piece}");
                out.push_str(&piece);
                at = end;
            }
            out.push_str(&stream.finish());
            assert_eq!(
                out, "The key is [redacted STREAM_KEY], and again: [redacted STREAM_KEY]. Done.",
                "pieces of {size}"
            );
        }
    }
}
