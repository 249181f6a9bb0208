// <lb-verdict>: how a task's turn ended, with the completion report when it is done: the
// summary, each delivered file (a download link) and the evidence the agent checked.

import { h, clock } from '../lib/dom.js';
import { render } from '../lib/markdown.js';

const LABEL = {
  done: 'Done', answer: 'Answered', blocked: 'Blocked', failed: 'Failed', cancelled: 'Stopped',
  budget_exhausted: 'Out of rounds', waiting: 'Done (waiting)',
};

export function fileUrl(task, path) {
  return `/api/tasks/${encodeURIComponent(task)}/files/${path.split('/').map(encodeURIComponent).join('/')}`;
}

class Verdict extends HTMLElement {
  set item(item) {
    this.className = `item verdict ${item.verdict}`;
    const report = item.report;
    const parts = [h('div.verdict-head', {}, h('strong', {}, LABEL[item.verdict] ?? item.verdict), h('span.meta', {}, ` · ${clock(item.at_ms)}`))];
    if (report) {
      parts.push(h('div.markdown', {}, render(report.summary)));
      if (report.files.length) {
        parts.push(h('ul.files', {}, report.files.map((f) =>
          h('li', {}, h('a', { href: fileUrl(item.task, f), download: f.split('/').pop() }, f)))));
      }
      parts.push(h('details.evidence', {}, h('summary', {}, 'Evidence'), h('div.markdown', {}, render(report.evidence))));
    } else if (item.message) {
      parts.push(h('div.markdown', {}, render(item.message)));
    }
    this.replaceChildren(...parts);
  }
}
customElements.define('lb-verdict', Verdict);
