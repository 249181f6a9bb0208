//! The `lazyboyd` binary; everything is in `lazyboyd::cli` so tests run the same code. The
//! git commit it was built from comes from `dist/build.rs`.

fn main() -> std::process::ExitCode {
    lazyboyd::cli::main(env!("LAZYBOY_COMMIT"))
}
