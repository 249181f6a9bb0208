//! A clean machine for the release tests and bench: a fresh Debian bookworm container (the box
//! build's base image, `box/build.sh --base`: `debian:bookworm-slim`, or the debootstrap
//! import where no registry answers) with no network, the packages `scripts/package` built,
//! and the mock model as a program (`lazyboy-mock-model`) to run inside it.
//!
//! Every container is named after this process and removed when dropped. The one image made
//! here, the verifier (the base plus Debian's `systemd`, for `systemd-analyze verify`), is
//! cached under a tag naming its base image's id: made once per base, then reused.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn ok(command: &mut Command) -> String {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// What `scripts/package` built (`target/package/<profile>/BUILD`).
#[derive(Debug, Clone)]
pub struct Packages {
    pub dir: PathBuf,
    pub version: String,
    pub commit: String,
    /// The cargo profile the binaries came from: `dist` (the release) or `dev` (what
    /// scripts/test installs: the same packaging from the debug build, see scripts/package).
    pub profile: String,
    pub tarball: PathBuf,
    pub debug: PathBuf,
    pub deb: PathBuf,
    pub install_sh: PathBuf,
}

impl Packages {
    /// The packages of this checkout's commit, of either profile (dist when both are there:
    /// what ships). Missing, or built from another commit: the test fails saying how to
    /// build them (scripts/test does, before the tests).
    pub fn built() -> Packages {
        let head =
            ok(Command::new("git")
                .arg("-C")
                .arg(repo())
                .args(["rev-parse", "--short=12", "HEAD"]));
        let head = head.trim();
        let found: Vec<Packages> = ["dist", "dev"]
            .into_iter()
            .filter(|p| {
                repo()
                    .join("target/package")
                    .join(p)
                    .join("BUILD")
                    .is_file()
            })
            .map(Packages::read)
            .collect();
        let described: Vec<String> = found
            .iter()
            .map(|p| format!("{} at {}", p.profile, p.commit))
            .collect();
        found
            .into_iter()
            .find(|p| p.commit == head)
            .unwrap_or_else(|| {
                panic!(
                    "no packages of commit {head} in target/package/ (found: {described:?}): \
                     run scripts/package --profile dev (scripts/test does) or scripts/package"
                )
            })
    }

    /// The packages `target/package/<profile>/` holds, of whatever commit: the release
    /// bench measures a dist build, which a later commit would only relink (fat LTO: many
    /// minutes), and names the commit it measured.
    pub fn read(profile: &str) -> Packages {
        let dir = repo().join("target/package").join(profile);
        let info = std::fs::read_to_string(dir.join("BUILD")).unwrap_or_else(|_| {
            panic!(
                "{} has no packages: run scripts/package --profile {profile} first",
                dir.display()
            )
        });
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(&format!("{name}=")))
                .unwrap_or_else(|| panic!("no {name} in {}/BUILD", dir.display()))
                .to_owned()
        };
        let commit = field("commit");
        Packages {
            version: field("version"),
            profile: field("profile"),
            tarball: dir.join(field("tarball")),
            debug: dir.join(field("debug")),
            deb: dir.join(field("deb")),
            install_sh: dir.join("install.sh"),
            commit,
            dir,
        }
    }

    /// The tarball's SHA-256, as its `.sha256` file has it.
    pub fn tarball_sha256(&self) -> String {
        let file = format!("{}.sha256", self.tarball.display());
        let text = std::fs::read_to_string(&file).unwrap();
        text.split_whitespace().next().unwrap().to_owned()
    }
}

/// Fails loudly when no Docker engine answers.
pub fn need_docker() {
    let answers = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        answers,
        "no Docker engine answers: start one (scripts/ensure-docker, as root; scripts/test does)"
    );
}

/// The Debian bookworm base image the box build uses (made first if need be).
pub fn base_image() -> String {
    need_docker();
    ok(Command::new(repo().join("box/build.sh")).arg("--base"))
        .trim()
        .to_owned()
}

/// The base plus Debian's `systemd` (for `systemd-analyze verify`), made once per base.
pub fn verifier_image(base: &str) -> String {
    let id = ok(Command::new("docker").args(["image", "inspect", "--format", "{{.Id}}", base]));
    let id = id.trim().trim_start_matches("sha256:");
    let tag = format!("lazyboy-test/verifier:{}", &id[..12]);
    let have = Command::new("docker")
        .args(["image", "inspect", &tag])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("Dockerfile"),
            format!(
                "FROM {base}\nRUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
                 apt-get install -y -qq --no-install-recommends systemd >/dev/null && \
                 rm -rf /var/lib/apt/lists/*\n"
            ),
        )
        .unwrap();
        ok(Command::new("docker")
            .args(["build", "-q", "-t", &tag])
            .arg(dir.path()));
    }
    tag
}

/// The mock model program, as cargo built it beside the tests.
pub fn mock_model_program() -> PathBuf {
    let path = crate::bin_dir().join("lazyboy-mock-model");
    assert!(
        path.is_file(),
        "{} is missing: run the tests through cargo",
        path.display()
    );
    path
}

/// A container, removed when dropped.
pub struct Container {
    pub name: String,
}

static SERIAL: AtomicUsize = AtomicUsize::new(0);

impl Container {
    /// `image` running `sleep infinity`, with no network at all: everything the test does
    /// in it (the daemon, the model) is on its own loopback.
    pub fn start(image: &str, what: &str) -> Container {
        let name = format!(
            "lbt-{what}-{}-{}",
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        ok(Command::new("docker").args([
            "run",
            "-d",
            "--network",
            "none",
            "--name",
            &name,
            image,
            "sleep",
            "infinity",
        ]));
        Container { name }
    }

    /// Runs `script` with `sh -c` as `user` (in its home, `HOME` set).
    pub fn sh(&self, user: &str, script: &str) -> Output {
        let home = if user == "root" {
            "/root".to_owned()
        } else {
            format!("/home/{user}")
        };
        Command::new("docker")
            .args(["exec", "-u", user, "-w", &home, "-e"])
            .arg(format!("HOME={home}"))
            .args([&self.name, "sh", "-c", script])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// [`Container::sh`], asserting it succeeds; returns stdout.
    pub fn sh_ok(&self, user: &str, script: &str) -> String {
        let output = self.sh(user, script);
        assert!(
            output.status.success(),
            "in {} as {user}: {script}\nexit {}\n{}\n{}",
            self.name,
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Copies a host file into the container (owned by root, mode kept).
    pub fn put(&self, host: &Path, inside: &str) {
        ok(Command::new("docker")
            .arg("cp")
            .arg(host)
            .arg(format!("{}:{inside}", self.name)));
    }

    /// Copies a file out of the container.
    pub fn take(&self, inside: &str, host: &Path) {
        ok(Command::new("docker")
            .arg("cp")
            .arg(format!("{}:{inside}", self.name))
            .arg(host));
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rm", "-f", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Checks `unit` (a file on the host) with `systemd-analyze --user verify` in the verifier
/// image, with `binary` mounted at `exec_start` (the path its `ExecStart` names) so the check
/// that the program is executable is real. Returns what it said; panics if it failed or said
/// anything about the unit.
pub fn verify_unit(verifier: &str, unit: &Path, binary: &Path, exec_start: &str) -> String {
    let name = unit.file_name().unwrap().to_str().unwrap().to_owned();
    let output = Command::new("docker")
        .args(["run", "--rm", "--network", "none", "-v"])
        .arg(format!("{}:/check/{name}:ro", unit.display()))
        .arg("-v")
        .arg(format!("{}:{exec_start}:ro", binary.display()))
        .args([
            verifier,
            "sh",
            "-c",
            &format!(
                "mkdir -p /tmp/rt && chmod 700 /tmp/rt && XDG_RUNTIME_DIR=/tmp/rt \
                 systemd-analyze --user verify /check/{name}"
            ),
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "systemd-analyze verify failed:\n{said}\n{}",
        std::fs::read_to_string(unit).unwrap_or_default()
    );
    let about: Vec<&str> = said.lines().filter(|l| l.contains(&name)).collect();
    assert!(
        about.is_empty(),
        "{about:?}\n{}",
        std::fs::read_to_string(unit).unwrap_or_default()
    );
    said
}
