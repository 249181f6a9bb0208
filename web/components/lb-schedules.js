// <lb-schedules>: the selected agent's cron schedules (GET /api/schedules?agent=): add one
// (a crontab expression and the job), pause, resume, remove.

import { h, ago } from '../lib/dom.js';
import { get, post, del, agentPath } from '../lib/api.js';
import { store } from '../lib/store.js';

class Schedules extends HTMLElement {
  connectedCallback() {
    if (this.list) return;
    this.list = h('ul.schedules');
    this.cron = h('input', { 'aria-label': 'When (cron)', placeholder: '0 9 * * 1-5', required: true, autocomplete: 'off' });
    this.objective = h('input', { 'aria-label': 'Job', placeholder: 'What to do at each slot', required: true });
    this.skip = h('input', { type: 'checkbox' });
    this.error = h('p.error', { role: 'alert', hidden: true });
    this.append(this.list, h('form.schedule-form', { onsubmit: (e) => { e.preventDefault(); this.add(); } },
      this.cron, this.objective, h('label.check', {}, this.skip, ' skip slots missed while the daemon was down'),
      h('button.primary', {}, 'Add schedule'), this.error));
    store.addEventListener('tasks', (e) => { if (e.detail === store.selected && !this.hidden) this.load(); });
  }

  async load() {
    const agent = store.selected;
    if (!agent) return;
    try {
      const { schedules } = await get(`/api/schedules?agent=${encodeURIComponent(agent)}`);
      if (agent === store.selected) this.render(schedules);
    } catch (error) { this.list.replaceChildren(h('li.error', {}, error.message)); }
  }

  async act(call) {
    this.error.hidden = true;
    try { await call(); await this.load(); } catch (error) {
      this.error.textContent = error.message;
      this.error.hidden = false;
    }
  }

  add() {
    this.act(async () => {
      await post(`${agentPath(store.selected)}/schedules`, { cron: this.cron.value.trim(), objective: this.objective.value.trim(), skip_missed: this.skip.checked });
      this.cron.value = this.objective.value = '';
    });
  }

  render(schedules) {
    if (!schedules.length) { this.list.replaceChildren(h('li.empty', {}, 'No schedules.')); return; }
    const path = (s) => `/api/schedules/${encodeURIComponent(s.id)}`;
    this.list.replaceChildren(...schedules.map((s) => h('li', { dataset: { schedule: s.id } },
      h('div', {}, h('code', {}, s.cron), ` ${s.objective}`),
      h('div.meta', {}, s.paused ? 'paused' : s.next_run_at_ms ? `next ${new Date(s.next_run_at_ms).toLocaleString()}` : 'no next slot',
        s.last_run_at_ms ? ` · last ran ${ago(s.last_run_at_ms, store.now())}` : ''),
      h('div.row', {},
        s.paused ? h('button', { type: 'button', onclick: () => this.act(() => post(`${path(s)}/resume`)) }, 'Resume')
          : h('button', { type: 'button', onclick: () => this.act(() => post(`${path(s)}/pause`)) }, 'Pause'),
        h('button', { type: 'button', onclick: () => this.act(() => del(path(s))) }, 'Remove')))));
  }
}
customElements.define('lb-schedules', Schedules);
