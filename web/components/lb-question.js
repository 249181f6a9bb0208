// <lb-question>: the agent asks the person. A group labelled by the question, a button per
// option and a free-text answer; for a takeover, "Open the computer" and "Done". Once
// answered (or no longer asked) it shows the answer instead of the controls. A call waiting
// for approval shows exactly what will run instead of the model's words: the whole command
// (each line numbered, every hidden character visible, lib/visible.js), where it runs, the
// file and its diff, or the URL. A long block shows its first SHOWN_LINES lines (or
// SHOWN_CHARS characters) and a button that says how much is hidden and shows it all.

import { h } from '../lib/dom.js';
import { post } from '../lib/api.js';
import { store } from '../lib/store.js';
import { lines, visibleLine, visibleNodes } from '../lib/visible.js';

const SHOWN_LINES = 20;
const SHOWN_CHARS = 4000;

let ids = 0;

class Question extends HTMLElement {
  set item(item) {
    this.q = item;
    this.render();
  }

  connectedCallback() {
    this.onState ??= () => this.q && this.render();
    store.addEventListener('state', this.onState);
  }

  disconnectedCallback() { store.removeEventListener('state', this.onState); }

  async answer(body) {
    this.error = null;
    try {
      await post(`/api/tasks/${encodeURIComponent(this.q.task)}/answer`, body);
      this.sent = body.text ?? this.q.options[body.option - 1];
      store.refresh().catch(() => {});
    } catch (error) { this.error = error.message; }
    this.render();
  }

  render() {
    const q = this.q;
    const open = store.questions.get(q.task)?.call_id === q.call_id && !this.sent;
    this.className = `item question${q.takeover ? ' takeover' : ''}${open ? ' open' : ''}`;
    const id = this.labelId ??= `question-${++ids}`;
    const who = this.dataset.showAgent && q.agent ? `${q.agent} asks` : q.takeover ? `takeover: ${q.takeover}` : 'question';
    const group = h('div.card', { role: 'group', 'aria-labelledby': id },
      h('div.meta', {}, who),
      h('p.question-text', { id }, q.approval ? approvalTitle(q.approval) : q.question));
    if (q.approval) {
      this.expanded ??= new Set();
      group.append(approvalDetails(q.approval, this.expanded, () => this.render()));
    }
    if (open) {
      const controls = h('div.options');
      if (q.takeover) {
        controls.append(
          h('button', { type: 'button', onclick: () => document.querySelector('lb-computer')?.open() }, 'Open the computer'),
          h('button.primary', { type: 'button', onclick: () => this.answer({ text: 'Done' }) }, 'Done'));
      }
      q.options.forEach((option, i) => controls.append(
        h('button', { type: 'button', onclick: () => this.answer({ option: i + 1 }) }, option)));
      const input = h('input', { type: 'text', 'aria-label': 'Your answer', placeholder: q.options.length ? 'Or answer in words…' : 'Your answer…' });
      const form = h('form.answer', {
        onsubmit: (e) => { e.preventDefault(); if (input.value.trim()) this.answer({ text: input.value.trim() }); },
      }, input, h('button', {}, 'Answer'));
      group.append(controls, form);
      if (this.error) group.append(h('p.error', { role: 'alert' }, this.error));
    } else {
      const answer = q.answer ?? this.sent;
      group.append(h('p.answered', {}, answer ? `Answered: ${answer.replace(/^The person answered: /, '')}` : 'No longer asked'));
    }
    this.replaceChildren(group);
  }
}
/** The label of an approval: the tool and its effect, nothing the model wrote. */
function approvalTitle(a) {
  return `Approve ${visibleLine(a.tool)} (${a.effect})?`;
}

/** What an approval will do, as the daemon previewed it; `expanded` names the blocks shown
 * whole (kept by the element across renders), `rerender` redraws after a change. */
function approvalDetails(a, expanded, rerender) {
  const show = (field) => () => { expanded.add(field); rerender(); };
  const field = (label, value) => h('p.approval-field', {}, h('span.label', {}, `${label} `),
    visibleNodes(value));
  const out = h('div.approval');
  if (a.command != null) {
    out.append(...block('command', a.command, true, expanded.has('command'), show('command')),
      field('in', a.workdir ?? '.'));
  }
  if (a.url != null) out.append(field('URL', a.url));
  if (a.path != null) out.append(field('file', a.path));
  if (a.diff != null) out.append(...block('diff', a.diff, false, expanded.has('diff'), show('diff')));
  if (a.command == null && a.url == null && a.path == null) {
    out.append(...block('arguments', a.arguments, false, expanded.has('arguments'), show('arguments')));
  }
  return out;
}

/** A block of text line by line (numbered for a command), every hidden character visible;
 * unless `whole`, within SHOWN_LINES and SHOWN_CHARS, then a button that shows the rest. */
function block(name, text, numbered, whole, showAll) {
  const all = lines(text);
  const rows = [];
  let budget = whole ? Infinity : SHOWN_CHARS;
  let shownChars = 0;
  for (const [i, line] of all.entries()) {
    if (!whole && (i === SHOWN_LINES || budget === 0)) break;
    let chars = [...line];
    const cut = chars.length > budget;
    if (cut) chars = chars.slice(0, budget);
    budget -= chars.length;
    shownChars += chars.length;
    rows.push(h('span.line', { dataset: numbered ? { n: String(i + 1) } : {} },
      visibleNodes(chars.join('')), cut ? h('span.cut', {}, '…') : null));
  }
  const total = all.reduce((n, line) => n + [...line].length, 0);
  const label = `${name}${all.length > 1 ? ` · ${all.length} lines` : ''}`;
  const out = [h('div.meta', {}, label),
    h(`pre.approval-detail${numbered ? '.numbered' : ''}`, { dataset: { field: name } }, rows)];
  if (shownChars < total) {
    const moreLines = all.length - rows.length;
    const hidden = `${total - shownChars} characters${moreLines ? `, ${moreLines} more lines` : ''} hidden`;
    out.push(h('button.show-all', { type: 'button', onclick: showAll },
      all.length > 1 ? `Show all ${all.length} lines (${hidden})` : `Show all ${total} characters (${hidden})`));
  }
  return out;
}

customElements.define('lb-question', Question);
