//! The `lazyboy` binary: parse, run one command on a single-threaded runtime, exit.

use std::process::ExitCode;

use anyhow::Context;
use clap::{CommandFactory, Parser};
use lazyboy::cli::{Cli, Command};
use lazyboy::commands;
use lazyboy::connection::Client;
use lazyboy::daemon_proc;
use lazyboy_protocol::paths;

fn main() -> ExitCode {
    let cli = Cli::parse();
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

async fn run(cli: Cli) -> anyhow::Result<i32> {
    let home = paths::home(cli.home).context("no home directory: set LAZYBOY_HOME")?;
    let client = Client::new(home);
    let Some(command) = cli.command else {
        Cli::command().print_help()?;
        return Ok(0);
    };
    match command {
        Command::Daemon(command) => commands::daemon::run(&client, command, cli.json).await,
        Command::Agent(command) => {
            daemon_proc::ensure_running(&client).await?;
            commands::agent::run(&client, command, cli.json).await
        }
        Command::Events(args) => {
            daemon_proc::ensure_running(&client).await?;
            commands::events::run(&client, args, cli.json).await
        }
    }
}
