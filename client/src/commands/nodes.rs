//! `lazyboy nodes`: the daemons sharing this daemon's database, each with its heartbeat and
//! the tasks it runs.

use lazyboy_protocol::NodeList;

use crate::connection::Client;
use crate::render;

pub async fn run(client: &Client, json: bool) -> anyhow::Result<i32> {
    let list: NodeList = client.get("/api/nodes").await?;
    if json {
        println!("{}", serde_json::to_string(&list)?);
    } else {
        print!("{}", table(&list, render::now_ms()));
    }
    Ok(0)
}

/// One line per node: name (`*` for the one that answered), state, heartbeat age, pid, its
/// running tasks.
pub fn table(list: &NodeList, now_ms: i64) -> String {
    if list.nodes.is_empty() {
        return "no nodes\n".to_owned();
    }
    let mut out = format!(
        "{:<2}{:<24} {:<8} {:>10} {:>8}  {}\n",
        "", "NODE", "STATE", "HEARTBEAT", "PID", "RUNNING"
    );
    for node in &list.nodes {
        let state = if node.alive {
            "alive"
        } else if node.stopped_at_ms.is_some() {
            "stopped"
        } else {
            "gone"
        };
        let age = (now_ms - node.heartbeat_at_ms).max(0) / 1000;
        let running = if node.running.is_empty() {
            "-".to_owned()
        } else {
            node.running.join(" ")
        };
        out.push_str(&format!(
            "{:<2}{:<24} {:<8} {:>9}s {:>8}  {}\n",
            if node.name == list.this { "*" } else { "" },
            render::clean(&node.name),
            state,
            age,
            node.pid,
            running
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::Node;

    use super::*;

    #[test]
    fn the_table_marks_this_node_and_says_who_is_alive() {
        let node = |name: &str, alive: bool, stopped: Option<i64>, running: &[&str]| Node {
            name: name.into(),
            pid: 7,
            url: String::new(),
            version: "0.1.0".into(),
            started_at_ms: 0,
            heartbeat_at_ms: 10_000,
            stopped_at_ms: stopped,
            alive,
            running: running.iter().map(|s| (*s).to_owned()).collect(),
        };
        let list = NodeList {
            this: "b".into(),
            nodes: vec![
                node("a", false, Some(1), &[]),
                node("b", true, None, &["t-1", "t-2"]),
                node("c", false, None, &["t-3"]),
            ],
        };
        let table = table(&list, 15_000);
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[1].contains("stopped") && lines[1].ends_with('-'),
            "{table}"
        );
        assert!(
            lines[2].starts_with("* b") && lines[2].contains("alive"),
            "{table}"
        );
        assert!(
            lines[2].contains("5s") && lines[2].ends_with("t-1 t-2"),
            "{table}"
        );
        assert!(lines[3].contains("gone"), "{table}");
    }
}
