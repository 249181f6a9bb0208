// <lb-question>: the agent asks the person. A group labelled by the question, a button per
// option and a free-text answer; for a takeover, "Open the computer" and "Done". Once
// answered (or no longer asked) it shows the answer instead of the controls. A call waiting
// for approval also shows exactly what will run: the command, the file's diff, or the URL.

import { h } from '../lib/dom.js';
import { post } from '../lib/api.js';
import { store } from '../lib/store.js';

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
      h('p.question-text', { id }, q.question));
    if (q.approval) group.append(approvalDetails(q.approval));
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
/// What an approval will do, as the daemon previewed it.
function approvalDetails(a) {
  const what = a.command != null ? `$ ${a.command}${a.workdir && a.workdir !== '.' ? `   (in ${a.workdir})` : ''}`
    : a.diff != null ? a.diff
    : a.url != null ? a.url
    : a.arguments;
  return h('div.approval', {},
    h('div.meta', {}, `${a.tool} · ${a.effect}${a.path ? ` · ${a.path}` : ''}`),
    h('pre.approval-detail', {}, what));
}

customElements.define('lb-question', Question);
