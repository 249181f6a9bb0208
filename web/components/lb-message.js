// <lb-message>: one chat entry: the person's message (or the objective they handed over), the
// agent's send_message as a bubble with its Markdown rendered safely, or a runtime note.

import { h, clock } from '../lib/dom.js';
import { render } from '../lib/markdown.js';

class Message extends HTMLElement {
  set item(item) {
    const from = { user_message: 'person', task_started: 'person', agent_message: 'agent', note: 'note' }[item.type];
    this.className = `item message ${from}`;
    let body;
    if (item.type === 'agent_message') body = h('div.bubble.markdown', {}, render(item.text));
    else if (item.type === 'note') body = h('div.note-text', {}, item.text);
    else body = h('div.bubble', {}, item.type === 'task_started' ? item.objective : item.text);
    const meta = h('div.meta', {}, item.type === 'task_started' ? `new task · ${clock(item.at_ms)}` : clock(item.at_ms));
    this.replaceChildren(body, meta);
  }
}
customElements.define('lb-message', Message);
