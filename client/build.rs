//! Embeds the box's build context (`box/Dockerfile`, `box/build.sh`, `box/rootfs/**`) into the
//! binary, so `lazyboy box build` works from an installed binary with no checkout: a list of
//! `(path, mode, include_bytes!(...))` in `$OUT_DIR/box_files.rs`, rebuilt when `box/`
//! changes. README, smoke.sh and the like are not part of the image and stay out.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, u32, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        println!("cargo:rerun-if-changed={}", path.display());
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            walk(root, &path, out);
        } else if meta.is_file() {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            out.push((rel, meta.permissions().mode() & 0o777, path));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let root = manifest.join("../box");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    for name in ["Dockerfile", "build.sh"] {
        let path = root.join(name);
        println!("cargo:rerun-if-changed={}", path.display());
        if let Ok(meta) = fs::metadata(&path) {
            files.push((name.to_owned(), meta.permissions().mode() & 0o777, path));
        }
    }
    walk(&root, &root.join("rootfs"), &mut files);
    let mut code = String::from("pub static FILES: &[(&str, u32, &[u8])] = &[\n");
    for (rel, mode, path) in files {
        let abs = path.canonicalize().unwrap_or(path);
        code.push_str(&format!(
            "    ({rel:?}, 0o{mode:o}, include_bytes!({:?})),\n",
            abs.display().to_string()
        ));
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default()).join("box_files.rs");
    if let Err(error) = fs::write(&out, code) {
        println!("cargo:warning=cannot write {}: {error}", out.display());
    }
}
