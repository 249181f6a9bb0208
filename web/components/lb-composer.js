// <lb-composer>: the message box. What a message does is the daemon's decision
// (POST /api/agents/{name}/messages): steer the running task, answer the open question, or
// start a task; the reply's `action` is said back under the box. Enter sends, Shift+Enter
// is a new line.

import { h } from '../lib/dom.js';
import { post, agentPath } from '../lib/api.js';
import { store } from '../lib/store.js';

const SAID = {
  steered: 'Sent to the running task.',
  answered: 'Answered the open question.',
  started: 'Started a new task.',
  noted: 'Noted.',
};

class Composer extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    this.text = h('textarea', { 'aria-label': 'Message', rows: 1, placeholder: 'Message this agent…', enterKeyHint: 'send',
      onkeydown: (e) => {
        if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); this.form.requestSubmit(); }
      },
      oninput: () => this.grow() });
    this.send = h('button.primary', { type: 'submit' }, 'Send');
    this.said = h('p.said', { 'aria-live': 'polite' });
    this.form = h('form.composer', { onsubmit: (e) => { e.preventDefault(); this.submit(); } }, this.text, this.send);
    this.append(this.form, this.said);
  }

  grow() {
    this.text.style.height = 'auto';
    this.text.style.height = `${Math.min(this.text.scrollHeight, 160)}px`;
  }

  async submit() {
    const text = this.text.value.trim();
    const agent = store.selected;
    if (!text || !agent) return;
    this.send.disabled = true;
    try {
      const accepted = await post(`${agentPath(agent)}/messages`, { text });
      this.text.value = '';
      this.grow();
      this.said.textContent = SAID[accepted.action] ?? '';
      this.said.dataset.action = accepted.action;
    } catch (error) {
      this.said.textContent = error.message;
      this.said.dataset.action = 'error';
    } finally {
      this.send.disabled = false;
      this.text.focus();
    }
  }
}
customElements.define('lb-composer', Composer);
