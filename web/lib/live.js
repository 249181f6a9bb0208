// Keeps the store current: loads the board, then streams the log from the board's seq with
// EventSource (its native reconnect resends Last-Event-ID, so a daemon restart loses and
// repeats nothing), and hands events to the store in render batches: the first event after a
// quiet spell at once, then at most one batch per 120 ms.
//
// If the stream fails while the daemon answers (a proxy that blocks it), it polls
// /api/events/page every 2 s instead, says so, and tries the stream again every 30 s. While
// the tab is hidden nothing is rendered: events wait (the title counts what needs the person)
// and are applied when it is shown; past MAX_HIDDEN of them it re-reads the board instead.

import { get } from './api.js';

const BATCH_MS = 120;
const POLL_MS = 2000;
const RETRY_STREAM_MS = 30000;
/** How long a stream may stay unopened, with the daemon answering, before we poll. */
const STREAM_GRACE_MS = 4000;
const MAX_HIDDEN = 5000;

export class Live extends EventTarget {
  constructor(store, { onEvent } = {}) {
    super();
    this.store = store;
    this.onEvent = onEvent;   // sees every new event at once, even while hidden
    this.seq = 0;             // last event received (applied or waiting)
    this.queue = [];
    this.timer = null;
    this.lastBatch = 0;
    this.status = 'connecting';
    this.resync = false;
    document.addEventListener('visibilitychange', () => this.visibility());
  }

  setStatus(status) {
    if (this.status === status) return;
    this.status = status;
    this.dispatchEvent(new Event('status'));
  }

  async start() {
    try {
      this.seq = Math.max(this.seq, await this.store.refresh());
      this.store.seq = Math.max(this.store.seq, this.seq);
    } catch (error) {
      this.setStatus('unreachable');
      setTimeout(() => this.start(), POLL_MS);
      return;
    }
    performance.mark('lb:state-loaded');
    this.openStream();
  }

  openStream() {
    this.closeStream();
    const source = new EventSource(`/api/events?after=${this.seq}`);
    this.source = source;
    source.onopen = () => {
      clearTimeout(this.grace);
      this.grace = null;
      this.fresh = 0;
      const recovering = this.status !== 'live' && this.status !== 'connecting';
      this.stopPolling();
      this.setStatus('live');
      // After an outage the board may have moved on (leases, recovering tasks).
      if (recovering) this.store.refresh().catch(() => {});
    };
    source.onmessage = (message) => this.receive(JSON.parse(message.data));
    source.onerror = () => {
      if (this.source !== source) return;
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error): decide ourselves.
        this.source = null;
        this.diagnose(true);
      } else if (!this.grace) {
        this.setStatus('reconnecting');
        this.grace = setTimeout(() => { this.grace = null; this.diagnose(false); }, STREAM_GRACE_MS);
      }
    };
  }

  closeStream() {
    if (this.source) this.source.close();
    this.source = null;
    clearTimeout(this.grace);
    this.grace = null;
  }

  /** The stream is not open: is the daemon down, or is only the stream blocked? */
  async diagnose(closed) {
    if (this.source?.readyState === EventSource.OPEN) return;
    try {
      await get('/api/health');
    } catch {
      this.setStatus('unreachable');
      // EventSource keeps reconnecting by itself (with Last-Event-ID); if it gave up, retry.
      if (closed || !this.source) setTimeout(() => this.openStream(), POLL_MS);
      else this.grace = setTimeout(() => { this.grace = null; this.diagnose(false); }, POLL_MS);
      return;
    }
    // The daemon answers. Right after an outage the stream may just not have retried yet:
    // give a fresh one its chance before deciding it is blocked.
    if (this.status === 'unreachable' && !this.fresh) {
      this.fresh = 1;
      this.openStream();
      this.setStatus('reconnecting');
      this.grace = setTimeout(() => { this.grace = null; this.diagnose(false); }, STREAM_GRACE_MS);
      return;
    }
    this.closeStream();
    this.startPolling();
  }

  startPolling() {
    this.setStatus('polling');
    if (this.pollTimer) return;
    this.pollTimer = setInterval(() => this.poll(), POLL_MS);
    this.retryTimer = setInterval(() => this.openStream(), RETRY_STREAM_MS);
    this.poll();
  }

  stopPolling() {
    clearInterval(this.pollTimer);
    clearInterval(this.retryTimer);
    this.pollTimer = this.retryTimer = null;
  }

  async poll() {
    if (this.polling) return;
    this.polling = true;
    try {
      for (;;) {
        const page = await get(`/api/events/page?after=${this.seq}&limit=1000`);
        if (this.status === 'unreachable') this.store.refresh().catch(() => {});
        if (this.pollTimer) this.setStatus('polling');
        for (const event of page.events) this.receive(event);
        if (page.events.length < 1000) break;
      }
    } catch {
      this.setStatus('unreachable');
    } finally { this.polling = false; }
  }

  receive(event) {
    if (event.seq <= this.seq) return;
    this.seq = event.seq;
    this.onEvent?.(event);
    if (this.resync) return;
    this.queue.push(event);
    if (document.hidden) {
      if (this.queue.length > MAX_HIDDEN) { this.queue = []; this.resync = true; }
      return;
    }
    this.schedule();
  }

  schedule() {
    if (this.timer) return;
    const wait = Math.max(0, this.lastBatch + BATCH_MS - performance.now());
    this.timer = setTimeout(() => this.flush(), wait);
  }

  flush() {
    this.timer = null;
    if (document.hidden) return;
    this.lastBatch = performance.now();
    const batch = this.queue;
    this.queue = [];
    if (batch.length) this.store.apply(batch);
  }

  async visibility() {
    if (document.hidden) return;
    if (this.resync) {
      // Too much happened while hidden: read the board and the conversation afresh.
      this.resync = false;
      this.store.seq = this.seq;
      await this.store.refresh().catch(() => {});
      if (this.store.selected) this.store.loadLatest().catch(() => {});
      return;
    }
    this.schedule();
  }
}
