// The live half of the conversation fold: applies one event (from the stream or the polling
// fallback) to a conversation the daemon already folded (GET /api/agents/{name}/conversation).
// It mirrors daemon/src/store/projections/fold.rs rule for rule; change both together.
//
// fold(conversation, event) returns the items it created or changed (to re-render), and
// leaves conversation.items oldest first.

const SHOWN_AS_ITEMS = ['send_message', 'update_plan', 'request_user_input', 'request_takeover',
  'report_done', 'report_blocked'];
const ASKING = ['request_user_input', 'request_takeover'];
const STEPS_KEPT = 50;
const OUTPUT_CHARS = 4000;

const SCHEDULE_NOTES = {
  schedule_added: (d) => `schedule ${d.schedule} added: ${d.objective} at ${d.cron}`,
  schedule_removed: (d) => `schedule ${d.schedule} removed`,
  schedule_paused: (d) => `schedule ${d.schedule} paused`,
  schedule_resumed: (d) => `schedule ${d.schedule} resumed`,
  schedule_fired: (d) => `schedule ${d.schedule} started a task`,
  schedule_skipped: (d) => `schedule ${d.schedule} skipped a slot: ${d.reason}`,
};

/** How an event takes part: 'item', 'work' or 'quiet' (null: not part of a conversation). */
export function role(event) {
  const d = event.data || {};
  switch (event.kind) {
    case 'tool_call': case 'tool_result':
      return SHOWN_AS_ITEMS.includes(d.name) || !event.task ? 'quiet' : 'work';
    case 'command_started': case 'command_ended':
      return event.task ? 'work' : 'quiet';
    case 'user_message': case 'agent_message': case 'task_created': case 'plan_updated':
    case 'question': case 'task_finished': case 'runtime_note':
      return 'item';
    default:
      return event.kind in SCHEDULE_NOTES ? 'item' : null;
  }
}

function clip(text) {
  return text.length > OUTPUT_CHARS ? `${text.slice(0, OUTPUT_CHARS)}\n… (cut; the task's events have it all)` : text;
}

export function fold(conv, event) {
  const r = role(event);
  if (!r) return [];
  const d = event.data || {};
  const last = conv.items[conv.items.length - 1];
  conv.reports ??= new Map();
  if (r === 'quiet') {
    if (event.kind === 'tool_result' && ASKING.includes(d.name)) {
      const q = conv.items.findLast((i) => i.type === 'question' && i.call_id === d.call_id);
      if (q) { q.answer = d.output; return [q]; }
    } else if (event.kind === 'tool_call' && d.name === 'report_done') {
      try {
        const a = JSON.parse(d.arguments);
        if (typeof a.summary === 'string' && typeof a.evidence === 'string') {
          conv.reports.set(event.task, { summary: a.summary, evidence: a.evidence, files: a.files ?? [] });
        }
      } catch { /* a malformed report is refused by the daemon too */ }
    }
    return [];
  }
  if (r === 'work') {
    let group = last;
    if (!(last && last.type === 'work' && last.task === event.task)) {
      group = { type: 'work', seq: event.seq, last_seq: event.seq, at_ms: event.at_ms,
        last_at_ms: event.at_ms, task: event.task, counts: {}, steps: [], omitted: 0 };
      conv.items.push(group);
    }
    group.last_seq = event.seq;
    group.last_at_ms = event.at_ms;
    let step;
    if (event.kind === 'tool_call') {
      const effect = d.effect ?? null;
      const key = effect ?? 'control';
      group.counts[key] = (group.counts[key] ?? 0) + 1;
      step = { seq: event.seq, id: d.call_id, name: d.name, effect, arguments: d.arguments, status: null, output: null };
    } else if (event.kind === 'tool_result') {
      const call = group.steps.findLast((s) => s.id === d.call_id);
      if (call) { call.status = d.status; call.output = clip(d.output ?? ''); return [group]; }
      step = { seq: event.seq, id: d.call_id, name: d.name, effect: null, arguments: '', status: d.status, output: clip(d.output ?? '') };
    } else if (event.kind === 'command_started') {
      step = { seq: event.seq, id: d.command_id, name: event.kind, effect: 'command', arguments: d.command, status: null, output: d.log };
    } else {
      step = { seq: event.seq, id: d.command_id, name: event.kind, effect: 'command', arguments: '', status: null, output: d.status };
    }
    group.steps.push(step);
    if (group.steps.length > STEPS_KEPT) { group.steps.shift(); group.omitted += 1; }
    return [group];
  }
  const base = { seq: event.seq, at_ms: event.at_ms, task: event.task };
  let item;
  switch (event.kind) {
    case 'user_message': item = { ...base, type: 'user_message', text: d.text }; break;
    case 'agent_message': item = { ...base, type: 'agent_message', text: d.text }; break;
    case 'task_created': item = { ...base, type: 'task_started', objective: d.objective }; break;
    case 'plan_updated': item = { ...base, type: 'plan', steps: d.steps ?? [], explanation: d.explanation ?? null }; break;
    case 'question':
      item = { ...base, type: 'question', call_id: d.call_id, question: d.question, options: d.options ?? [],
        takeover: d.takeover ?? null, approval: d.approval ?? null, answer: null };
      break;
    case 'task_finished': {
      const report = conv.reports.get(event.task) ?? null;
      conv.reports.delete(event.task);
      item = { ...base, type: 'verdict', verdict: d.verdict, message: d.message, report: d.verdict === 'done' ? report : null };
      break;
    }
    case 'runtime_note': item = { ...base, type: 'note', text: d.text }; break;
    default: item = { ...base, type: 'note', text: SCHEDULE_NOTES[event.kind](d) };
  }
  if ((event.kind === 'task_created' || event.kind === 'plan_updated' || event.kind === 'question'
       || event.kind === 'task_finished') && !event.task) return [];
  conv.items.push(item);
  return [item];
}
