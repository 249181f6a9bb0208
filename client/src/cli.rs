//! The command-line grammar.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::service_file::Platform;

/// LazyBoy: local AI agents that keep working after you close the terminal.
#[derive(Debug, Parser)]
#[command(name = "lazyboy", version)]
pub struct Cli {
    /// The home directory of the daemon to talk to. Default: $LAZYBOY_HOME, else the
    /// platform data dir.
    #[arg(long, global = true)]
    pub home: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start, stop or inspect the daemon.
    #[command(subcommand)]
    Daemon(DaemonCommand),
    /// Manage the team: named agents with their own instructions, model, workspace and memory.
    #[command(subcommand, alias = "agent")]
    Team(TeamCommand),
    /// Run the daemon as a login service (systemd user unit on Linux, launchd agent on macOS).
    #[command(subcommand)]
    Service(ServiceCommand),
    /// The box: the agents' shared Linux desktop in Docker (build its image, see who holds
    /// it, start or stop it).
    #[command(subcommand, name = "box")]
    Box(BoxCommand),
    /// Print the event log.
    Events(EventsArgs),
    /// Back up the home while the daemon runs: a consistent copy of the database, the config
    /// and a manifest, in one .tar.gz (mode 0600). Default FILE:
    /// <home>/backups/lazyboy-<time>.tar.gz. On PostgreSQL, prints the pg_dump line to use.
    Backup {
        /// Where to write the archive (must not exist).
        file: Option<PathBuf>,
        /// Also the secrets kept as files (the API token).
        #[arg(long)]
        with_secrets: bool,
    },
    /// Put a backup back, with the daemon stopped (refused while one runs on the home): the
    /// archive is checked whole first; the replaced files are kept as *.before-restore-*.
    Restore { file: PathBuf },
    /// A task as a record: objective, plan, messages, tool calls with results, verdict,
    /// deliverables, usage.
    Export {
        task: String,
        /// md (for people; GitHub renders it) or json (for programs; round-trips).
        #[arg(long, default_value = "md", value_parser = ["md", "json"])]
        format: String,
        /// Write it here instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Replace old tool outputs with stubs and reclaim the space ([retention]
    /// tool_output_days in config.toml).
    #[command(subcommand)]
    Retention(RetentionCommand),
    /// Hand an agent a job on a cron schedule (crontab syntax, local time); schedules fire
    /// with no client attached and survive restarts.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Hand an agent a task in the current directory and follow it to the end. Exit code:
    /// 0 answer/done, 1 blocked/budget_exhausted/failed, 130 cancelled (Ctrl-C).
    Run(RunArgs),
    /// Write to an agent as a person does: steer its running task, answer its open question,
    /// or (idle) start a task with the text as the job. Prints what the message did.
    Tell {
        agent: String,
        text: String,
        /// Only record it in the agent's chat thread (no task starts, none is steered).
        #[arg(long)]
        note: bool,
    },
    /// Open the dashboard signed in: prints a one-time login link and, in a terminal, opens
    /// it in the browser (which then stays signed in).
    Web {
        /// Only print the link.
        #[arg(long)]
        print: bool,
    },
    /// Print a shell completion script, e.g. `lazyboy completions bash >
    /// ~/.local/share/bash-completion/completions/lazyboy`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Queue a background task for an agent and return at once with its id.
    Ask {
        agent: String,
        objective: String,
        /// The directory to work in (default: the agent's workspace under the home).
        #[arg(long)]
        workspace: Option<PathBuf>,
    },
    /// List tasks, newest first.
    Tasks {
        #[arg(long)]
        agent: Option<String>,
        /// queued, running, waiting_for_human, recovering, done, blocked, failed, cancelled,
        /// budget_exhausted
        #[arg(long)]
        state: Option<String>,
    },
    /// Follow a task live (resuming after disconnects); exits with its verdict's code.
    Follow { task: String },
    /// Stop a task (a queued one never starts).
    Stop { task: String },
    /// Continue a task that ended (blocked, failed, out of budget, stopped) with its history.
    Continue { task: String },
    /// List the daemons (nodes) sharing this daemon's database: heartbeat, running tasks.
    Nodes,
    /// MCP: the servers agents use (their state and tools, or test one), and `serve`: the
    /// team as an MCP server for other agents and editors.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Notifications when no dashboard is open: the channels (Web Push devices, ntfy,
    /// webhook, email) and their last delivery, or send a test through each.
    #[command(subcommand)]
    Notify(NotifyCommand),
    /// Check the setup: config, model, MCP servers, web search, Docker and the box image,
    /// the service. One line each with how to fix it; exit code 1 if anything fails.
    Doctor,
    /// Approve the call a task waits on: it runs, then the task goes on.
    Approve {
        task: String,
        /// Also approve the same call (same command, file or URL) for the rest of the task.
        #[arg(long, conflicts_with = "show")]
        for_task: bool,
        /// Approve nothing: print the whole call the task waits on, every line, nothing cut.
        #[arg(long)]
        show: bool,
    },
    /// Deny the call a task waits on: it never runs; the agent is told why.
    Deny {
        task: String,
        /// What the agent reads ("denied by the person: <reason>").
        reason: Option<String>,
    },
    /// Answer a task's question (free text, or --option N); the same task resumes.
    Answer {
        task: String,
        /// The answer, as text.
        text: Option<String>,
        /// The number of one of the question's options (1 is the first).
        #[arg(long)]
        option: Option<usize>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do.
    pub objective: String,
    /// The agent to give it to.
    #[arg(long, default_value = "default")]
    pub agent: String,
    /// The directory to work in (default: the current directory).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum BoxCommand {
    /// Build the box's image (lazyboy/box:<hash>, tagged :latest) with Docker; needs no
    /// daemon. Skipped when the image for these sources exists.
    Build {
        /// Build even if it exists (Docker's layer cache still applies).
        #[arg(long)]
        force: bool,
    },
    /// The box's state, who holds its screen and who waits (`--json` for the API's answer).
    Status,
    /// Start the box (create its container on first use) and wait until its browser answers.
    Start,
    /// Stop the box, closing its browser first so logins are kept.
    Stop,
}

#[derive(Debug, Subcommand)]
pub enum DaemonCommand {
    /// Start a detached daemon (does nothing if one is running).
    Start {
        /// Its node name among daemons sharing a PostgreSQL database (default: the host
        /// name); agents pinned to it (`team add --node`) run only there.
        #[arg(long)]
        node: Option<String>,
        #[command(flatten)]
        reach: ReachArgs,
    },
    /// Restart the daemon (after an upgrade: the new lazyboyd takes over). Running tool
    /// calls finish and record their results first; nothing new starts meanwhile; then the
    /// new daemon resumes every task from there, re-running nothing. Under the service
    /// manager the manager starts it again; otherwise with the flags given, or the old
    /// daemon's own.
    Restart {
        /// Its node name among daemons sharing a PostgreSQL database.
        #[arg(long)]
        node: Option<String>,
        #[command(flatten)]
        reach: ReachArgs,
        /// How long running tool calls may take to finish, in seconds; past it they are cut
        /// off (their tasks are told the outcome is unknown).
        #[arg(long, value_name = "SECS", default_value_t = 60)]
        wait: u64,
    },
    /// Stop the daemon gracefully.
    Stop,
    /// Print pid, version, home and dashboard URL.
    Status,
    /// Print the token for non-loopback listeners, creating it if needed.
    Token {
        /// Replace the existing token; a running daemon refuses the old one at once.
        #[arg(long)]
        rotate: bool,
    },
}

/// How the dashboard is reached from other devices.
#[derive(Debug, Clone, Default, Args)]
pub struct ReachArgs {
    /// Listen on every interface (port $LAZYBOY_WEB_PORT, default 8787) with the token
    /// (created if missing), and print each LAN URL with a QR code of it, for a phone on
    /// the same network.
    #[arg(long)]
    pub lan: bool,
    /// Serve HTTPS with this PEM certificate chain (a Tailscale or mkcert certificate): a
    /// phone's browser gives the dashboard its service worker and notifications only then.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Write the service file for this home and load it (start now and at every login).
    Install(ServiceInstallArgs),
    /// Stop the service and remove its file (nothing to do if it is not installed).
    Uninstall {
        /// Which service manager's file (default: this machine's).
        #[arg(long, value_enum, hide = true)]
        platform: Option<Platform>,
    },
    /// Where the service file is, whether it exists, and what the service manager says.
    /// Exit code 3 if it is not installed.
    Status {
        /// Which service manager's file (default: this machine's).
        #[arg(long, value_enum, hide = true)]
        platform: Option<Platform>,
    },
}

#[derive(Debug, Args)]
pub struct ServiceInstallArgs {
    /// Print the generated file; write and load nothing.
    #[arg(long, visible_alias = "dry-run")]
    pub print: bool,
    /// Write the file but do not load it.
    #[arg(long, conflicts_with = "print")]
    pub no_load: bool,
    /// Passed to `lazyboyd --listen` (default: 127.0.0.1:8787).
    #[arg(long, conflicts_with = "lan")]
    pub listen: Option<SocketAddr>,
    #[command(flatten)]
    pub reach: ReachArgs,
    /// Generate the file for this service manager instead of this machine's (linux, macos);
    /// it is only loaded on its own platform.
    #[arg(long, value_enum, hide = true)]
    pub platform: Option<Platform>,
}

#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Add an agent.
    Add {
        name: String,
        #[command(flatten)]
        settings: AgentSettings,
    },
    /// List agents: state, current task, age of the last heartbeat.
    Ls,
    /// Show one agent.
    Show { name: String },
    /// Change an agent's instructions, model or workspace (its next tasks use them).
    Edit {
        name: String,
        #[command(flatten)]
        settings: AgentSettings,
    },
    /// Start the agent's conversation afresh: later tasks no longer see what came before
    /// (it stays in the log; read_conversation reaches it only when asked).
    Clear { name: String },
    /// Remove an agent (its events stay in the log). Refused while it runs a task.
    Rm {
        name: String,
        /// Stop its running task first.
        #[arg(long)]
        force: bool,
    },
}

/// What `team add` and `team edit` set.
#[derive(Debug, Args)]
pub struct AgentSettings {
    /// Standing instructions (its system prompt's own part).
    #[arg(long, conflicts_with = "instructions_file")]
    pub instructions: Option<String>,
    /// Read the instructions from a file.
    #[arg(long)]
    pub instructions_file: Option<PathBuf>,
    /// The model: MODEL (the default provider's) or PROVIDER/MODEL; "" for the default.
    #[arg(long)]
    pub model: Option<String>,
    /// The directory its tasks work in; "" for the default (under the home).
    #[arg(long)]
    pub workspace: Option<String>,
    /// Pin its tasks to this node (several daemons on one PostgreSQL): only that daemon
    /// runs them. "" unpins it.
    #[arg(long)]
    pub node: Option<String>,
    /// Effects whose calls wait for your approval, comma-separated: command,
    /// workspace_write, network, box; "" for none (the default).
    #[arg(long, value_name = "EFFECTS")]
    pub approve: Option<String>,
    /// An exec_command rule that needs no approval: "git status" (exactly), "cargo test*"
    /// (a prefix); repeat it for more; "" clears the list.
    #[arg(long, value_name = "RULE")]
    pub allow: Option<Vec<String>>,
    /// Where its host commands may write: workspace-write (the default for named agents),
    /// read-only, or off (unconfined; the default for `default`).
    #[arg(long, value_parser = ["workspace-write", "read-only", "off"])]
    pub sandbox: Option<String>,
    /// Whether its workspace-write commands may change the repositories' .git (config,
    /// hooks, the index: what git runs programs from, as you): true, or false (the default:
    /// read-only, so its commands cannot commit).
    #[arg(long, value_name = "BOOL")]
    pub git_write: Option<bool>,
    /// The MCP servers its tasks get, comma-separated names of [mcp.servers.NAME] in
    /// config.toml; "" for none.
    #[arg(long)]
    pub mcp: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Each channel: where it sends, which kinds, its last delivery and failures.
    Ls,
    /// Send a test notification through every channel (or one: ntfy, webhook, email,
    /// web_push or web_push:ID) and print each one's result; exit code 1 if any failed.
    Test {
        #[arg(long)]
        channel: Option<String>,
    },
}

/// What `lazyboy mcp serve --help` prints after the options: configs ready to paste.
const SERVE_HELP: &str = r#"Put it in a client's config (the client starts it and keeps it running; it starts the
daemon when needed):

Claude Desktop (claude_desktop_config.json), Cursor (~/.cursor/mcp.json):
  {"mcpServers": {"lazyboy": {"command": "lazyboy", "args": ["mcp", "serve"]}}}

Codex (~/.codex/config.toml; wait_task may wait up to 600 s):
  [mcp_servers.lazyboy]
  command = "lazyboy"
  args = ["mcp", "serve"]
  tool_timeout_sec = 660

Zed (settings.json):
  "context_servers": {"lazyboy": {"source": "custom", "command": "lazyboy", "args": ["mcp", "serve"]}}

Add "--agents", "a,b" to the args to let that client see and use only those agents.
Streamable HTTP instead (another machine, or a client without stdio): `lazyboy mcp serve
--print-config` prints the URL and the bearer token."#;

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Each configured server: its state, and its tools once it has run.
    Ls,
    /// Start (or reach) a server now and list its tools; exit code 1 if it fails.
    Test { name: String },
    /// Serve the team as MCP tools on stdio, for Claude Desktop, Codex, Cursor, Zed or any
    /// MCP client: ask a named agent for a long job, come back for the result.
    #[command(after_long_help = SERVE_HELP)]
    Serve {
        /// Only these agents (comma-separated) are visible and usable by this client.
        #[arg(long)]
        agents: Option<String>,
        /// Print the config to paste (stdio, and the HTTP URL with its bearer token) instead
        /// of serving.
        #[arg(long)]
        print_config: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Add a schedule: at every slot of CRON, AGENT gets JOB as a background task in its
    /// workspace.
    Add {
        agent: String,
        /// Five fields (minute hour day-of-month month day-of-week, e.g. "0 9 * * MON-FRI"),
        /// or six with seconds first; read in the local time zone.
        cron: String,
        /// The job: the objective of each task.
        job: String,
        /// Skip a slot missed while the daemon was down (by default it runs once at start).
        #[arg(long)]
        skip_missed: bool,
    },
    /// List schedules with their next run (local time).
    Ls {
        #[arg(long)]
        agent: Option<String>,
    },
    /// Remove a schedule (its history stays in the event log).
    Rm { id: String },
    /// Pause a schedule: it fires no more until resumed.
    Pause { id: String },
    /// Resume a paused schedule from its next slot (slots that went by are not run).
    Resume { id: String },
}

#[derive(Debug, Args)]
pub struct EventsArgs {
    /// Only this agent's events.
    #[arg(long)]
    pub agent: Option<String>,
    /// Start after this seq (0 = from the beginning).
    #[arg(long, default_value_t = 0)]
    pub after: i64,
    /// Keep following new events; reconnects and resumes after the last one printed.
    #[arg(long, short)]
    pub follow: bool,
}

#[derive(Debug, Subcommand)]
pub enum RetentionCommand {
    /// One pass now.
    Run {
        /// Print what it would free; change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Tasks that ended more than this many days ago (default: the config's).
        #[arg(long)]
        days: Option<u32>,
    },
}
