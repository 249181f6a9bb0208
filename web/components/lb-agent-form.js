// <lb-agent-form>: adds an agent (name, instructions, model, workspace), or edits the
// selected one (`mode="edit"`: the name is fixed; an empty model or workspace goes back to
// the default). Fires 'saved' with the agent.

import { h } from '../lib/dom.js';
import { post, patch, agentPath } from '../lib/api.js';
import { store } from '../lib/store.js';

class AgentForm extends HTMLElement {
  connectedCallback() {
    if (this.form) return;
    const field = (label, input) => h('label', {}, h('span', {}, label), input);
    this.name = h('input', { name: 'name', required: true, pattern: '[a-z0-9][a-z0-9_\\-]{0,63}', autocomplete: 'off',
      autocapitalize: 'none', spellcheck: false, placeholder: 'researcher' });
    this.instructions = h('textarea', { name: 'instructions', rows: 4, placeholder: 'What this agent is for, how it should work' });
    this.model = h('input', { name: 'model', autocomplete: 'off', placeholder: 'default' });
    this.workspace = h('input', { name: 'workspace', autocomplete: 'off', placeholder: 'default: <home>/workspaces/<name>' });
    this.error = h('p.error', { role: 'alert', hidden: true });
    this.submit = h('button.primary', { type: 'submit' }, 'Add agent');
    this.form = h('form.agent-form', { onsubmit: (e) => { e.preventDefault(); this.save(); } },
      this.nameField = field('Name', this.name), field('Instructions', this.instructions),
      field('Model', this.model), field('Workspace (absolute path)', this.workspace), this.error,
      h('div.row', {}, this.submit));
    this.append(this.form);
  }

  get editing() { return this.getAttribute('mode') === 'edit'; }

  /** Fills the form for the selected agent (edit mode), or empties it (add mode). */
  reset() {
    const agent = this.editing ? store.agents.get(store.selected) : null;
    this.nameField.hidden = this.editing;
    this.name.required = !this.editing;
    this.name.value = agent?.name ?? '';
    this.instructions.value = agent?.instructions ?? '';
    this.model.value = agent?.model ?? '';
    this.workspace.value = this.editing ? agent?.workspace ?? '' : '';
    this.submit.textContent = this.editing ? 'Save' : 'Add agent';
    this.error.hidden = true;
  }

  async save() {
    const body = { instructions: this.instructions.value, model: this.model.value.trim(), workspace: this.workspace.value.trim() };
    try {
      let agent;
      if (this.editing) {
        agent = await patch(agentPath(store.selected), body);
      } else {
        for (const key of ['model', 'workspace']) if (!body[key]) delete body[key];
        agent = await post('/api/agents', { name: this.name.value.trim(), ...body });
      }
      await store.refresh().catch(() => {});
      this.dispatchEvent(new CustomEvent('saved', { detail: agent, bubbles: true }));
    } catch (error) {
      this.error.textContent = error.message;
      this.error.hidden = false;
    }
  }
}
customElements.define('lb-agent-form', AgentForm);
