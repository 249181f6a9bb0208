//! `lazyboy completions SHELL`: a completion script generated from the CLI's own grammar, so
//! it always knows every verb and flag of this build.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

pub fn run(shell: Shell) -> anyhow::Result<i32> {
    let mut command = Cli::command();
    let name = command.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, name, &mut script);
    // Printed, not written: a reader that goes away ends it like any other output.
    print!("{}", String::from_utf8_lossy(&script));
    Ok(0)
}
