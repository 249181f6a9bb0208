//! Text output: one line per event, and small tables.

use lazyboy_protocol::{Agent, Event, EventBody};

/// `#seq agent kind summary`, on one line.
pub fn event_line(event: &Event) -> String {
    let summary = match event.body() {
        Some(EventBody::UserMessage { text }) => one_line(&text),
        Some(EventBody::AgentCreated { model, .. }) => {
            model.map(|m| format!("model {m}")).unwrap_or_default()
        }
        Some(EventBody::AgentDeleted {}) => String::new(),
        None => one_line(&event.data.to_string()),
    };
    format!("#{} {} {} {}", event.seq, event.agent, event.kind, summary)
        .trim_end()
        .to_owned()
}

/// Agents as an aligned table.
pub fn agent_table(agents: &[Agent]) -> String {
    let width = agents
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut out = format!("{:width$}  MODEL\n", "NAME");
    for agent in agents {
        let model = agent.model.as_deref().unwrap_or("(default)");
        out.push_str(&format!("{:width$}  {model}\n", agent.name));
    }
    out
}

fn one_line(text: &str) -> String {
    const MAX: usize = 120;
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > MAX {
        let cut: String = flat.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
