//! The `lazyboy` binary; everything is in `lazyboy::app` so tests run the same code. The git
//! commit it was built from comes from `dist/build.rs`.

fn main() -> std::process::ExitCode {
    lazyboy::app::main(env!("LAZYBOY_COMMIT"))
}
