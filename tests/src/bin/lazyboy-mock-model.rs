//! The test's mock model ([`lazyboy_tests::mock_model::MockModel`]) as a program of its own,
//! for a machine the test process is not on: the clean Debian container of the release tests
//! runs it beside the installed daemon (same glibc: Debian 12 builds it).
//!
//! `lazyboy-mock-model PORT_FILE` serves on `127.0.0.1:0`, writes the port to `PORT_FILE`, and
//! serves until killed. Its one behaviour, from each request: a task whose objective is
//! `run: CMD` gets an `exec_command` of `CMD`, then, once that call's result is in, the text
//! `result: <the output>`; every other request (`lazyboy doctor`'s probe, say) gets `ok`.

use lazyboy_tests::mock_model::{MockModel, Reply, SeenMessage};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(port_file) = std::env::args().nth(1) else {
        eprintln!("usage: lazyboy-mock-model PORT_FILE");
        std::process::exit(2);
    };
    let mock = MockModel::start().await;
    mock.set_fallback_fn(|request| {
        if let Some(result) = request.tool_result_for("run1") {
            return Reply::text(format!("result: {result}"));
        }
        let objective = request.messages.iter().find_map(|m| match m {
            SeenMessage::User { text } => text.strip_prefix("run: ").map(str::to_owned),
            _ => None,
        });
        match objective {
            Some(cmd) if request.tools.iter().any(|t| t == "exec_command") => {
                Reply::tool_call("run1", "exec_command", json!({ "cmd": cmd }))
            }
            _ => Reply::text("ok"),
        }
    });
    std::fs::write(&port_file, mock.addr().port().to_string()).expect("write the port file");
    std::future::pending::<()>().await;
}
