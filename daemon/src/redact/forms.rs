//! The forms a secret takes in text that [`super::Matcher`] looks for: the value itself, its
//! base64 (standard and URL-safe alphabets, with and without padding, and the part of it that
//! stays the same wherever the secret sits inside a longer base64 string) and its hex (lower
//! and upper case). Pure: bytes in, patterns out.
//!
//! Base64 turns three bytes into four characters, so the characters of a secret encoded
//! inside a longer string depend on where it starts modulo 3. For each of the three
//! alignments, the characters whose six bits all come from the secret are the same whatever
//! surrounds it: those are the patterns (the one or two characters at each end that mix in
//! neighbouring bytes stay, and say at most a few bits of the secret).

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

/// How a pattern encodes its secret, said in the replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Plain,
    Base64,
    Hex,
}

impl Form {
    /// The words after the secret's name in `[redacted NAME …]`.
    pub(super) fn suffix(self) -> &'static str {
        match self {
            Form::Plain => "",
            Form::Base64 => ", base64",
            Form::Hex => ", hex",
        }
    }
}

/// Every pattern for `value`, without duplicates (the two alphabets agree when the encoding
/// has no `+` or `/`).
pub(super) fn of(value: &[u8]) -> Vec<(Vec<u8>, Form)> {
    let mut out: Vec<(Vec<u8>, Form)> = vec![(value.to_vec(), Form::Plain)];
    let mut add = |bytes: Vec<u8>, form: Form| {
        if !bytes.is_empty() && !out.iter().any(|(b, _)| *b == bytes) {
            out.push((bytes, form));
        }
    };
    for engine in [&STANDARD, &URL_SAFE] {
        add(engine.encode(value).into_bytes(), Form::Base64);
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        add(engine.encode(value).into_bytes(), Form::Base64);
        for offset in 0..3 {
            add(aligned(engine, value, offset), Form::Base64);
        }
    }
    let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
    add(hex.to_ascii_uppercase().into_bytes(), Form::Hex);
    add(hex.into_bytes(), Form::Hex);
    out
}

/// The base64 characters (no padding) that only `value`'s bits decide when `offset` bytes
/// precede it: characters `ceil(8·offset / 6)` to `floor(8·(offset + len) / 6)` of the
/// encoding of `offset` zero bytes followed by `value`.
fn aligned(engine: &impl base64::Engine, value: &[u8], offset: usize) -> Vec<u8> {
    let mut input = vec![0u8; offset];
    input.extend_from_slice(value);
    let encoded = engine.encode(&input).into_bytes();
    let start = (8 * offset).div_ceil(6);
    let end = (8 * (offset + value.len()) / 6).min(encoded.len());
    encoded
        .get(start..end)
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"sk-test-\xfb\xff-forms-0123456789";

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }

    #[test]
    fn every_alignment_inside_a_longer_base64_string_contains_a_pattern() {
        let patterns = of(SECRET);
        for engine in [&STANDARD, &URL_SAFE, &STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            for before in 0..6 {
                for after in 0..4 {
                    let mut input = b"prefix".get(..before).unwrap_or_default().to_vec();
                    input.extend_from_slice(SECRET);
                    input.extend_from_slice(&b"tail"[..after]);
                    let encoded = engine.encode(&input).into_bytes();
                    assert!(
                        patterns
                            .iter()
                            .any(|(p, f)| *f == Form::Base64 && contains(&encoded, p)),
                        "{before} bytes before, {after} after: {}",
                        String::from_utf8_lossy(&encoded)
                    );
                }
            }
        }
    }

    #[test]
    fn the_alphabets_differ_where_the_secret_makes_plus_and_slash() {
        let patterns = of(SECRET);
        let standard = STANDARD.encode(SECRET);
        assert!(
            standard.contains('+') || standard.contains('/'),
            "{standard}"
        );
        assert!(patterns.iter().any(|(p, _)| *p == standard.as_bytes()));
        assert!(
            patterns
                .iter()
                .any(|(p, _)| *p == URL_SAFE.encode(SECRET).as_bytes())
        );
        assert!(
            patterns
                .iter()
                .any(|(p, _)| *p == b"736b2d746573742dfbff2d666f726d732d30313233343536373839")
        );
        assert!(
            patterns
                .iter()
                .any(|(p, _)| *p == b"736B2D746573742DFBFF2D666F726D732D30313233343536373839")
        );
    }

    #[test]
    fn patterns_are_unique_and_the_plain_value_is_first() {
        let patterns = of(b"abcdefghijkl");
        assert_eq!(patterns[0], (b"abcdefghijkl".to_vec(), Form::Plain));
        for (i, (p, _)) in patterns.iter().enumerate() {
            assert!(!patterns[..i].iter().any(|(q, _)| q == p), "{p:?} twice");
        }
    }
}
