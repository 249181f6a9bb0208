//! Redaction of text that arrives in pieces (the model's streamed deltas): a secret may be
//! split across two pieces, each harmless alone. [`Stream`] holds back the end of what it was
//! given, as long as the longest pattern less one byte (whitespace not counted), plus any
//! secret that starts before that and is not over yet; everything before is redacted and
//! released. So what it releases, joined, is the redacted whole, and nothing released can be
//! the beginning of a secret that the next piece completes.

use super::current;

/// Text held back between pieces.
#[derive(Debug, Default)]
pub struct Stream {
    held: String,
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Takes the next piece; returns what may be released now, redacted (maybe empty).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let matcher = current();
        let mut cut = super::matcher::tail_start(&self.held, matcher.longest());
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
