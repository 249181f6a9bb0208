//! The macOS sandbox: the same rules as the Landlock one, written as a Seatbelt profile for
//! `/usr/bin/sandbox-exec -p PROFILE bash -c SCRIPT`.
//!
//! Seatbelt can deny (the last matching rule wins), so the profile says it directly: allow
//! by default (processes, the network, reads), deny every file write, allow writes to the
//! workspace and the temp dirs (workspace-write only), deny reading or writing the LazyBoy
//! home, then allow the workspace again when it lies inside the home, then deny writes to
//! the repositories' git directories (`workspace-write` without `git_write`, see
//! [`super::git`]: no mount namespace is needed here). Signals reach only
//! processes in the same sandbox. These machines are Linux: the text is unit-tested here and
//! documented in the README; it has not run under `sandbox-exec` in CI.

use std::path::Path;

use super::{Confinement, Sandbox};

/// Where macOS keeps the tool.
pub const SANDBOX_EXEC: &str = "/usr/bin/sandbox-exec";

/// Device files a confined command may write.
const DEVICES: [&str; 5] = ["/dev/null", "/dev/zero", "/dev/tty", "/dev/ptmx", "/dev/fd"];

/// The profile for `confinement`; `None` when its sandbox is `off`.
pub fn profile(confinement: &Confinement) -> Option<String> {
    let write = match confinement.sandbox {
        Sandbox::Off => return None,
        Sandbox::WorkspaceWrite => true,
        Sandbox::ReadOnly => false,
    };
    let mut out = String::from(
        "(version 1)\n\
         ; LazyBoy: an agent's host command (see the README, \"Boundaries\").\n\
         (allow default)\n\
         (deny signal)\n\
         (allow signal (target same-sandbox))\n\
         (deny file-write*)\n",
    );
    let mut allowed = DEVICES
        .iter()
        .map(|d| format!("(literal {})", quote(Path::new(d))))
        .collect::<Vec<_>>();
    allowed.push("(regex #\"^/dev/ttys[0-9]+$\")".to_owned());
    if write {
        for dir in [
            confinement.workspace.as_path(),
            confinement.temp.as_path(),
            Path::new("/private/tmp"),
            Path::new("/private/var/folders"),
        ] {
            allowed.push(format!("(subpath {})", quote(dir)));
        }
    }
    out.push_str(&format!(
        "(allow file-write*\n  {})\n",
        allowed.join("\n  ")
    ));
    let home = quote(&confinement.home);
    out.push_str(&format!("(deny file-read* file-write* (subpath {home}))\n"));
    if confinement.workspace.starts_with(&confinement.home) {
        let rights = if write {
            "file-read* file-write*"
        } else {
            "file-read*"
        };
        out.push_str(&format!(
            "(allow {rights} (subpath {}))\n",
            quote(&confinement.workspace)
        ));
    }
    for git in confinement.protected_git() {
        out.push_str(&format!("(deny file-write* (subpath {}))\n", quote(&git)));
    }
    Some(out)
}

/// The program and arguments that run `script` under `profile`.
pub fn command(profile: &str, shell: &str, script: &str) -> (String, Vec<String>) {
    (
        SANDBOX_EXEC.to_owned(),
        vec![
            "-p".to_owned(),
            profile.to_owned(),
            shell.to_owned(),
            "-c".to_owned(),
            script.to_owned(),
        ],
    )
}

/// A path as an SBPL string literal.
fn quote(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(sandbox: Sandbox, workspace: &str) -> Confinement {
        Confinement {
            sandbox,
            workspace: workspace.into(),
            home: "/Users/me/Library/Application Support/lazyboy".into(),
            temp: "/private/var/folders/xy/T".into(),
            git_write: false,
        }
    }

    #[test]
    fn workspace_write_allows_the_workspace_and_temp_and_hides_the_home() {
        let text = profile(&conf(Sandbox::WorkspaceWrite, "/Users/me/app")).unwrap();
        assert!(text.starts_with("(version 1)\n"));
        let deny_writes = text.find("(deny file-write*)").unwrap();
        let allow_ws = text.find("(subpath \"/Users/me/app\")").unwrap();
        let deny_home = text
            .find("(deny file-read* file-write* (subpath \"/Users/me/Library/Application Support/lazyboy\"))")
            .unwrap();
        // The last matching rule wins: the home's deny comes after every allow.
        assert!(deny_writes < allow_ws && allow_ws < deny_home, "{text}");
        assert!(text.contains("(subpath \"/private/var/folders/xy/T\")"));
        assert!(text.contains("(literal \"/dev/null\")"));
        assert!(text.contains("(allow signal (target same-sandbox))"));
    }

    #[test]
    fn read_only_writes_only_devices_and_a_workspace_in_the_home_is_let_back_in() {
        let ws = "/Users/me/Library/Application Support/lazyboy/workspaces/a";
        let text = profile(&conf(Sandbox::ReadOnly, ws)).unwrap();
        assert!(!text.contains("(subpath \"/private/tmp\")"));
        let deny_home = text.find("(deny file-read* file-write* (subpath").unwrap();
        let back = text
            .find(&format!("(allow file-read* (subpath \"{ws}\"))"))
            .unwrap();
        assert!(deny_home < back, "{text}");
        assert!(profile(&conf(Sandbox::Off, ws)).is_none());
    }

    #[test]
    fn a_repositorys_git_directory_is_denied_last_unless_the_agent_may_write_it() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        std::fs::create_dir(ws.join(".git")).unwrap();
        let mut c = conf(Sandbox::WorkspaceWrite, ws.to_str().unwrap());
        let rule = format!("(deny file-write* (subpath {}))", quote(&ws.join(".git")));
        let text = profile(&c).unwrap();
        assert!(text.trim_end().ends_with(&rule), "{text}");
        c.git_write = true;
        assert!(!profile(&c).unwrap().contains(&rule));
    }

    #[test]
    fn quotes_are_escaped_and_the_command_passes_the_profile_inline() {
        assert_eq!(quote(Path::new("/a \"b\"\\c")), "\"/a \\\"b\\\"\\\\c\"");
        let (program, args) = command("(version 1)", "bash", "make");
        assert_eq!(program, SANDBOX_EXEC);
        assert_eq!(args, ["-p", "(version 1)", "bash", "-c", "make"]);
    }
}
