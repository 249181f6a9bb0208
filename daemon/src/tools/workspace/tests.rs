//! Both resolvers (the kernel's `openat2`, and the walk pinned) answer every case alike, a
//! swap racing them never gets out, the home is refused when the workspace holds it, and
//! `.lazyboy-output` is never written through a symlink.

use std::ffi::OsStr;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

struct Setup {
    _dir: tempfile::TempDir,
    base: PathBuf,
    ws: PathBuf,
}

/// `<tmp>/ws` with `sub/a.txt`, and `<tmp>/outside/secret` beside it.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let ws = base.join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/a.txt"), "a").unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(base.join("outside/secret"), "s").unwrap();
    Setup {
        _dir: dir,
        base,
        ws,
    }
}

/// The workspace, once with each resolver.
fn roots(ws: &Path) -> [Root; 2] {
    [
        Root::open_with_home(ws, None).unwrap(),
        Root::open_with_home(ws, None).unwrap().walk_only(),
    ]
}

fn read(root: &Root, path: &str) -> Result<String, PathError> {
    let rel = root.rel(path)?;
    root.read(&rel)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

#[test]
fn relative_absolute_and_new_paths_stay_inside() {
    let s = setup();
    for root in roots(&s.ws) {
        assert_eq!(read(&root, "sub/a.txt").unwrap(), "a");
        assert_eq!(read(&root, "./sub/../sub/./a.txt").unwrap(), "a");
        let abs = s.ws.join("sub/a.txt");
        assert_eq!(read(&root, abs.to_str().unwrap()).unwrap(), "a");
        assert_eq!(root.rel(".").unwrap().shown(), ".");
        assert_eq!(root.kind(&root.rel(".").unwrap()).unwrap(), Kind::Dir);
        let new = root.rel("new/dir/f.txt").unwrap();
        assert!(root.write(&new, b"n").unwrap(), "created");
        assert!(!root.write(&new, b"m").unwrap(), "replaced");
        assert_eq!(
            std::fs::read_to_string(s.ws.join("new/dir/f.txt")).unwrap(),
            "m"
        );
        std::fs::remove_dir_all(s.ws.join("new")).unwrap();
        assert!(matches!(read(&root, "nope"), Err(PathError::NotFound(_))));
        assert!(matches!(read(&root, "sub"), Err(PathError::IsDir(_))));
        assert!(matches!(
            read(&root, "sub/a.txt/x"),
            Err(PathError::NotDir(_))
        ));
    }
}

#[test]
fn lexical_escapes_name_the_workspace() {
    let s = setup();
    let root = Root::open_with_home(&s.ws, None).unwrap();
    let error = root.rel("../x").unwrap_err().to_string();
    assert!(
        error.contains("path escapes the workspace: ../x"),
        "{error}"
    );
    assert!(error.contains(&s.ws.display().to_string()), "{error}");
    assert!(root.rel("sub/../../ws2/x").is_err());
    let error = root.rel("/etc/passwd").unwrap_err().to_string();
    assert!(
        error.contains("outside the workspace: /etc/passwd"),
        "{error}"
    );
    let sibling = format!("{}2/x", s.ws.display());
    assert!(
        root.rel(&sibling).is_err(),
        "a sibling with the same prefix"
    );
}

#[test]
fn symlinks_that_lead_out_are_refused_and_named() {
    let s = setup();
    let outside = s.base.join("outside");
    symlink(&outside, s.ws.join("out_dir")).unwrap();
    symlink(outside.join("secret"), s.ws.join("out_file")).unwrap();
    symlink("../outside/secret", s.ws.join("out_rel")).unwrap();
    symlink(outside.join("not_yet"), s.ws.join("dangling")).unwrap();
    symlink("sub/../../outside", s.ws.join("sneaky")).unwrap();
    for root in roots(&s.ws) {
        for path in [
            "out_dir",
            "out_dir/secret",
            "out_file",
            "out_rel",
            "sneaky/secret",
        ] {
            let error = read(&root, path).unwrap_err();
            assert!(
                matches!(error, PathError::Symlink { .. }),
                "{path}: {error}"
            );
            let text = error.to_string();
            assert!(
                text.contains("through a symlink") && text.contains(path),
                "{text}"
            );
        }
        for path in ["out_dir/new.txt", "dangling"] {
            let error = root.write(&root.rel(path).unwrap(), b"x").unwrap_err();
            assert!(
                matches!(error, PathError::Symlink { .. }),
                "{path}: {error}"
            );
        }
        assert!(root.open_dir(&root.rel("out_dir").unwrap()).is_err());
    }
    assert!(!outside.join("new.txt").exists() && !outside.join("not_yet").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "s"
    );
}

#[test]
fn symlinks_inside_work_absolute_ones_included() {
    let s = setup();
    symlink(s.ws.join("sub/a.txt"), s.ws.join("abs_link")).unwrap();
    symlink("sub/a.txt", s.ws.join("link")).unwrap();
    symlink("sub", s.ws.join("dirlink")).unwrap();
    symlink(s.ws.join("sub"), s.ws.join("abs_dirlink")).unwrap();
    symlink(".", s.ws.join("here")).unwrap();
    for root in roots(&s.ws) {
        for path in [
            "abs_link",
            "link",
            "dirlink/a.txt",
            "abs_dirlink/a.txt",
            "here/sub/a.txt",
        ] {
            assert_eq!(read(&root, path).unwrap(), "a", "{path}");
        }
        assert!(root.open_dir(&root.rel("abs_dirlink").unwrap()).is_ok());
    }
    // A dangling link inside creates its target, with its directory.
    for (i, root) in roots(&s.ws).iter().enumerate() {
        let link = format!("dangling_in{i}");
        symlink(format!("made{i}/b.txt"), s.ws.join(&link)).unwrap();
        assert!(root.write(&root.rel(&link).unwrap(), b"b").unwrap());
        assert_eq!(
            std::fs::read_to_string(s.ws.join(format!("made{i}/b.txt"))).unwrap(),
            "b"
        );
    }
}

#[test]
fn fifos_and_sockets_are_not_files() {
    let s = setup();
    nix::unistd::mkfifo(&s.ws.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    for root in roots(&s.ws) {
        // Neither blocks: the open is non-blocking and the kind is checked through the fd
        // (only `read_file` waits on a named pipe, for its writer, as `cat` does).
        assert!(matches!(read(&root, "fifo"), Err(PathError::NotFile(_))));
        let error = root.write(&root.rel("fifo").unwrap(), b"x").unwrap_err();
        assert!(matches!(error, PathError::NotFile(_)), "{error}");
    }
}

#[test]
fn the_home_inside_the_workspace_is_never_opened() {
    let s = setup();
    let home = s.ws.join("lbhome");
    std::fs::create_dir_all(home.join("workspaces")).unwrap();
    std::fs::write(home.join("token"), "t0ken").unwrap();
    symlink("lbhome/token", s.ws.join("to_token")).unwrap();
    symlink(&home, s.ws.join("to_home")).unwrap();
    for root in [
        Root::open_with_home(&s.ws, Some(&home)).unwrap(),
        Root::open_with_home(&s.ws, Some(&home))
            .unwrap()
            .walk_only(),
    ] {
        for path in ["lbhome/token", "to_token", "to_home/token", "lbhome"] {
            let error = read(&root, path).unwrap_err();
            assert!(matches!(error, PathError::Home { .. }), "{path}: {error}");
        }
        let error = root
            .write(&root.rel("lbhome/planted").unwrap(), b"x")
            .unwrap_err();
        assert!(matches!(error, PathError::Home { .. }), "{error}");
        let error = root.open_dir(&root.rel("to_home").unwrap()).unwrap_err();
        assert!(matches!(error, PathError::Home { .. }), "{error}");
        let dir = root.open_dir(&root.rel("lbhome/..").unwrap()).unwrap();
        let home_fd = subdir(dir.as_fd(), OsStr::new("lbhome")).unwrap();
        assert!(root.is_home(home_fd.as_fd()));
        assert_eq!(
            read(&root, "sub/a.txt").unwrap(),
            "a",
            "the rest is as usual"
        );
    }
    assert!(!home.join("planted").exists());
    // A workspace inside the home (the default ones) is not refused for being there.
    let inside = home.join("workspaces/agent");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(inside.join("f"), "f").unwrap();
    let root = Root::open_with_home(&inside, Some(&home)).unwrap();
    assert_eq!(read(&root, "f").unwrap(), "f");
}

#[test]
fn the_output_directory_is_never_written_through_a_symlink() {
    let s = setup();
    let elsewhere = s.base.join("outside");
    symlink(&elsewhere, s.ws.join(OUTPUT_DIR)).unwrap();
    let root = Root::open_with_home(&s.ws, None).unwrap();
    let out = root.output().unwrap();
    out.create_new("cmd-1.log").unwrap();
    out.replace("spill.txt", b"spilled").unwrap();
    let dir = s.ws.join(OUTPUT_DIR);
    assert!(
        std::fs::symlink_metadata(&dir).unwrap().is_dir(),
        "the link was replaced by a real directory"
    );
    assert!(dir.join("cmd-1.log").exists() && dir.join("spill.txt").exists());
    let names: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().collect();
    assert_eq!(names.len(), 1, "only its own secret: {names:?}");
    // A planted name is never opened: created anew, or replaced (the link, not its target).
    symlink(elsewhere.join("secret"), dir.join("cmd-2.log")).unwrap();
    let planted = out.create_new("cmd-2.log").unwrap_err();
    assert_eq!(planted.kind(), io::ErrorKind::AlreadyExists);
    symlink(elsewhere.join("secret"), dir.join("shot.png")).unwrap();
    assert!(out.read("shot.png").is_err(), "a link is not read back");
    out.replace("shot.png", b"png").unwrap();
    assert_eq!(out.read("shot.png").unwrap(), b"png");
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("secret")).unwrap(),
        "s"
    );
    assert!(out.create_new("../x").is_err() && out.create_new("a/b").is_err());
    // A plain file in the way is kept aside, its bytes intact.
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, "mine").unwrap();
    root.output().unwrap();
    let aside = std::fs::read_dir(&s.ws)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".lazyboy-output.moved-")
        })
        .unwrap();
    assert_eq!(std::fs::read_to_string(aside.path()).unwrap(), "mine");
}

/// A thread swapping `swap` (a real directory) and `alt` (a symlink to the outside) with
/// `renameat2(RENAME_EXCHANGE)` while each resolver opens `swap/f`: never the outside file.
#[test]
fn a_rename_exchange_race_never_gets_out() {
    let s = setup();
    std::fs::create_dir(s.ws.join("swap")).unwrap();
    std::fs::write(s.ws.join("swap/f"), "inside").unwrap();
    std::fs::write(s.base.join("outside/f"), "OUTSIDE").unwrap();
    symlink(s.base.join("outside"), s.ws.join("alt")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let ws = std::fs::File::open(&s.ws).unwrap();
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &ws,
                    "swap",
                    &ws,
                    "alt",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .unwrap();
                swaps += 1;
            }
            swaps
        })
    };
    let (mut inside, mut refused) = (0, 0);
    for root in roots(&s.ws) {
        for i in 0..3000 {
            match read(&root, "swap/f") {
                Ok(text) => {
                    assert_eq!(text, "inside", "escaped on try {i}");
                    inside += 1;
                }
                Err(PathError::Symlink { .. } | PathError::NotFound(_) | PathError::NotDir(_)) => {
                    refused += 1
                }
                Err(other) => panic!("{other}"),
            }
            let created = root.write(&root.rel(&format!("swap/w{i}")).unwrap(), b"w");
            assert!(
                created.is_ok() || matches!(created, Err(PathError::Symlink { .. })),
                "{created:?}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 1000, "the swap loop ran: {swaps}");
    assert!(
        inside > 0 && refused > 0,
        "both sides of the race were seen: {inside} / {refused}"
    );
    let planted: Vec<_> = std::fs::read_dir(s.base.join("outside"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('w'))
        .collect();
    assert!(planted.is_empty(), "written outside: {planted:?}");
}
