//! The packages on a clean machine: a fresh Debian bookworm container with no network and
//! nothing of ours installed. As root the package goes in (`dpkg -i`, so a `Depends` the base
//! lacks fails the install; or, for the tarball, `install.sh` as the person); then as a
//! non-root person: `lazyboy daemon start`, `doctor`, `team add a`, a task against the mock
//! model running in the same container (its command confined by the installed sandbox
//! helper), `lazyboy run` in a project, and `service install`, whose unit `systemd-analyze
//! verify` accepts. Then the package is removed, and the person's data stays.

use lazyboy_tests::clean::{
    Container, Packages, base_image, mock_model_program, verifier_image, verify_unit,
};

/// The person's session on the clean machine, with `lb` the installed `lazyboy`; asserts
/// each step and returns what `doctor` printed.
fn session(machine: &Container, lb: &str, packages: &Packages) -> String {
    let build = lazyboy_protocol::build_name(&packages.version, &packages.commit);
    let version = machine.sh_ok("person", &format!("{lb} --version"));
    assert_eq!(version.trim(), format!("lazyboy {build}"));
    // The mock model runs beside the daemon, on the container's own loopback.
    machine.sh_ok(
        "person",
        "(/opt/mock/lazyboy-mock-model /tmp/mock.port >/tmp/mock.log 2>&1 &) ; \
         i=0; while [ ! -s /tmp/mock.port ]; do i=$((i+1)); [ $i -lt 200 ] || exit 1; sleep 0.05; done",
    );
    let env = "export LAZYBOY_BASE_URL=http://127.0.0.1:$(cat /tmp/mock.port)/v1 \
               LAZYBOY_MODEL=mock-model;";
    let started = machine.sh_ok("person", &format!("{env} {lb} --json daemon start"));
    let health: lazyboy_protocol::Health = serde_json::from_str(started.trim()).unwrap();
    assert_eq!(health.version, packages.version);
    assert_eq!(health.commit, packages.commit);
    assert_eq!(health.home, "/home/person/.local/share/lazyboy");
    // Docker and the service are missing here: doctor fails, naming them; the rest is fine.
    let doctor = machine.sh("person", &format!("{lb} doctor"));
    let doctor_text = String::from_utf8_lossy(&doctor.stdout).into_owned();
    assert_eq!(doctor.status.code(), Some(1), "{doctor_text}");
    for line in [
        "ok    model:",
        "ok    sandbox: landlock",
        "FAIL  docker:",
        "FAIL  service:",
    ] {
        assert!(
            doctor_text.contains(line),
            "{line:?} missing:\n{doctor_text}"
        );
    }
    assert!(
        doctor_text.contains(&format!("running: lazyboyd {build}")),
        "{doctor_text}"
    );

    machine.sh_ok("person", &format!("{lb} team add a"));
    let probe = "run: echo built > result.txt && cat ~/.local/share/lazyboy/token \
                 || echo token-denied";
    let asked = machine.sh_ok("person", &format!("{lb} ask a '{probe}'"));
    let task = asked.trim().to_owned();
    assert!(task.starts_with("t-"), "{asked}");
    let followed = machine.sh_ok("person", &format!("{lb} follow {task}"));
    assert!(followed.contains("token-denied"), "{followed}");
    machine.sh_ok(
        "person",
        "grep -qx built ~/.local/share/lazyboy/workspaces/a/result.txt",
    );
    // `lazyboy run` in a project: the default agent, confined to the project too.
    let ran = machine.sh_ok(
        "person",
        &format!("mkdir -p project && cd project && {lb} run 'run: echo here > here.txt && touch ~/outside || echo outside-denied'"),
    );
    assert!(ran.contains("outside-denied"), "{ran}");
    machine.sh_ok("person", "test -f project/here.txt && test ! -e ~/outside");

    // No systemd user manager in a container: install writes the unit, fails, says how to
    // load it.
    let install = machine.sh("person", &format!("{lb} service install"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&install.stdout),
        String::from_utf8_lossy(&install.stderr)
    );
    assert!(!install.status.success(), "{said}");
    assert!(said.contains("systemctl --user"), "{said}");
    machine.sh_ok("person", "test -f ~/.config/systemd/user/lazyboyd.service");
    machine.sh_ok("person", &format!("{lb} daemon stop"));
    doctor_text
}

/// A fresh machine with a person and the mock model program.
fn machine(what: &str) -> Container {
    let machine = Container::start(&base_image(), what);
    machine.sh_ok("root", "useradd -m -s /bin/sh person && mkdir -p /opt/mock");
    machine.put(&mock_model_program(), "/opt/mock/lazyboy-mock-model");
    machine
}

#[test]
fn the_debian_package_installs_runs_and_removes_cleanly() {
    let packages = Packages::built();
    let machine = machine("deb");
    machine.put(&packages.deb, "/tmp/lazyboy.deb");
    machine.sh_ok("root", "dpkg -i /tmp/lazyboy.deb");
    let fields = machine.sh_ok(
        "root",
        "dpkg-query -W -f='${Depends}|${Recommends}' lazyboy",
    );
    let (depends, recommends) = fields.split_once('|').unwrap();
    for name in depends
        .split(',')
        .map(|d| d.split_whitespace().next().unwrap_or(""))
    {
        assert!(
            ["libc6", "libgcc-s1"].contains(&name),
            "Depends names {name}: {depends}"
        );
    }
    assert!(recommends.contains("docker.io"), "{recommends}");
    machine.sh_ok(
        "root",
        "test -x /usr/bin/lazyboyd && test -x /usr/bin/lazyboy && test -x /usr/bin/lazyboy-sandbox \
         && test -f /usr/lib/systemd/user/lazyboyd.service && test -f /usr/share/doc/lazyboy/copyright",
    );
    let doctor = session(&machine, "lazyboy", &packages);
    for found in [
        "lazyboy /usr/bin/lazyboy",
        "lazyboyd /usr/bin/lazyboyd (beside lazyboy)",
        "lazyboy-sandbox /usr/bin/lazyboy-sandbox",
    ] {
        assert!(doctor.contains(found), "{found:?} missing:\n{doctor}");
    }

    // The units, checked where systemd is: the one `service install` wrote and the
    // package's own, each with the binary its ExecStart names.
    let dir = tempfile::tempdir().unwrap();
    machine.take(
        "/home/person/.config/systemd/user/lazyboyd.service",
        &dir.path().join("lazyboyd.service"),
    );
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    machine.take(
        "/usr/lib/systemd/user/lazyboyd.service",
        &dir.path().join("pkg/lazyboyd.service"),
    );
    machine.take("/usr/bin/lazyboyd", &dir.path().join("lazyboyd"));
    let verifier = verifier_image(&base_image());
    for unit in ["lazyboyd.service", "pkg/lazyboyd.service"] {
        let unit = dir.path().join(unit);
        let text = std::fs::read_to_string(&unit).unwrap();
        // `service install` quotes the path, the package's unit does not.
        let exec = text
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .unwrap_or_else(|| panic!("no ExecStart:\n{text}"));
        assert!(
            exec.trim_start_matches('"')
                .starts_with("/usr/bin/lazyboyd"),
            "{text}"
        );
        verify_unit(
            &verifier,
            &unit,
            &dir.path().join("lazyboyd"),
            "/usr/bin/lazyboyd",
        );
    }

    // Removing the package keeps the person's data.
    machine.sh_ok("root", "apt-get remove -y -qq lazyboy >/dev/null");
    machine.sh_ok(
        "root",
        "test ! -e /usr/bin/lazyboyd && test ! -e /usr/bin/lazyboy && \
         test ! -e /usr/bin/lazyboy-sandbox && test ! -e /usr/lib/systemd/user/lazyboyd.service",
    );
    machine.sh_ok(
        "person",
        "test -s ~/.local/share/lazyboy/lazyboy.db && test -s ~/.local/share/lazyboy/token && \
         test -f ~/.local/share/lazyboy/workspaces/a/result.txt && \
         test -f ~/.config/systemd/user/lazyboyd.service",
    );
}

#[test]
fn the_tarball_installs_with_install_sh_for_one_user() {
    let packages = Packages::built();
    let machine = machine("tar");
    let tarball = "/tmp/lazyboy.tar.gz";
    machine.put(&packages.tarball, tarball);
    machine.put(&packages.install_sh, "/tmp/install.sh");
    let sum = packages.tarball_sha256();

    // A wrong checksum installs nothing.
    let wrong = format!(
        "{}{}",
        &sum[..63],
        if sum.ends_with('0') { "1" } else { "0" }
    );
    let refused = machine.sh(
        "person",
        &format!("sh /tmp/install.sh --sha256 {wrong} {tarball}"),
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("nothing was installed"),
        "{refused:?}"
    );
    machine.sh_ok("person", "test ! -e ~/.local/bin/lazyboy");

    let installed = machine.sh_ok(
        "person",
        &format!("sh /tmp/install.sh --sha256 {sum} {tarball}"),
    );
    assert!(
        installed.contains("daemon start") && installed.contains("doctor"),
        "{installed}"
    );
    let lb = "/home/person/.local/bin/lazyboy";
    let doctor = session(&machine, lb, &packages);
    assert!(
        doctor.contains("lazyboyd /home/person/.local/bin/lazyboyd (beside lazyboy)"),
        "{doctor}"
    );
    // Installing again (an upgrade) replaces the binaries and keeps the data.
    machine.sh_ok(
        "person",
        &format!("sh /tmp/install.sh --sha256 {sum} {tarball}"),
    );
    machine.sh_ok("person", "test -s ~/.local/share/lazyboy/lazyboy.db");

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    machine.take(
        "/home/person/.config/systemd/user/lazyboyd.service",
        &dir.path().join("lazyboyd.service"),
    );
    machine.take(
        "/home/person/.local/share/systemd/user/lazyboyd.service",
        &dir.path().join("pkg/lazyboyd.service"),
    );
    machine.take(
        "/home/person/.local/bin/lazyboyd",
        &dir.path().join("lazyboyd"),
    );
    let verifier = verifier_image(&base_image());
    for unit in ["lazyboyd.service", "pkg/lazyboyd.service"] {
        verify_unit(
            &verifier,
            &dir.path().join(unit),
            &dir.path().join("lazyboyd"),
            "/home/person/.local/bin/lazyboyd",
        );
    }
}
