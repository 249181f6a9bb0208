// The one rule that makes a model's text visible, character for character, to a person who
// decides on it (an approval): nothing in it may hide, move or restyle other text. The same
// rule as client/src/visible.rs (a browser test checks that the two agree on tricky text):
// - a newline ends the line (lines()); within a line it shows as \n;
// - tab, carriage return and every other control character (C0, DEL, C1) shows as an escape:
//   \t, \r, \x1b, \u{9b};
// - invisible characters and characters that reorder text (bidi embeddings, overrides and
//   isolates, zero-width spaces and joiners, the BOM, tags, variation selectors, the soft
//   hyphen, fillers: "Trojan Source") and spaces other than U+0020 show as their code point;
// - spaces at the end of a line show as \x20.
// Everything else shows as itself. visibleNodes() marks each escape (span.ctl), so it stands
// apart from a literal backslash in the text.

import { h } from './dom.js';

const HIDDEN = /[\u00a0\u00ad\u034f\u061c\u115f\u1160\u1680\u17b4\u17b5\u180b-\u180f\u2000-\u200f\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\u0600-\u0605\u06dd\u070f\u08e2\u{110bd}\u{110cd}\u{13430}-\u{1343f}\u{1bca0}-\u{1bca3}\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/u;

/** How the character `c` shows when not as itself, or null. */
function escapeChar(c) {
  if (c === '\t') return '\\t';
  if (c === '\r') return '\\r';
  if (c === '\n') return '\\n';
  const cp = c.codePointAt(0);
  if (cp < 0x20 || cp === 0x7f) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if ((cp >= 0x80 && cp < 0xa0) || HIDDEN.test(c)) return `\\u{${cp.toString(16)}}`;
  return null;
}

/** `text` as pieces on one line: [{text}] shown as itself, [{escape}] for one character. */
export function pieces(text) {
  const body = text.replace(/ +$/, '');
  const out = [];
  const push = (piece) => {
    const last = out[out.length - 1];
    if (piece.text !== undefined && last?.text !== undefined) last.text += piece.text;
    else out.push(piece);
  };
  for (const c of body) {
    const escape = escapeChar(c);
    push(escape === null ? { text: c } : { escape });
  }
  for (let i = body.length; i < text.length; i++) push({ escape: '\\x20' });
  return out;
}

/** `text` on one line, every hidden character shown. */
export function visibleLine(text) {
  return pieces(text).map((p) => p.text ?? p.escape).join('');
}

/** `text`'s lines, split at each \n (a final newline ends the last line). */
export function lines(text) {
  return (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
}

/** `text` on one line as DOM nodes: text, and a span.ctl for each escape. */
export function visibleNodes(text) {
  return pieces(text).map((p) => p.text ?? h('span.ctl', {
    title: `hidden character ${p.escape}`,
  }, p.escape));
}
