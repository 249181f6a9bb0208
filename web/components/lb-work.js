// <lb-work>: a run of tool calls folded into one line ("ran 7 commands, edited 2 files,
// 40 s") that opens to each call, its result and its output. The steps are only built when
// the line is opened, so a long history costs one element per group.

import { h, duration, plural } from '../lib/dom.js';

const PHRASES = [
  ['command', (n) => `ran ${plural(n, 'command')}`],
  ['workspace_write', (n) => `edited ${plural(n, 'file')}`],
  ['read', (n) => `read ${plural(n, 'time')}`],
  ['network', (n) => plural(n, 'web request')],
  ['control', (n) => plural(n, 'other step')],
  ['person', (n) => plural(n, 'question')],
];

export function summary(group) {
  const parts = PHRASES.filter(([k]) => group.counts[k]).map(([k, say]) => say(group.counts[k]));
  if (!parts.length) {
    const ended = group.steps.filter((s) => s.name === 'command_ended').length;
    parts.push(ended ? `${plural(ended, 'background command')} ended` : 'background work');
  }
  const took = group.last_at_ms - group.at_ms;
  if (took >= 1000) parts.push(duration(took));
  return parts.join(', ');
}

class Work extends HTMLElement {
  set item(group) {
    this.group = group;
    this.className = 'item work';
    if (!this.details) {
      this.line = h('summary');
      this.steps = h('ol.steps');
      this.details = h('details', { ontoggle: () => this.details.open && this.fill() }, this.line, this.steps);
      this.append(this.details);
    }
    this.line.textContent = summary(group);
    if (this.details.open) this.fill();
  }

  fill() {
    const g = this.group;
    const steps = g.steps.map((s) => {
      const label = s.name === 'command_started' ? `background: ${s.arguments}`
        : s.name === 'command_ended' ? `background ${s.id}: ${s.output}` : s.name;
      return h('li', { dataset: { status: s.status ?? 'running' } },
        h('div.step-head', {}, h('code', {}, label), s.status ? h('span.status', {}, s.status) : null),
        s.arguments && !s.name.startsWith('command_') ? h('pre.args', {}, s.arguments) : null,
        s.output && s.name !== 'command_ended' ? h('pre.output', {}, s.output) : null);
    });
    if (g.omitted) steps.unshift(h('li.omitted', {}, `${plural(g.omitted, 'earlier step')} not shown`));
    this.steps.replaceChildren(...steps);
  }
}
customElements.define('lb-work', Work);
