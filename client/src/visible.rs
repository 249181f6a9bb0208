//! The one rule that makes a model's text visible, character for character, to a person who
//! decides on it (an approval): nothing it contains may hide, move or restyle other text.
//!
//! - A newline ends the line: [`lines`] puts each line on its own; [`line`] shows it as `\n`.
//! - Tab, carriage return and every other control character (C0, DEL, C1) is shown as an
//!   escape: `\t`, `\r`, `\x1b`, `\u{9b}`; so no escape sequence reaches the terminal, and a
//!   `\r` cannot rewind a line to write over what came before.
//! - Characters that are invisible or reorder text (bidi embeddings, overrides and isolates,
//!   zero-width spaces and joiners, the BOM, tag characters, variation selectors, soft
//!   hyphen, fillers; "Trojan Source") and spaces other than U+0020 are shown as their code
//!   point, `\u{202e}`.
//! - Spaces at the end of a line are shown as `\x20`: they are otherwise invisible.
//!
//! Everything else is shown as itself (a backslash too: commands are full of them; an escape
//! this module writes is told apart by [`Piece::Escape`], which a terminal shows in reverse
//! video). `web/lib/visible.js` applies the same rule in the dashboard; a browser test checks
//! that the two agree.

/// A run of text as shown: as itself, or an escape standing for one character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    Text(String),
    Escape(String),
}

/// How `c` is shown when it is not shown as itself.
fn escape(c: char) -> Option<String> {
    match c {
        '\t' => Some("\\t".to_owned()),
        '\r' => Some("\\r".to_owned()),
        '\n' => Some("\\n".to_owned()),
        '\u{0}'..='\u{1f}' | '\u{7f}' => Some(format!("\\x{:02x}", u32::from(c))),
        c if c.is_control() || hidden(c) => Some(format!("\\u{{{:x}}}", u32::from(c))),
        _ => None,
    }
}

/// Invisible characters, characters that reorder text, and spaces that are not U+0020.
fn hidden(c: char) -> bool {
    matches!(c,
        '\u{a0}' | '\u{ad}' | '\u{34f}' | '\u{61c}' | '\u{115f}' | '\u{1160}' | '\u{1680}'
        | '\u{17b4}' | '\u{17b5}' | '\u{180b}'..='\u{180f}' | '\u{2000}'..='\u{200f}'
        | '\u{2028}'..='\u{202f}' | '\u{205f}'..='\u{206f}' | '\u{3000}' | '\u{3164}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}' | '\u{fff9}'..='\u{fffb}'
        | '\u{600}'..='\u{605}' | '\u{6dd}' | '\u{70f}' | '\u{8e2}' | '\u{110bd}' | '\u{110cd}'
        | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}' | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e007f}' | '\u{e0100}'..='\u{e01ef}')
}

/// `text` as pieces, newlines shown as `\n` (one line).
pub fn pieces(text: &str) -> Vec<Piece> {
    let trailing = text.len() - text.trim_end_matches(' ').len();
    let (body, spaces) = text.split_at(text.len() - trailing);
    let mut out: Vec<Piece> = Vec::new();
    let mut push = |piece: Piece| match (out.last_mut(), piece) {
        (Some(Piece::Text(last)), Piece::Text(more)) => last.push_str(&more),
        (_, piece) => out.push(piece),
    };
    for c in body.chars() {
        match escape(c) {
            Some(shown) => push(Piece::Escape(shown)),
            None => push(Piece::Text(c.to_string())),
        }
    }
    for _ in spaces.chars() {
        push(Piece::Escape("\\x20".to_owned()));
    }
    out
}

/// `text` on one line, every hidden character shown.
pub fn line(text: &str) -> String {
    styled(text, |escape| escape.to_owned())
}

/// [`line`], with each escape passed through `mark` (a terminal's reverse video, say).
pub fn styled(text: &str, mark: impl Fn(&str) -> String) -> String {
    pieces(text)
        .into_iter()
        .map(|piece| match piece {
            Piece::Text(text) => text,
            Piece::Escape(escape) => mark(&escape),
        })
        .collect()
}

/// `text`'s lines, split at each `\n` (a final newline ends the last line, it does not start
/// an empty one); each still to be shown through [`line`] or [`styled`].
pub fn lines(text: &str) -> Vec<&str> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    text.split('\n').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_never_reach_the_terminal() {
        let shown = line("ls\u{1b}[2K\u{1b}]0;title\u{7}\rrm -rf ~\t#\u{9b}31m\u{7f}\u{0}");
        assert_eq!(
            shown,
            "ls\\x1b[2K\\x1b]0;title\\x07\\rrm -rf ~\\t#\\u{9b}31m\\x7f\\x00"
        );
        assert!(!shown.chars().any(char::is_control));
    }

    #[test]
    fn trojan_source_characters_show_as_code_points() {
        assert_eq!(
            line("echo \u{202e}txt.exe\u{202c} \u{200b}x\u{2066}\u{feff}\u{e0041}"),
            "echo \\u{202e}txt.exe\\u{202c} \\u{200b}x\\u{2066}\\u{feff}\\u{e0041}"
        );
        assert_eq!(line("a\u{a0}b\u{3000}c"), "a\\u{a0}b\\u{3000}c");
        // Ordinary non-ASCII text stays as it is.
        assert_eq!(line("café → 東京"), "café → 東京");
    }

    #[test]
    fn newlines_split_lines_and_trailing_spaces_show() {
        assert_eq!(lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(lines("a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(lines(""), vec![""]);
        assert_eq!(line("a\nb"), "a\\nb");
        assert_eq!(line("ls  "), "ls\\x20\\x20");
        assert_eq!(line(" a b "), " a b\\x20");
    }

    #[test]
    fn escapes_can_be_marked_apart_from_literal_backslashes() {
        let marked = styled("printf '\\x1b' \u{1b}", |e| format!("[{e}]"));
        assert_eq!(marked, "printf '\\x1b' [\\x1b]");
        assert_eq!(
            pieces("a\u{1b}b"),
            vec![
                Piece::Text("a".into()),
                Piece::Escape("\\x1b".into()),
                Piece::Text("b".into())
            ]
        );
    }
}
