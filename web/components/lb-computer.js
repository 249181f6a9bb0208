// <lb-computer>: the agent's computer (the box), as an overlay that fills a phone's screen:
// who holds it and who waits (GET /api/box), the live screen through noVNC (/novnc/), and
// Take over / Hand back (POST /api/box/takeover, /api/box/handback). Without a box (404) it
// says so. Kept to this one element so the box's API can change here alone.

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
    this.dialog = h('dialog.computer', { 'aria-label': 'Computer', onclose: () => this.closed() },
      h('div.computer-head', {}, h('strong', {}, 'Computer'), this.status,
        h('div.row', {}, this.takeButton, this.backButton,
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
      this.takeButton.hidden = this.backButton.hidden = true;
      this.screen.replaceChildren();
      this.status.textContent = error.status === 404 ? 'No computer: this daemon runs without a box.' : error.message;
      return;
    }
    const holder = box.holder ?? null;
    const queue = Array.isArray(box.queue) ? box.queue : [];
    this.status.textContent = `${holder ? `held by ${holder}` : 'free'}${queue.length ? ` · waiting: ${queue.join(', ')}` : ''}`;
    this.takeButton.hidden = this.backButton.hidden = false;
    if (!this.screen.firstChild) {
      this.screen.append(h('iframe', { src: SCREEN, title: 'The computer’s screen', allow: 'clipboard-read; clipboard-write' }));
    }
  }

  async act(verb) {
    try { await post(`/api/box/${verb}`); } catch (error) { this.status.textContent = error.message; return; }
    this.refresh();
  }
}
customElements.define('lb-computer', Computer);
