//! Release benchmarks (issue 20): the binaries' and packages' sizes, the time from `dpkg -i`
//! to a running daemon on a clean Debian container, migrations over a 1M-event database, and
//! `lazyboy daemon restart` with 8 tasks in the middle of a tool call.
//!
//! `scripts/package && cargo bench -p lazyboy-tests --bench release` — prints a markdown
//! table for `docs/benchmarks.md`. Needs Docker (the clean container) and the dist packages
//! (`target/package/dist/`, of whatever commit: the table names it). `BENCH_QUICK=1`: fewer
//! repetitions; `BENCH_PART=daemon|packages`: one half.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::clean::{Container, Packages, base_image};

mod migrations;
mod restart;

type Row = (String, String, String);

fn main() {
    bench::runtime().block_on(run());
}

async fn run() {
    // `BENCH_PART=daemon` or `packages`: one half only (the packages' half needs a dist
    // build, the daemon's half none).
    let part = std::env::var("BENCH_PART").unwrap_or_default();
    println!("| measure | result | target |\n|---|---|---|");
    if part != "packages" {
        // The daemon's own measures first: they need no packages.
        let mut rows = Vec::new();
        migrations::million(&mut rows).await;
        restart::eight_tasks(&mut rows).await;
        print(&rows);
    }
    if part != "daemon" {
        let packages = Packages::read("dist");
        println!(
            "| the packages measured below: commit {}, profile {} | — | — |",
            packages.commit, packages.profile
        );
        let mut rows = Vec::new();
        sizes(&packages, &mut rows);
        install(&packages, &mut rows);
        print(&rows);
    }
}

fn print(rows: &[Row]) {
    for (measure, result, target) in rows {
        println!("| {measure} | {result} | {target} |");
    }
}

fn mib(path: &Path) -> f64 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .len() as f64
        / (1024.0 * 1024.0)
}

/// The shipped binaries (symbol table kept, line tables split off), the same before the split
/// (`target/dist/`), and the packages.
fn sizes(packages: &Packages, rows: &mut Vec<Row>) {
    let stage = packages.dir.join("stage/lazyboy/bin");
    // target/package/dist/ → target/dist/, where cargo put them.
    let dist = packages
        .dir
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("dist");
    for (bin, target) in [
        ("lazyboyd", "≤ 25 MB"),
        ("lazyboy", "≤ 8 MB"),
        ("lazyboy-sandbox", "≤ 2 MB"),
    ] {
        rows.push((
            format!("`{bin}` shipped (before the split: with line tables)"),
            format!(
                "{:.1} MiB ({:.1} MiB)",
                mib(&stage.join(bin)),
                mib(&dist.join(bin))
            ),
            target.into(),
        ));
    }
    for (what, path) in [
        ("tarball", &packages.tarball),
        ("Debian package", &packages.deb),
        ("debug info (kept, not shipped)", &packages.debug),
    ] {
        rows.push((
            format!("{what}: {}", path.file_name().unwrap().to_string_lossy()),
            format!("{:.1} MiB", mib(path)),
            "report".into(),
        ));
    }
}

/// `dpkg -i` → `lazyboy daemon start` answered, as the person, on a fresh container each time.
fn install(packages: &Packages, rows: &mut Vec<Row>) {
    let base = base_image();
    let runs = if quick() { 2 } else { 5 };
    let mut took = Vec::new();
    for _ in 0..runs {
        let machine = Container::start(&base, "bench");
        machine.sh_ok("root", "useradd -m -s /bin/sh person");
        machine.put(&packages.deb, "/tmp/lazyboy.deb");
        let started = Instant::now();
        machine.sh_ok("root", "dpkg -i /tmp/lazyboy.deb >/dev/null");
        machine.sh_ok("person", "lazyboy daemon start >/dev/null");
        took.push(started.elapsed());
    }
    rows.push((
        format!("`dpkg -i` → daemon answering, clean container (median of {runs})"),
        format!("{:.2} s", median(took).as_secs_f64()),
        "report".into(),
    ));
    // What one `docker exec` costs, included twice above.
    let machine = Container::start(&base, "bench");
    let mut exec = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let status = Command::new("docker")
            .args(["exec", &machine.name, "true"])
            .status()
            .unwrap();
        assert!(status.success());
        exec.push(started.elapsed());
    }
    rows.push((
        "… of which one `docker exec` (median of 5)".into(),
        format!("{:.0} ms", median(exec).as_secs_f64() * 1000.0),
        "—".into(),
    ));
}
