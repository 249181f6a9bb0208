// <lb-conversation>: the selected agent's conversation, a `log` labelled "Conversation".
// Items arrive from the store (a page from the daemon, then live folds); each item is one
// element keyed by its seq, updated in place. Scrolling to the top pages older items in; the
// store keeps at most MAX_ITEMS, so the DOM stays bounded however long the history. Only the
// newest plan of each task shows (older versions of it are hidden).

import { h } from '../lib/dom.js';
import { store } from '../lib/store.js';
import './lb-message.js';
import './lb-work.js';
import './lb-plan.js';
import './lb-question.js';
import './lb-verdict.js';

const ELEMENT = {
  user_message: 'lb-message', agent_message: 'lb-message', task_started: 'lb-message', note: 'lb-message',
  work: 'lb-work', plan: 'lb-plan', question: 'lb-question', verdict: 'lb-verdict',
};

class Conversation extends HTMLElement {
  connectedCallback() {
    if (this.list) return;
    this.setAttribute('role', 'log');
    this.setAttribute('aria-label', 'Conversation');
    this.tabIndex = 0;
    this.els = new Map();
    this.plans = new Map();
    this.olderButton = h('button.older', { type: 'button', hidden: true, onclick: () => this.loadOlder() }, 'Load older');
    this.list = h('div.items');
    this.empty = h('p.empty', { hidden: true }, 'Nothing here yet. Write below to hand this agent a job.');
    this.latest = h('button.latest', { type: 'button', hidden: true, onclick: () => store.loadLatest() }, 'Jump to latest');
    this.append(this.olderButton, this.list, this.empty, this.latest);
    store.addEventListener('conversation', (e) => this.update(e.detail));
    store.addEventListener('select', () => this.clear());
    new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) this.loadOlder();
    }, { root: this }).observe(this.olderButton);
  }

  clear() {
    this.list.replaceChildren();
    this.els.clear();
    this.plans.clear();
    this.olderButton.hidden = this.latest.hidden = this.empty.hidden = true;
  }

  async loadOlder() {
    if (!store.conv || store.conv.older === null || this.loading) return;
    this.loading = true;
    try { await store.loadOlder(); } catch (error) { console.warn('older', error); }
    finally { this.loading = false; }
  }

  update({ changed, removed, reset, older }) {
    const conv = store.conv;
    if (!conv) return;
    if (reset) { this.clear(); changed = conv.items; }
    const atBottom = this.scrollTop + this.clientHeight >= this.scrollHeight - 40;
    const height = this.scrollHeight;
    const top = this.scrollTop;
    for (const seq of removed) {
      this.els.get(seq)?.remove();
      this.els.delete(seq);
    }
    for (const item of changed) {
      let el = this.els.get(item.seq);
      if (!el) {
        el = document.createElement(ELEMENT[item.type] ?? 'lb-message');
        el.dataset.seq = item.seq;
        this.place(el, item.seq);
        this.els.set(item.seq, el);
      }
      el.item = item;
      if (item.type === 'plan') this.newestPlan(item, el);
    }
    this.olderButton.hidden = conv.older === null;
    this.latest.hidden = !conv.detached;
    this.empty.hidden = conv.items.length > 0;
    if (older) this.scrollTop = top + (this.scrollHeight - height);
    else if (reset || atBottom) this.scrollTop = this.scrollHeight;
  }

  /** Inserts `el` in seq order (new items go last, older pages first). */
  place(el, seq) {
    const last = this.list.lastElementChild;
    if (!last || Number(last.dataset.seq) < seq) { this.list.append(el); return; }
    for (const child of this.list.children) {
      if (Number(child.dataset.seq) > seq) { this.list.insertBefore(el, child); return; }
    }
    this.list.append(el);
  }

  newestPlan(item, el) {
    const shown = this.plans.get(item.task);
    if (shown && shown !== el && shown.isConnected && Number(shown.dataset.seq) > item.seq) {
      el.hidden = true;
      return;
    }
    if (shown && shown !== el) shown.hidden = true;
    el.hidden = false;
    this.plans.set(item.task, el);
  }
}
customElements.define('lb-conversation', Conversation);
