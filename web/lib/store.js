// What the page knows: the status board (GET /api/state), the open questions, and the
// selected agent's conversation (GET /api/agents/{name}/conversation), kept current by the
// events `live.js` hands over in batches. Components listen for:
//   'state'        the board or the questions changed
//   'conversation' {detail: {changed: [item], removed: [seq], reset}} for the selected agent
//   'tasks'        {detail: agent} a task of that agent changed (task list, schedules)
//   'select'       the selected agent changed
//
// Invariants: every applied event has a seq above the last one applied (duplicates from a
// reconnect or from polling are dropped here), and a conversation only folds events newer
// than the seq it was read at.

import { get, agentPath } from './api.js';
import { fold } from './fold.js';

/** Items of one conversation kept in the page; older ones page back in on scroll. */
export const MAX_ITEMS = 150;
const PAGE = 40;

const BOARD_KINDS = new Set(['agent_created', 'agent_deleted', 'agent_updated', 'task_created',
  'task_state', 'task_finished', 'question', 'plan_updated', 'subagent_spawned']);

export class Store extends EventTarget {
  constructor() {
    super();
    this.seq = 0;
    this.agents = new Map();      // name -> AgentStatus
    this.questions = new Map();   // task -> OpenQuestion
    this.subagents = new Set();   // task ids that are subagents (kept out of conversations)
    this.selected = null;
    this.conv = null;             // {agent, items, seq, older, detached, loading}
    this.clockOffset = 0;         // daemon clock - our clock, in ms
    this.refreshing = null;
    this.stale = false;
  }

  /** The daemon's clock now: heartbeats are judged by it. */
  now() { return Date.now() + this.clockOffset; }

  /** Replaces the board with a fresh snapshot; returns its seq. */
  setState(state) {
    this.clockOffset = state.now_ms - Date.now();
    this.agents = new Map(state.agents.map((a) => [a.name, a]));
    this.questions = new Map(state.questions.map((q) => [q.task, q]));
    if (this.selected && !this.agents.has(this.selected)) this.select(null);
    this.dispatchEvent(new Event('state'));
    return state.seq;
  }

  /** Re-reads the board (at most one read in flight; a request during one queues another). */
  async refresh() {
    if (this.refreshing) { this.stale = true; return this.refreshing; }
    this.refreshing = (async () => {
      try { return this.setState(await get('/api/state')); }
      finally {
        this.refreshing = null;
        if (this.stale) { this.stale = false; this.refresh().catch(() => {}); }
      }
    })();
    return this.refreshing;
  }

  select(name) {
    if (this.selected === name) return;
    this.selected = name;
    this.conv = null;
    this.pending = null;
    this.dispatchEvent(new Event('select'));
    if (name) this.loadLatest().catch((error) => console.warn('conversation', error));
  }

  /** Loads the newest page of the selected agent's conversation. */
  async loadLatest() {
    const agent = this.selected;
    const page = await get(`${agentPath(agent)}/conversation?limit=${PAGE}`);
    if (this.selected !== agent) return;
    const items = page.items.reverse().filter((i) => !this.subagents.has(i.task));
    this.conv = { agent, items, seq: page.seq, older: page.older, detached: false, reports: new Map() };
    this.emitConversation({ reset: true });
    // Events that arrived while the page was read are folded now (the older ones are in it).
    for (const event of this.pending ?? []) this.foldOne(event);
    this.pending = null;
  }

  /** Loads the page before the oldest item shown; returns the items it added. */
  async loadOlder() {
    const conv = this.conv;
    if (!conv || conv.loading || conv.older === null) return [];
    const before = conv.items.length ? conv.items[0].seq : conv.older;
    conv.loading = true;
    try {
      const page = await get(`${agentPath(conv.agent)}/conversation?before=${before}&limit=${PAGE}`);
      if (this.conv !== conv) return [];
      const items = page.items.reverse().filter((i) => !this.subagents.has(i.task));
      conv.items.unshift(...items);
      conv.older = page.older;
      const removed = [];
      // Bounded: paging back drops the newest items; live ones stop until "Jump to latest".
      while (conv.items.length > MAX_ITEMS) { removed.push(conv.items.pop().seq); conv.detached = true; }
      this.emitConversation({ changed: items, removed, older: true });
      return items;
    } finally { conv.loading = false; }
  }

  emitConversation(detail) {
    this.dispatchEvent(new CustomEvent('conversation', { detail: { changed: [], removed: [], ...detail } }));
  }

  /** Applies a batch of events (oldest first). */
  apply(events) {
    let board = false;
    const tasksOf = new Set();
    const changed = new Map();
    const removed = [];
    for (const event of events) {
      if (event.seq <= this.seq) continue;
      this.seq = event.seq;
      if (event.kind === 'subagent_spawned') {
        this.subagents.add(event.data.task);
        if (this.conv) {
          this.conv.items = this.conv.items.filter((i) => {
            if (i.task !== event.data.task) return true;
            removed.push(i.seq);
            return false;
          });
        }
      }
      if (BOARD_KINDS.has(event.kind)) board = true;
      if (event.kind.startsWith('task_') || event.kind.startsWith('schedule_')) tasksOf.add(event.agent);
      if (event.kind === 'agent_message') {
        const agent = this.agents.get(event.agent);
        if (agent) { agent.last_message = { seq: event.seq, at_ms: event.at_ms, text: event.data.text }; board = true; }
      }
      if (event.agent !== this.selected || this.subagents.has(event.task)) continue;
      if (!this.conv) { (this.pending ??= []).push(event); continue; }
      for (const item of this.foldOne(event, false)) changed.set(item.seq, item);
    }
    if (changed.size || removed.length) this.trim([...changed.values()], removed);
    for (const agent of tasksOf) this.dispatchEvent(new CustomEvent('tasks', { detail: agent }));
    if (board) {
      this.dispatchEvent(new Event('state'));
      this.refresh().catch(() => {});
    }
  }

  foldOne(event, emit = true) {
    const conv = this.conv;
    if (!conv || event.seq <= conv.seq || conv.detached) return [];
    const items = fold(conv, event);
    if (emit && items.length) this.trim(items, []);
    return items;
  }

  /** Keeps at most MAX_ITEMS while following the newest: the oldest go (and page back in). */
  trim(changed, removed) {
    const conv = this.conv;
    while (conv.items.length > MAX_ITEMS) {
      const gone = conv.items.shift();
      removed.push(gone.seq);
      conv.older = gone.seq;
    }
    const gone = new Set(removed);
    this.emitConversation({ changed: changed.filter((i) => !gone.has(i.seq)), removed });
  }
}

/** The page's one store. */
export const store = new Store();

/** What an agent's dot says: alive only while its lease holds (heartbeat under 30 s old). */
export function liveness(agent, now = store.now()) {
  if (agent.state === 'running' || agent.state === 'recovering') {
    return agent.lease_expires_at_ms && agent.lease_expires_at_ms > now ? 'alive' : 'stale';
  }
  return agent.state;
}

export const STATE_LABELS = {
  alive: 'running', stale: 'no heartbeat', running: 'running', recovering: 'recovering',
  waiting_for_human: 'waiting', queued: 'queued', idle: 'idle',
};
