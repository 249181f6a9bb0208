// <lb-agent-view>: one agent: its name and state, Stop and Continue, and four panes: the
// conversation with the composer, its tasks, its schedules, its settings (the edit form).

import { h } from '../lib/dom.js';
import { post } from '../lib/api.js';
import { store, liveness, STATE_LABELS } from '../lib/store.js';
import './lb-conversation.js';
import './lb-composer.js';
import './lb-task-list.js';
import './lb-schedules.js';
import './lb-agent-form.js';

const OPEN = new Set(['queued', 'running', 'recovering', 'waiting_for_human']);
const PANES = ['Conversation', 'Tasks', 'Schedules', 'Settings'];

class AgentView extends HTMLElement {
  connectedCallback() {
    if (this.head) return;
    this.nameEl = h('h2.agent-name');
    this.state = h('span.state');
    this.stop = h('button', { type: 'button', onclick: () => this.act('stop') }, 'Stop');
    this.continue = h('button', { type: 'button', onclick: () => this.act('continue') }, 'Continue');
    this.tabs = PANES.map((name) => h('button.tab', { type: 'button', 'aria-pressed': 'false', onclick: () => this.show(name) }, name));
    this.head = h('div.agent-head', {}, h('div.title-line', {}, this.nameEl, this.state),
      h('div.row', {}, this.stop, this.continue), h('div.tabs', {}, this.tabs));
    const conversation = h('div.pane.conversation-pane', {}, h('lb-conversation'), h('lb-composer'));
    this.form = h('lb-agent-form', { mode: 'edit' });
    this.panes = { Conversation: conversation, Tasks: h('lb-task-list.pane'), Schedules: h('lb-schedules.pane'), Settings: h('div.pane', {}, this.form) };
    this.append(this.head, ...Object.values(this.panes));
    this.form.addEventListener('saved', () => this.show('Conversation'));
    store.addEventListener('state', () => this.render());
    store.addEventListener('select', () => { this.show('Conversation'); this.render(); });
    this.show('Conversation');
    this.render();
  }

  show(name) {
    this.pane = name;
    this.tabs.forEach((tab) => tab.setAttribute('aria-pressed', String(tab.textContent === name)));
    for (const [key, pane] of Object.entries(this.panes)) pane.hidden = key !== name;
    if (name === 'Tasks') this.panes.Tasks.load();
    if (name === 'Schedules') this.panes.Schedules.load();
    if (name === 'Settings') this.form.reset();
  }

  /** The task Stop and Continue act on: the open one, else the latest. */
  task() {
    const agent = store.agents.get(store.selected);
    return agent?.tasks.find((t) => OPEN.has(t.state)) ?? agent?.tasks[0] ?? null;
  }

  async act(verb) {
    const task = this.task();
    if (!task) return;
    try { await post(`/api/tasks/${encodeURIComponent(task.id)}/${verb}`); } catch (error) { alert(error.message); }
    store.refresh().catch(() => {});
  }

  render() {
    const agent = store.agents.get(store.selected);
    this.hidden = !agent;
    if (!agent) return;
    this.nameEl.textContent = agent.name;
    const live = liveness(agent);
    this.state.textContent = STATE_LABELS[live] ?? live;
    this.state.dataset.state = live;
    const task = this.task();
    this.stop.hidden = !(task && OPEN.has(task.state));
    this.continue.hidden = !(task && !OPEN.has(task.state));
  }
}
customElements.define('lb-agent-view', AgentView);
