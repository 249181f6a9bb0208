//! The `lazyboyd` binary; everything is in `lazyboyd::cli` so tests run the same code.

fn main() -> std::process::ExitCode {
    lazyboyd::cli::main()
}
