//! `lazyboy completions SHELL`: a completion script generated from the CLI's own grammar, so
//! it always knows every verb and flag of this build.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

pub fn run(shell: Shell) -> anyhow::Result<i32> {
    let mut command = Cli::command();
    let name = command.get_name().to_owned();
    clap_complete::generate(shell, &mut command, name, &mut std::io::stdout());
    Ok(0)
}
