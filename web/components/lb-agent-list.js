// <lb-agent-list>: the status board, one button per agent (name, state, alive dot, plan
// step, last message, a badge while it waits for the person). Buttons are kept and updated
// in place, never rebuilt, so an update never lands under a finger mid-tap.

import { h, ago } from '../lib/dom.js';
import { store, liveness, STATE_LABELS } from '../lib/store.js';

class AgentList extends HTMLElement {
  connectedCallback() {
    this.rows = new Map();
    this.list = h('ul.agents');
    this.append(this.list);
    store.addEventListener('state', () => this.render());
    store.addEventListener('select', () => this.render());
    // Leases age without events: re-judge the dots while the page is visible.
    setInterval(() => { if (!document.hidden) this.render(); }, 5000);
    this.render();
  }

  row(name) {
    let row = this.rows.get(name);
    if (!row) {
      const parts = {
        dot: h('span.dot', { 'aria-hidden': 'true' }),
        name: h('span.name', {}, name),
        state: h('span.state'),
        badge: h('span.badge', {}, 'needs you'),
        step: h('span.step'),
        last: h('span.last'),
      };
      const button = h('button.agent', { type: 'button', dataset: { name }, onclick: () => store.select(name) },
        h('span.line', {}, parts.dot, parts.name, parts.state, parts.badge), parts.step, parts.last);
      row = { li: h('li', {}, button), button, ...parts };
      this.rows.set(name, row);
    }
    return row;
  }

  render() {
    const now = store.now();
    let before = null;
    for (const agent of [...store.agents.values()].reverse()) {
      const row = this.row(agent.name);
      const live = liveness(agent, now);
      row.dot.className = `dot ${live}`;
      let state = STATE_LABELS[live] ?? live;
      if (live === 'alive' && agent.heartbeat_at_ms) state += ` · beat ${ago(agent.heartbeat_at_ms, now)}`;
      row.state.textContent = state;
      row.badge.hidden = !agent.waiting;
      row.step.textContent = agent.plan_step ? `▸ ${agent.plan_step}` : '';
      row.step.hidden = !agent.plan_step;
      // A one-line preview: the Markdown marks would only be noise here.
      row.last.textContent = (agent.last_message?.text ?? '').replace(/[*_`#>]+/g, '');
      row.last.hidden = !agent.last_message;
      if (store.selected === agent.name) row.button.setAttribute('aria-current', 'true');
      else row.button.removeAttribute('aria-current');
      if (row.li.nextSibling !== before || row.li.parentNode !== this.list) this.list.insertBefore(row.li, before);
      before = row.li;
    }
    for (const [name, row] of this.rows) {
      if (!store.agents.has(name)) { row.li.remove(); this.rows.delete(name); }
    }
    if (!this.marked && store.agents.size) {
      this.marked = true;
      performance.mark('lb:agents-visible');
    }
  }
}
customElements.define('lb-agent-list', AgentList);
