// <lb-task-list>: the selected agent's tasks with their states (GET /api/tasks?agent=),
// re-read when one of them changes while the list is shown; Stop, Continue and Export per
// task (Export downloads GET /api/tasks/{id}/export?format=md, the task as a readable record).

import { h, ago } from '../lib/dom.js';
import { get, post } from '../lib/api.js';
import { store } from '../lib/store.js';

const OPEN = new Set(['queued', 'running', 'recovering', 'waiting_for_human']);

// "12.3k in, 2.1k out, $0.0123" ("~" when the daemon estimated them).
const count = (n) => (n < 1000 ? String(n) : n < 1e6 ? `${(n / 1e3).toFixed(1)}k` : `${(n / 1e6).toFixed(1)}M`);
export function usage(u) {
  if (!u || !(u.input_tokens || u.output_tokens)) return '';
  const mark = u.estimated ? '~' : '';
  const cost = u.cost_microusd != null ? `, $${(u.cost_microusd / 1e6).toFixed(4)}` : '';
  return `${mark}${count(u.input_tokens)} in, ${mark}${count(u.output_tokens)} out${cost}`;
}

class TaskList extends HTMLElement {
  connectedCallback() {
    if (this.list) return;
    this.list = h('ul.tasks');
    this.append(this.list);
    store.addEventListener('tasks', (e) => { if (e.detail === store.selected && !this.hidden) this.load(); });
  }

  async load() {
    const agent = store.selected;
    if (!agent) return;
    try {
      const { tasks } = await get(`/api/tasks?agent=${encodeURIComponent(agent)}&limit=50`);
      if (agent === store.selected) this.render(tasks);
    } catch (error) { this.list.replaceChildren(h('li.error', {}, error.message)); }
  }

  render(tasks) {
    if (!tasks.length) { this.list.replaceChildren(h('li.empty', {}, 'No tasks yet.')); return; }
    const act = (task, verb) => async () => {
      try { await post(`/api/tasks/${encodeURIComponent(task.id)}/${verb}`); this.load(); }
      catch (error) { alert(error.message); }
    };
    this.list.replaceChildren(...tasks.map((task) => h('li', { dataset: { task: task.id, state: task.state } },
      h('div.task-objective', {}, task.parent ? `↳ ${task.objective}` : task.objective),
      h('div.meta', {}, h('span.chip', { dataset: { state: task.state } }, task.state.replaceAll('_', ' ')),
        ` ${ago(task.updated_at_ms, store.now())}`,
        usage(task.usage) ? h('span.usage', { title: 'tokens this task used' }, ` · ${usage(task.usage)}`) : null),
      task.final_message ? h('div.task-final', {}, task.final_message.split('\n')[0]) : null,
      h('div.row', {},
        OPEN.has(task.state) ? h('button', { type: 'button', onclick: act(task, 'stop') }, 'Stop') : null,
        !OPEN.has(task.state) && !task.parent ? h('button', { type: 'button', onclick: act(task, 'continue') }, 'Continue') : null,
        h('a.button', {
          href: `/api/tasks/${encodeURIComponent(task.id)}/export?format=md`,
          download: `task-${task.id}.md`,
          title: 'the objective, plan, messages, tool calls, verdict and deliverables as Markdown',
        }, 'Export')))));
  }
}
customElements.define('lb-task-list', TaskList);
