// <lb-computer>: the agent's computer (the box), as an overlay that fills a phone's screen:
// who holds it and who waits (GET /api/box), the live screen through noVNC (/novnc/), and
// Take over / Hand back (POST /api/box/takeover, /api/box/handback). A box that is not
// running says why (no Docker or image: the daemon's reason) and offers Start
// (POST /api/box/start). Kept to this one element so the box's API can change here alone.

import { h } from '../lib/dom.js';
import { get, post } from '../lib/api.js';

const SCREEN = '/novnc/vnc.html?path=novnc/websockify&autoconnect=true&resize=scale&reconnect=true';

class Computer extends HTMLElement {
  connectedCallback() {
    if (this.dialog) return;
    this.status = h('p.box-status', { 'aria-live': 'polite' }, 'Looking for the computer…');
    this.screen = h('div.screen');
    this.takeButton = h('button.primary', { type: 'button', onclick: () => this.act('takeover') }, 'Take over');
    this.backButton = h('button', { type: 'button', onclick: () => this.act('handback') }, 'Hand back');
    this.startButton = h('button', { type: 'button', onclick: () => this.act('start') }, 'Start');
    this.dialog = h('dialog.computer', { 'aria-label': 'Computer', onclose: () => this.closed() },
      h('div.computer-head', {}, h('strong', {}, 'Computer'), this.status,
        h('div.row', {}, this.takeButton, this.backButton, this.startButton,
          h('button', { type: 'button', onclick: () => this.dialog.close() }, 'Close'))),
      this.screen);
    this.append(this.dialog);
  }

  open() {
    if (!this.dialog.open) this.dialog.showModal();
    this.refresh();
    this.timer ??= setInterval(() => { if (!document.hidden) this.refresh(); }, 5000);
  }

  closed() {
    clearInterval(this.timer);
    this.timer = null;
    this.screen.replaceChildren();
  }

  async refresh() {
    let box;
    try {
      box = await get('/api/box');
    } catch (error) {
      this.show(false, false);
      this.status.textContent = error.status === 404 ? 'No computer: this daemon runs without a box.' : error.message;
      return;
    }
    if (box.state !== 'running') {
      const why = {
        unavailable: `No computer: ${box.reason ?? 'Docker or the box image is missing'}.`,
        absent: 'The computer is not running: it starts when an agent needs it.',
        stopped: 'The computer is stopped: it starts when an agent needs it.',
        starting: 'The computer is starting…',
        error: `The computer failed: ${box.reason ?? 'see the daemon log'}.`,
      }[box.state] ?? `The computer is ${box.state}.`;
      this.show(false, box.state === 'absent' || box.state === 'stopped' || box.state === 'error');
      this.status.textContent = why;
      return;
    }
    const who = (h) => (h.person ? 'a person' : h.agent ?? 'a task');
    const queue = Array.isArray(box.queue) ? box.queue.map(who) : [];
    this.status.textContent = `${box.holder ? `held by ${who(box.holder)}` : 'free'}${queue.length ? ` · waiting: ${queue.join(', ')}` : ''}`;
    this.show(true, false);
    if (!this.screen.firstChild) {
      this.screen.append(h('iframe', { src: SCREEN, title: 'The computer’s screen', allow: 'clipboard-read; clipboard-write' }));
    }
  }

  /// The controls for a running box (Take over, Hand back, the screen) or a startable one.
  show(running, startable) {
    this.takeButton.hidden = this.backButton.hidden = !running;
    this.startButton.hidden = !startable;
    if (!running) this.screen.replaceChildren();
  }

  async act(verb) {
    try { await post(`/api/box/${verb}`); } catch (error) { this.status.textContent = error.message; return; }
    this.refresh();
  }
}
customElements.define('lb-computer', Computer);
