//! `lazyboy-sandbox`, the sandbox helper on Linux: `lazyboy-sandbox [--sandbox-exec] [-r PATH |
//! -w PATH]... -- SHELL -c SCRIPT` confines itself with Landlock, then execs the shell (see
//! the `lazyboy-sandbox` crate, `confine/`). Installed beside `lazyboyd`, which runs it for
//! every confined command: it links only that small crate, so starting it costs a fraction
//! of starting the daemon.

fn main() -> std::process::ExitCode {
    lazyboy_sandbox::helper_main()
}
