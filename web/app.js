// The page's entry: wires the store, the live connection, notifications and the shell
// (sidebar of agents, the selected agent, the overview of open questions, the dialogs), and
// registers the service worker. Phone and desktop differ in CSS only: on a narrow screen
// `body[data-view]` shows the list or one agent.

import { h } from './lib/dom.js';
import { store } from './lib/store.js';
import { Live } from './lib/live.js';
import { Notifier } from './lib/notify.js';
import { Push } from './lib/push.js';
import './components/lb-connection.js';
import './components/lb-agent-list.js';
import './components/lb-agent-view.js';
import './components/lb-agent-form.js';
import './components/lb-question.js';
import './components/lb-computer.js';

const $ = (id) => document.getElementById(id);
const notifier = new Notifier();

// Only what needs the person, and only top-level tasks (subagents report to their parent).
function notable(event) {
  if (event.kind === 'question') {
    notifier.tell(`${event.agent} asks`, event.data.question, event.task);
  } else if (event.kind === 'task_finished' && !store.subagents.has(event.task)) {
    notifier.tell(`${event.agent}: task ${event.data.verdict}`, event.data.message.split('\n')[0], event.task);
  } else if (event.kind === 'subagent_spawned') {
    store.subagents.add(event.data.task);
  }
}

const live = new Live(store, { onEvent: notable });
$('connection').live = live;

// The overview: every open question, with its agent.
function renderOverview() {
  const questions = [...store.questions.values()];
  const shown = new Map([...$('questions').children].map((el) => [el.dataset.task, el]));
  $('questions').replaceChildren(...questions.map((q) => {
    const el = shown.get(q.task) ?? h('lb-question', { dataset: { task: q.task, showAgent: '1' } });
    if (el.q?.call_id !== q.call_id) el.item = { ...q, answer: null };
    return el;
  }));
  $('no-questions').hidden = questions.length > 0;
}

function renderView() {
  const selected = store.selected;
  document.body.dataset.view = selected ? 'agent' : 'list';
  $('overview').hidden = Boolean(selected);
  document.querySelector('lb-agent-view').hidden = !selected;
}

store.addEventListener('state', renderOverview);
store.addEventListener('select', renderView);
$('back').addEventListener('click', () => store.select(null));
$('computer').addEventListener('click', () => document.querySelector('lb-computer').open());

const dialog = $('agent-dialog');
const addForm = dialog.querySelector('lb-agent-form');
$('add-agent').addEventListener('click', () => { addForm.reset(); dialog.showModal(); });
$('close-dialog').addEventListener('click', () => dialog.close());
addForm.addEventListener('saved', (e) => { dialog.close(); store.select(e.detail.name); });

// "Notify me": Web Push for this device (the page may be closed), and the devices list.
// Without push (plain HTTP off loopback, an old browser) it falls back to notifications
// while the page is open but hidden.
const push = new Push();
const notify = $('notify');
const notifyDialog = $('notify-dialog');
async function renderPush() {
  const on = push.supported && await push.on();
  notify.textContent = on ? 'Notifications on' : 'Notify me';
  notify.dataset.on = on ? '1' : '';
  $('notify-state').textContent = on ? 'This device: on.' : 'This device: off.';
  $('notify-on').hidden = on || !push.supported;
  const devices = push.supported ? await push.devices().catch(() => []) : [];
  const mine = (await push.current().catch(() => null))?.endpoint;
  $('devices').replaceChildren(...devices.map((d) => h('li', {},
    `${d.name ?? 'A browser'}${d.endpoint === mine ? ' (this device)' : ''} `,
    h('button', { type: 'button', onclick: async () => { await push.remove(d.id); renderPush(); } }, 'Remove'))));
}
if (!push.supported) notify.hidden = !notifier.supported || Notification.permission !== 'default';
notify.addEventListener('click', async () => {
  if (!push.supported) { await notifier.ask(); notify.hidden = true; return; }
  notifyDialog.showModal();
  renderPush();
});
$('notify-on').addEventListener('click', async () => {
  $('notify-state').textContent = 'Subscribing…';
  try { await push.subscribe(); } catch (error) { $('notify-state').textContent = `Could not subscribe: ${error.message}`; return; }
  renderPush();
});
$('close-notify').addEventListener('click', () => notifyDialog.close());

// Leases are state, not events: re-read the board now and then while the page is visible.
setInterval(() => { if (!document.hidden && live.status === 'live') store.refresh().catch(() => {}); }, 10000);

if ('serviceWorker' in navigator && window.isSecureContext) {
  navigator.serviceWorker.register('/sw.js').catch((error) => console.warn('service worker', error));
}

// A notification's link opens the page at its agent (`/?agent=NAME&task=ID`).
const wanted = new URLSearchParams(location.search).get('agent');
if (wanted) store.addEventListener('state', () => { if (store.agents.has(wanted) && !store.selected) store.select(wanted); }, { once: true });

renderView();
live.start();
if (push.supported) renderPush().catch(() => {});
