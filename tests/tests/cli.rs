//! CLI verbs end to end: `lazyboy completions`.

use lazyboy_tests::{cli, temp_home};

#[test]
fn completions_for_bash_zsh_and_fish_name_the_verbs() {
    let home = temp_home();
    for shell in ["bash", "zsh", "fish"] {
        let output = cli(home.path())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(!script.trim().is_empty(), "{shell}: empty");
        for verb in ["daemon", "team", "run", "schedule"] {
            assert!(script.contains(verb), "{shell} does not mention {verb}");
        }
        if shell == "bash" {
            let file = home.path().join("lazyboy.bash");
            std::fs::write(&file, &script).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                check.status.success(),
                "bash -n: {}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    // Completions need no daemon, and start none.
    assert!(!home.path().join(lazyboy_protocol::paths::SOCKET).exists());
}
