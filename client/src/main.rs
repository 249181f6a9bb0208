//! The `lazyboy` binary; everything is in `lazyboy::app` so tests run the same code.

fn main() -> std::process::ExitCode {
    lazyboy::app::main()
}
