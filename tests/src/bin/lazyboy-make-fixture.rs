//! `lazyboy-make-fixture OLD_LAZYBOYD OUT_DIR`: makes the upgrade fixture
//! ([`lazyboy_tests::upgrade::make`]) with an older release's daemon. Run through
//! `scripts/make-upgrade-fixture`, which builds that daemon from its git tag.

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args_os().skip(1);
    let (Some(binary), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: lazyboy-make-fixture OLD_LAZYBOYD OUT_DIR");
        std::process::exit(2);
    };
    lazyboy_tests::upgrade::make(binary.as_ref(), out.as_ref()).await;
    println!("wrote {}", std::path::Path::new(&out).display());
}
