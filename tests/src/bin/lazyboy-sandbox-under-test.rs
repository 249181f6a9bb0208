//! `lazyboy-sandbox` as the tests run it, beside `lazyboyd-under-test` (which finds it there):
//! the same small crate the shipped helper is.

fn main() -> std::process::ExitCode {
    lazyboy_sandbox::helper_main()
}
