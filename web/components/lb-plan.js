// <lb-plan>: a task's plan as a checklist (done, in progress, to do).

import { h } from '../lib/dom.js';

const MARK = { completed: '✓', in_progress: '▸', pending: '○' };
const SAY = { completed: 'done', in_progress: 'in progress', pending: 'to do' };

class Plan extends HTMLElement {
  set item(item) {
    this.className = 'item plan';
    this.dataset.task = item.task;
    this.replaceChildren(
      h('div.plan-title', {}, 'Plan'),
      h('ul.checklist', {}, item.steps.map((s) => h('li', { dataset: { status: s.status } },
        h('span.mark', { 'aria-hidden': 'true' }, MARK[s.status] ?? '○'),
        h('span.visually-hidden', {}, `${SAY[s.status] ?? s.status}: `), s.step))),
      ...(item.explanation ? [h('div.meta', {}, item.explanation)] : []));
  }
}
customElements.define('lb-plan', Plan);
