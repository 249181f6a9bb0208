// A small Markdown renderer for agents' text, safe by construction: it builds DOM nodes and
// sets only text content, so no HTML in the text ever becomes markup (a <script> or an
// <img onerror> shows as the characters it is). Links keep only http:, https: and mailto:
// targets; anything else (javascript:, data:, ...) renders as plain text.
//
// Covered: paragraphs, line breaks, # headings, - / 1. lists, > quotes, ``` code blocks,
// `code`, **bold**, *italic* / _italic_, [text](url), and bare http(s) URLs.

const SAFE_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** The URL as a string if it is safe to link to, else null. */
export function safeUrl(href) {
  try {
    const url = new URL(href, location.href);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : null;
  } catch { return null; }
}

export function render(text) {
  const out = document.createDocumentFragment();
  const lines = String(text ?? '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)/);
    if (fence) {
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) code.push(lines[i++]);
      i += 1;
      const pre = document.createElement('pre');
      const el = document.createElement('code');
      el.textContent = code.join('\n');
      pre.append(el);
      out.append(pre);
      continue;
    }
    if (!line.trim()) { i += 1; continue; }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      const el = document.createElement(`h${Math.min(6, heading[1].length + 2)}`);
      inline(el, heading[2]);
      out.append(el);
      i += 1;
      continue;
    }
    const listKind = (l) => (/^\s*[-*+]\s+/.test(l) ? 'ul' : /^\s*\d+[.)]\s+/.test(l) ? 'ol' : null);
    const kind = listKind(line);
    if (kind) {
      const list = document.createElement(kind);
      while (i < lines.length && listKind(lines[i]) === kind) {
        const li = document.createElement('li');
        inline(li, lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ''));
        list.append(li);
        i += 1;
      }
      out.append(list);
      continue;
    }
    if (line.startsWith('>')) {
      const quote = [];
      while (i < lines.length && lines[i].startsWith('>')) quote.push(lines[i++].replace(/^>\s?/, ''));
      const el = document.createElement('blockquote');
      el.append(render(quote.join('\n')));
      out.append(el);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !/^(\s*(```|~~~)|#{1,6}\s|>)/.test(lines[i]) && !listKind(lines[i])) {
      para.push(lines[i++]);
    }
    const p = document.createElement('p');
    para.forEach((l, n) => { if (n) p.append(document.createElement('br')); inline(p, l); });
    out.append(p);
  }
  return out;
}

// Inline spans, leftmost first: code, links, bold, italic, bare URLs.
const INLINE = /(`+)([^`]+?)\1|\[([^\]]+)\]\(([^()\s]+)\)|\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*)\*|(?<!\w)_([^_\s][^_]*)_(?!\w)|(https?:\/\/[^\s<>()]+[^\s<>().,;:!?'"])/g;

function inline(parent, text) {
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) {
      const code = document.createElement('code');
      code.textContent = m[2];
      parent.append(code);
    } else if (m[3] !== undefined) {
      const href = safeUrl(m[4]);
      if (href) parent.append(link(href, m[3]));
      else parent.append(m[0]);
    } else if (m[5] !== undefined) {
      const b = document.createElement('strong');
      inline(b, m[5]);
      parent.append(b);
    } else if (m[6] !== undefined || m[7] !== undefined) {
      const em = document.createElement('em');
      inline(em, m[6] ?? m[7]);
      parent.append(em);
    } else if (m[8] !== undefined) {
      const href = safeUrl(m[8]);
      parent.append(href ? link(href, m[8]) : m[8]);
    }
  }
  if (last < text.length) parent.append(text.slice(last));
}

function link(href, label) {
  const a = document.createElement('a');
  a.href = href;
  a.rel = 'noopener noreferrer nofollow';
  a.target = '_blank';
  inline(a, label);
  return a;
}
