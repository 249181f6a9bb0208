//! The end-to-end suites, one module each, in one test binary: against the real daemon and
//! CLI binaries (`lazyboy_tests::bin`), real HTTP, Docker, Chromium, MCP servers and PostgreSQL.
//! One binary rather than one per suite: each suite links the whole daemon, and forty-odd
//! copies of it cost minutes of linking and gigabytes of disk (a CI run failed linking them). Run one
//! suite with `cargo test -p lazyboy-tests --test e2e <suite>::`.

#[path = "agent/main.rs"]
mod agent;
mod agents;
mod api;
mod approval_shown;
mod approvals;
#[path = "auth/main.rs"]
mod auth;
mod boundaries;
mod box_browser;
mod box_crash;
mod box_docker;
mod box_help;
mod box_input;
mod box_lock;
#[path = "box_reach/main.rs"]
mod box_reach;
mod box_screen;
mod cli;
mod confined_workspaces;
mod containment;
mod context;
mod crash;
#[path = "dashboard/main.rs"]
mod dashboard;
mod dashboard_approval;
mod dashboard_live;
mod dashboard_visible;
mod defaults;
mod doctor;
mod fleet;
mod git_files;
#[path = "keep/main.rs"]
mod keep;
mod lan;
mod lifecycle;
mod mcp;
#[path = "mcp_server/main.rs"]
mod mcp_server;
#[path = "notify/main.rs"]
mod notify;
#[path = "providers/main.rs"]
mod providers;
#[path = "redaction/main.rs"]
mod redaction;
mod registry;
#[path = "release/main.rs"]
mod release;
mod sandbox_gaps;
mod schedules;
mod secrets;
mod security;
#[path = "service/main.rs"]
mod service;
mod sse_churn;
mod subagents;
#[path = "team/main.rs"]
mod team;
mod web;
mod workspace_files;
mod workspace_races;

/// Cargo discovers no suite by itself here (`autotests = false`), so a suite left out of the
/// list above would never run: every file and folder beside this one must be a module of it.
#[test]
fn every_suite_in_the_folder_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let root = std::fs::read_to_string(dir.join("e2e.rs")).unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let module = name.strip_suffix(".rs").unwrap_or(&name);
        if module != "e2e" && !root.lines().any(|l| l == format!("mod {module};")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "suites not in tests/e2e.rs: {missing:?}"
    );
}
