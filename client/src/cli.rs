//! The command-line grammar.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// Manage agents.
    #[command(subcommand)]
    Agent(AgentCommand),
    /// Print the event log.
    Events(EventsArgs),
    /// Hand an agent a job on a cron schedule (crontab syntax, local time); schedules fire
    /// with no client attached and survive restarts.
    #[command(subcommand)]
    Schedule(ScheduleCommand),
    /// Hand an agent a task in the current directory and follow it to the end. Exit code:
    /// 0 answer/done/waiting, 1 blocked/budget_exhausted/failed, 130 cancelled (Ctrl-C).
    Run(RunArgs),
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
pub enum DaemonCommand {
    /// Start a detached daemon (does nothing if one is running).
    Start,
    /// Stop the daemon gracefully.
    Stop,
    /// Print pid, version, home and dashboard URL.
    Status,
    /// Print the token for non-loopback listeners, creating it if needed.
    Token {
        /// Replace the existing token.
        #[arg(long)]
        rotate: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum AgentCommand {
    /// Create an agent.
    Add {
        name: String,
        #[arg(long)]
        instructions: Option<String>,
        #[arg(long)]
        model: Option<String>,
    },
    /// List agents.
    Ls,
    /// Delete an agent (its events stay in the log).
    Rm { name: String },
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
