//! Path confinement: every path a tool touches goes through [`resolve`] first.
//!
//! Invariant: a path returned by [`resolve`] lies under the (canonical) workspace root after
//! every symlink that exists at resolution time is followed. `..` is normalized lexically
//! first, then symlinks are followed for the longest existing prefix, so a write target that
//! does not exist yet still resolves. A dangling symlink is followed by hand, so writing
//! through it cannot create a file outside. The check is made at call time; a symlink swapped
//! in afterwards by a concurrent process is out of scope (the model has no other way in).

use std::io;
use std::path::{Component, Path, PathBuf};

/// How many dangling symlinks may be chained before giving up (the kernel allows 40).
const MAX_HOPS: u32 = 40;

/// Resolves `path` (relative to `root`, or absolute inside it) to a real path under `root`.
/// `root` must be canonical. The error names the path and the workspace, for the model.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, String> {
    let given = Path::new(path);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let lexical = normalize(&joined);
    if !lexical.starts_with(root) {
        return Err(if given.is_absolute() {
            format!(
                "path is outside the workspace: {path} (the workspace is {}; use a path inside it, \
                 preferably relative)",
                root.display()
            )
        } else {
            format!(
                "path escapes the workspace: {path} (the workspace is {})",
                root.display()
            )
        });
    }
    let real =
        follow(&lexical, MAX_HOPS).map_err(|error| format!("cannot resolve {path}: {error}"))?;
    if !real.starts_with(root) {
        return Err(format!(
            "path escapes the workspace through a symlink: {path} resolves to {} (the workspace \
             is {})",
            real.display(),
            root.display()
        ));
    }
    Ok(real)
}

/// Removes `.` and resolves `..` without touching the disk. `..` at `/` stays at `/`.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Canonicalizes the longest existing prefix of the absolute `path` and appends the rest.
/// The rest does not exist, so it holds no symlink and lexical normalization is exact there.
fn follow(path: &Path, hops: u32) -> io::Result<PathBuf> {
    let mut prefix = path;
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(prefix) {
            let mut out = real;
            out.extend(rest.iter().rev());
            return Ok(normalize(&out));
        }
        let is_link = std::fs::symlink_metadata(prefix).is_ok_and(|meta| meta.is_symlink());
        let parent = prefix.parent();
        if let (true, Some(parent)) = (is_link, parent) {
            // A dangling symlink: a write would create its target, so resolve where that is.
            if hops == 0 {
                return Err(io::Error::other("too many levels of symbolic links"));
            }
            let mut next = std::fs::canonicalize(parent)?.join(std::fs::read_link(prefix)?);
            next.extend(rest.iter().rev());
            return follow(&next, hops - 1);
        }
        match (parent, prefix.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                prefix = parent;
            }
            // Nothing exists, not even `/`: leave the path as it is.
            _ => return Ok(path.to_path_buf()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.txt"), "a").unwrap();
        (dir, root)
    }

    #[test]
    fn relative_absolute_and_new_paths_resolve_inside() {
        let (_dir, root) = setup();
        assert_eq!(resolve(&root, "sub/a.txt").unwrap(), root.join("sub/a.txt"));
        assert_eq!(
            resolve(&root, "./sub/../sub/./a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        assert_eq!(resolve(&root, ".").unwrap(), root);
        let abs = root.join("sub/a.txt");
        assert_eq!(resolve(&root, abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(
            resolve(&root, "new/dir/f.txt").unwrap(),
            root.join("new/dir/f.txt")
        );
    }

    #[test]
    fn dotdot_escape_is_refused() {
        let (_dir, root) = setup();
        let error = resolve(&root, "../x").unwrap_err();
        assert!(
            error.contains("path escapes the workspace: ../x"),
            "{error}"
        );
        assert!(error.contains(&root.display().to_string()), "{error}");
        assert!(resolve(&root, "sub/../../ws2/x").is_err());
    }

    #[test]
    fn absolute_outside_is_refused() {
        let (_dir, root) = setup();
        let error = resolve(&root, "/etc/passwd").unwrap_err();
        assert!(
            error.contains("outside the workspace: /etc/passwd"),
            "{error}"
        );
    }

    #[test]
    fn symlinks_pointing_out_are_refused() {
        let (dir, root) = setup();
        let outside = dir.path().canonicalize().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "s").unwrap();
        symlink(&outside, root.join("out_dir")).unwrap();
        symlink(outside.join("secret"), root.join("out_file")).unwrap();
        symlink(outside.join("not_yet"), root.join("dangling")).unwrap();
        for path in [
            "out_dir",
            "out_dir/secret",
            "out_dir/new.txt",
            "out_file",
            "dangling",
        ] {
            let error = resolve(&root, path).unwrap_err();
            assert!(error.contains("through a symlink"), "{path}: {error}");
            assert!(error.contains(path), "{error}");
        }
    }

    #[test]
    fn symlinks_inside_are_followed() {
        let (_dir, root) = setup();
        symlink(root.join("sub/a.txt"), root.join("link")).unwrap();
        symlink("sub", root.join("dirlink")).unwrap();
        symlink("sub/b.txt", root.join("dangling_in")).unwrap();
        assert_eq!(resolve(&root, "link").unwrap(), root.join("sub/a.txt"));
        assert_eq!(
            resolve(&root, "dirlink/a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        assert_eq!(
            resolve(&root, "dangling_in").unwrap(),
            root.join("sub/b.txt")
        );
    }
}
