//! The files `lazyboy service install` writes: a systemd user unit (Linux) or a launchd agent
//! (macOS), filled in from the templates in `client/templates/`.
//!
//! Pure: no IO. Every value that lands in a file is escaped for that file's syntax (systemd
//! quoting, `%` specifiers and `$` expansion; XML entities), so a home with spaces, `%`, `$`,
//! `\`, quotes or `&` reaches the daemon's argv unchanged. Control characters are refused:
//! neither XML 1.0 nor systemd's `Environment=` can carry them.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

const SYSTEMD_TEMPLATE: &str = include_str!("../templates/lazyboyd.service");
const LAUNCHD_TEMPLATE: &str = include_str!("../templates/com.lazyboy.daemon.plist");

/// Which service manager a file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Platform {
    /// A systemd user unit.
    Linux,
    /// A launchd agent.
    Macos,
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Platform::Linux => "systemd (Linux)",
            Platform::Macos => "launchd (macOS)",
        })
    }
}

impl Platform {
    /// The platform this binary runs on (anything but macOS gets systemd).
    pub fn host() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::Macos
        } else {
            Platform::Linux
        }
    }
}

/// What the service runs: `<daemon> --home <home> [--listen <listen>]`.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Absolute path of `lazyboyd`.
    pub daemon: PathBuf,
    /// Absolute path of the home.
    pub home: PathBuf,
    /// Passed on as `--listen`.
    pub listen: Option<SocketAddr>,
    /// Passed on as `--tls-cert`, `--tls-key`.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The `PATH` the daemon (and the commands agents run) gets; the managers' own is minimal.
    pub path_env: Option<String>,
}

impl Spec {
    /// The daemon's argv. In the foreground: the manager supervises it, so no `--detach`.
    pub fn argv(&self) -> anyhow::Result<Vec<String>> {
        let mut argv = vec![
            utf8(&self.daemon)?.to_owned(),
            "--home".to_owned(),
            utf8(&self.home)?.to_owned(),
        ];
        if let Some(listen) = self.listen {
            argv.extend(["--listen".to_owned(), listen.to_string()]);
        }
        if let Some((cert, key)) = &self.tls {
            argv.extend(["--tls-cert".to_owned(), utf8(cert)?.to_owned()]);
            argv.extend(["--tls-key".to_owned(), utf8(key)?.to_owned()]);
        }
        Ok(argv)
    }

    /// The environment the service sets: the home (for anything the daemon starts that reads
    /// `LAZYBOY_HOME`) and `PATH`.
    fn environment(&self) -> anyhow::Result<Vec<(&'static str, String)>> {
        let mut env = vec![("LAZYBOY_HOME", utf8(&self.home)?.to_owned())];
        if let Some(path) = &self.path_env {
            env.push(("PATH", path.clone()));
        }
        Ok(env)
    }

    /// Where launchd sends the daemon's stdout and stderr: the home's logs dir.
    pub fn log_paths(&self) -> (PathBuf, PathBuf) {
        let logs = self.home.join(lazyboy_protocol::paths::LOGS);
        (logs.join("lazyboyd.out"), logs.join("lazyboyd.err"))
    }
}

/// The service's name: one per home, so two homes never share a unit. The default home's is
/// `lazyboyd` / `com.lazyboy.daemon`; any other home's carries a hash of its path.
pub fn service_name(platform: Platform, home: &Path, default_home: Option<&Path>) -> String {
    let suffix = if default_home == Some(home) {
        String::new()
    } else {
        format!("{:08x}", fnv1a(home.as_os_str().as_encoded_bytes()) as u32)
    };
    match (platform, suffix.is_empty()) {
        (Platform::Linux, true) => "lazyboyd.service".to_owned(),
        (Platform::Linux, false) => format!("lazyboyd-{suffix}.service"),
        (Platform::Macos, true) => "com.lazyboy.daemon".to_owned(),
        (Platform::Macos, false) => format!("com.lazyboy.daemon.{suffix}"),
    }
}

/// The file name for a service name (a unit name is its own file name; a label gets `.plist`).
pub fn file_name(platform: Platform, name: &str) -> String {
    match platform {
        Platform::Linux => name.to_owned(),
        Platform::Macos => format!("{name}.plist"),
    }
}

/// The file's text.
pub fn render(platform: Platform, spec: &Spec, name: &str) -> anyhow::Result<String> {
    match platform {
        Platform::Linux => render_systemd(spec, name),
        Platform::Macos => render_launchd(spec, name),
    }
}

fn render_systemd(spec: &Spec, unit: &str) -> anyhow::Result<String> {
    let argv = spec.argv()?;
    let mut exec_start = Vec::new();
    for arg in &argv {
        exec_start.push(systemd_quote(arg, true)?);
    }
    let mut environment = Vec::new();
    for (key, value) in spec.environment()? {
        let assignment = systemd_quote(&format!("{key}={value}"), false)?;
        environment.push(format!("Environment={assignment}"));
    }
    fill(
        SYSTEMD_TEMPLATE,
        &[
            ("UNIT", unit),
            ("EXEC_START", &exec_start.join(" ")),
            ("ENVIRONMENT", &environment.join("\n")),
        ],
    )
}

fn render_launchd(spec: &Spec, label: &str) -> anyhow::Result<String> {
    let mut arguments = Vec::new();
    for arg in spec.argv()? {
        arguments.push(format!("\t\t<string>{}</string>", xml_escape(&arg)?));
    }
    let mut environment = Vec::new();
    for (key, value) in spec.environment()? {
        environment.push(format!(
            "\t\t<key>{key}</key>\n\t\t<string>{}</string>",
            xml_escape(&value)?
        ));
    }
    let (stdout, stderr) = spec.log_paths();
    fill(
        LAUNCHD_TEMPLATE,
        &[
            ("LABEL", &xml_escape(label)?),
            ("PROGRAM_ARGUMENTS", &arguments.join("\n")),
            ("ENVIRONMENT", &environment.join("\n")),
            ("STDOUT", &xml_escape(utf8(&stdout)?)?),
            ("STDERR", &xml_escape(utf8(&stderr)?)?),
        ],
    )
}

/// Replaces each `{{NAME}}` in `template` by its value, in one pass (a value that contains
/// `{{...}}` stays as it is). An unknown or unused name is a bug in the template.
fn fill(template: &str, values: &[(&str, &str)]) -> anyhow::Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut used = vec![false; values.len()];
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").context("template: `{{` without `}}`")?;
        let name = &after[..end];
        let index = values
            .iter()
            .position(|(key, _)| *key == name)
            .with_context(|| format!("template: no value for {{{{{name}}}}}"))?;
        used[index] = true;
        out.push_str(values[index].1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    if let Some(index) = used.iter().position(|used| !used) {
        bail!("template: {{{{{}}}}} is never used", values[index].0);
    }
    Ok(out)
}

/// One word of a systemd setting, double-quoted: `\` and `"` are backslash-escaped (systemd
/// unquotes with C escapes), `%` becomes `%%` (specifiers), and with `dollar`, `$` becomes
/// `$$` (`ExecStart=` expands `$VAR`; `Environment=` does not).
pub fn systemd_quote(value: &str, dollar: bool) -> anyhow::Result<String> {
    refuse_control(value)?;
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '%' => out.push_str("%%"),
            '$' if dollar => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(out)
}

/// Text for an XML element: the five predefined entities.
pub fn xml_escape(value: &str) -> anyhow::Result<String> {
    refuse_control(value)?;
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    Ok(out)
}

fn refuse_control(value: &str) -> anyhow::Result<()> {
    if value.chars().any(char::is_control) {
        bail!("{value:?} contains a control character, which a service file cannot carry");
    }
    Ok(())
}

fn utf8(path: &Path) -> anyhow::Result<&str> {
    path.to_str()
        .with_context(|| format!("{} is not valid UTF-8", path.display()))
}

/// 64-bit FNV-1a: a stable hash (std's `DefaultHasher` may change between releases, and the
/// name must not, or `uninstall` would miss an older install).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn spec(home: &str) -> Spec {
        Spec {
            daemon: PathBuf::from("/opt/lazy boy/lazyboyd"),
            home: PathBuf::from(home),
            listen: None,
            tls: None,
            path_env: Some("/usr/bin:/bin".to_owned()),
        }
    }

    #[test]
    fn systemd_quoting_escapes_backslash_quote_percent_and_dollar() {
        assert_eq!(systemd_quote("/plain", true).unwrap(), "\"/plain\"");
        assert_eq!(
            systemd_quote(r#"/a b\c"d%e$f"#, true).unwrap(),
            r#""/a b\\c\"d%%e$$f""#
        );
        // Environment= does not expand `$`, so it stays single.
        assert_eq!(systemd_quote("K=/x$y%z", false).unwrap(), r#""K=/x$y%%z""#);
        assert_eq!(systemd_quote("it's", true).unwrap(), "\"it's\"");
    }

    #[test]
    fn xml_escaping_covers_the_five_entities() {
        assert_eq!(
            xml_escape(r#"a&b<c>d"e'f"#).unwrap(),
            "a&amp;b&lt;c&gt;d&quot;e&apos;f"
        );
        assert_eq!(xml_escape("/plain/path").unwrap(), "/plain/path");
    }

    #[test]
    fn control_characters_are_refused() {
        assert!(systemd_quote("/a\nb", true).is_err());
        assert!(xml_escape("/a\u{7}b").is_err());
        assert!(render(Platform::Linux, &spec("/tmp/a\tb"), "lazyboyd.service").is_err());
    }

    #[test]
    fn fill_is_one_pass_and_strict() {
        assert_eq!(
            fill("a {{X}} b {{Y}}", &[("X", "{{Y}}"), ("Y", "2")]).unwrap(),
            "a {{Y}} b 2"
        );
        assert!(fill("{{X}}", &[]).is_err());
        assert!(fill("{{X", &[("X", "1")]).is_err());
        assert!(fill("x", &[("X", "1")]).is_err());
    }

    #[test]
    fn the_systemd_unit_quotes_every_value() {
        let mut spec = spec("/tmp/h o%m$e\\x");
        spec.listen = Some("127.0.0.1:0".parse().unwrap());
        let unit = render(Platform::Linux, &spec, "lazyboyd-0000abcd.service").unwrap();
        assert!(
            unit.contains(
                "\nExecStart=\"/opt/lazy boy/lazyboyd\" \"--home\" \"/tmp/h o%%m$$e\\\\x\" \
                 \"--listen\" \"127.0.0.1:0\"\n"
            ),
            "{unit}"
        );
        assert!(
            unit.contains("\nEnvironment=\"LAZYBOY_HOME=/tmp/h o%%m$e\\\\x\"\n"),
            "{unit}"
        );
        assert!(
            unit.contains("\nEnvironment=\"PATH=/usr/bin:/bin\"\n"),
            "{unit}"
        );
        assert!(unit.contains("\nType=simple\n"), "{unit}");
        assert!(unit.contains("\nWantedBy=default.target\n"), "{unit}");
        assert!(!unit.contains("{{"), "{unit}");
    }

    #[test]
    fn the_plist_escapes_every_value() {
        let plist = render(Platform::Macos, &spec("/tmp/a&b <c>"), "com.lazyboy.daemon").unwrap();
        assert!(
            plist.contains("<string>/tmp/a&amp;b &lt;c&gt;</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("<string>/tmp/a&amp;b &lt;c&gt;/logs/lazyboyd.err</string>"),
            "{plist}"
        );
        assert!(!plist.contains("{{"), "{plist}");
    }

    #[test]
    fn the_default_home_gets_the_plain_name_and_others_a_stable_hashed_one() {
        let default = Path::new("/home/u/.local/share/lazyboy");
        assert_eq!(
            service_name(Platform::Linux, default, Some(default)),
            "lazyboyd.service"
        );
        assert_eq!(
            service_name(Platform::Macos, default, Some(default)),
            "com.lazyboy.daemon"
        );
        let other = Path::new("/tmp/other");
        let unit = service_name(Platform::Linux, other, Some(default));
        assert_eq!(unit, service_name(Platform::Linux, other, None));
        assert_eq!(unit.len(), "lazyboyd-12345678.service".len(), "{unit}");
        assert_ne!(
            unit,
            service_name(Platform::Linux, Path::new("/tmp/other2"), None)
        );
        // Pinned: a changed hash would orphan existing installs.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(file_name(Platform::Macos, "x"), "x.plist");
    }
}
