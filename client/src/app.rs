//! The `lazyboy` entry point: parse, run one command on a single-threaded runtime, exit.

use std::process::ExitCode;

use crate::cli::{Cli, Command, McpCommand, RetentionCommand};
use crate::commands;
use crate::connection::Client;
use crate::daemon_proc;
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};
use lazyboy_protocol::paths;

/// The git commit this binary was built from (`unknown` until [`main`] says).
static COMMIT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// The git commit this binary was built from.
pub fn commit() -> &'static str {
    COMMIT.get().copied().unwrap_or("unknown")
}

/// Runs the CLI with the process's arguments; `commit` is the git commit it was built from
/// (the binary's, see `dist/build.rs`), which `--version` and `doctor` report.
pub fn main(commit: &'static str) -> ExitCode {
    end_quietly_on_broken_pipe();
    let _ = COMMIT.set(commit);
    let version = lazyboy_protocol::build_name(env!("CARGO_PKG_VERSION"), commit);
    // clap wants a 'static str; this runs once per process.
    let version: &'static str = Box::leak(version.into_boxed_str());
    let command = Cli::command().version(version);
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("lazyboy: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(error) => {
            eprintln!("lazyboy: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Exit code of a command whose reader went away (128 + SIGPIPE, what a shell reports).
pub const BROKEN_PIPE: i32 = 141;

/// A reader that goes away (`lazyboy tasks | head -1`) ends the output as for any Unix tool:
/// exit 141, no message. Rust ignores SIGPIPE, so `println!` panics on EPIPE instead, and
/// restoring the signal's default disposition needs `unsafe`, which is denied here.
fn end_quietly_on_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map_or("", String::as_str);
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(BROKEN_PIPE);
        }
        report(info);
    }));
}

async fn run(cli: Cli) -> anyhow::Result<i32> {
    // Needs neither a home nor a daemon.
    if let Some(Command::Completions { shell }) = cli.command {
        return commands::completions::run(shell);
    }
    let home = paths::home(cli.home).context("no home directory: set LAZYBOY_HOME")?;
    let client = Client::new(home);
    let Some(command) = cli.command else {
        daemon_proc::ensure_running(&client).await?;
        return commands::run::repl(&client, cli.json).await;
    };
    match command {
        Command::Daemon(command) => commands::daemon::run(&client, command, cli.json).await,
        Command::Service(command) => commands::service::run(&client, command, cli.json).await,
        Command::Team(command) => {
            daemon_proc::ensure_running(&client).await?;
            commands::team::run(&client, command, cli.json).await
        }
        Command::Run(args) => {
            daemon_proc::ensure_running(&client).await?;
            commands::run::run(&client, args, cli.json).await
        }
        Command::Completions { shell } => commands::completions::run(shell),
        Command::Tell { agent, text, note } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tell::run(&client, &agent, &text, note, cli.json).await
        }
        Command::Ask {
            agent,
            objective,
            workspace,
        } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::ask(&client, &agent, &objective, workspace, cli.json).await
        }
        Command::Tasks { agent, state } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::list(&client, agent.as_deref(), state.as_deref(), cli.json).await
        }
        Command::Follow { task } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::follow(&client, &task, cli.json).await
        }
        Command::Stop { task } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::stop(&client, &task, cli.json).await
        }
        Command::Continue { task } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::continue_task(&client, &task, cli.json).await
        }
        Command::Approve {
            task,
            for_task,
            show,
        } => {
            daemon_proc::ensure_running(&client).await?;
            if show {
                commands::approve::show(&client, &task, cli.json).await
            } else {
                commands::approve::approve(&client, &task, for_task, cli.json).await
            }
        }
        Command::Deny { task, reason } => {
            daemon_proc::ensure_running(&client).await?;
            commands::approve::deny(&client, &task, reason, cli.json).await
        }
        Command::Answer { task, text, option } => {
            daemon_proc::ensure_running(&client).await?;
            commands::tasks::answer(&client, &task, text, option, cli.json).await
        }
        Command::Nodes => {
            daemon_proc::ensure_running(&client).await?;
            commands::nodes::run(&client, cli.json).await
        }
        Command::Schedule(command) => {
            daemon_proc::ensure_running(&client).await?;
            commands::schedule::run(&client, command, cli.json).await
        }
        Command::Mcp(McpCommand::Serve {
            agents,
            print_config,
        }) => commands::mcp_serve::run(&client, agents, print_config, cli.json).await,
        Command::Mcp(command) => {
            daemon_proc::ensure_running(&client).await?;
            commands::mcp::run(&client, command, cli.json).await
        }
        Command::Notify(command) => {
            daemon_proc::ensure_running(&client).await?;
            commands::notify::run(&client, command, cli.json).await
        }
        Command::Doctor => commands::doctor::run(&client, cli.json).await,
        Command::Web { print } => commands::web::run(&client, print, cli.json).await,
        Command::Box(command) => commands::boxes::run(&client, command, cli.json).await,
        Command::Events(args) => {
            daemon_proc::ensure_running(&client).await?;
            commands::events::run(&client, args, cli.json).await
        }
        Command::Backup { file, with_secrets } => {
            daemon_proc::ensure_running(&client).await?;
            commands::keep::backup(&client, file, with_secrets, cli.json).await
        }
        // No daemon: the restore refuses a home one runs on.
        Command::Restore { file } => commands::keep::restore(&client, &file),
        Command::Export {
            task,
            format,
            output,
        } => {
            daemon_proc::ensure_running(&client).await?;
            commands::keep::export(&client, &task, &format, output).await
        }
        Command::Retention(RetentionCommand::Run { dry_run, days }) => {
            daemon_proc::ensure_running(&client).await?;
            commands::keep::retention(&client, dry_run, days, cli.json).await
        }
    }
}
