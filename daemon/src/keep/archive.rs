//! The backup archive: a gzip-compressed tar whose first entry is `manifest.json` (what the
//! backup is, and each other entry's size and SHA-256), then the database snapshot, the
//! config and, with `--with-secrets`, the secrets that are files.
//!
//! Reading treats the archive as hostile: the manifest must come first and be small, only the
//! names in [`ALLOWED`] listed by the manifest are taken (never a path from the tar: each is
//! written under its own fixed name in the caller's directory), each at most once, and each
//! must match its size and hash. A truncated gzip stream or tar fails the read.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use lazyboy_protocol::{BACKUP_FORMAT, BackupFile, BackupManifest, MANIFEST, paths};

/// The entries an archive may hold besides its manifest.
pub const ALLOWED: [&str; 3] = [paths::DATABASE, paths::CONFIG, paths::TOKEN];
/// The files of the home that are secrets: in a backup only with `--with-secrets`. (A VAPID
/// key, once the daemon keeps one as a file, belongs here.)
pub const SECRET_FILES: [&str; 1] = [paths::TOKEN];

/// The largest manifest read (a real one is a few hundred bytes).
const MAX_MANIFEST: u64 = 1024 * 1024;

/// Why an archive cannot be restored.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot read {path}: {source}")]
    Open { path: String, source: io::Error },
    #[error("the archive is corrupted or truncated: {0}")]
    Corrupt(String),
    #[error(
        "the backup's schema version is {found}, newer than this lazyboyd knows ({known}): \
         restore it with a newer lazyboyd"
    )]
    NewerSchema { found: i64, known: i64 },
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: io::Error },
}

/// A writer that hashes what passes through it.
struct Hashing<W> {
    inner: W,
    digest: ring::digest::Context,
    bytes: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.digest.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn hex(digest: ring::digest::Digest) -> String {
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (lowercase hex) of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    hex(ring::digest::digest(&ring::digest::SHA256, bytes))
}

/// The size and SHA-256 of a file's contents as read through `file`.
pub fn sha256_of(file: &mut impl Read) -> io::Result<(u64, String)> {
    let mut hashing = Hashing {
        inner: io::sink(),
        digest: ring::digest::Context::new(&ring::digest::SHA256),
        bytes: 0,
    };
    io::copy(file, &mut hashing)?;
    Ok((hashing.bytes, hex(hashing.digest.finish())))
}

/// The manifest's entry for the file at `path`, named `name` in the archive.
pub fn describe(name: &str, path: &Path) -> io::Result<BackupFile> {
    let (bytes, sha256) = sha256_of(&mut File::open(path)?)?;
    Ok(BackupFile {
        name: name.to_owned(),
        bytes,
        sha256,
    })
}

/// Writes the archive to `dest` (created, 0600; it must not exist) and syncs it.
pub fn write(
    dest: &Path,
    manifest: &BackupManifest,
    files: &[(String, PathBuf)],
) -> io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)?;
    let gzip = GzEncoder::new(BufWriter::with_capacity(1 << 20, file), Compression::fast());
    let mut tar = tar::Builder::new(gzip);
    let json = serde_json::to_vec_pretty(manifest).map_err(io::Error::other)?;
    let mut header = tar::Header::new_gnu();
    header.set_size(json.len() as u64);
    header.set_mode(0o600);
    header.set_mtime(u64::try_from(manifest.created_at_ms / 1000).unwrap_or(0));
    header.set_cksum();
    tar.append_data(&mut header, MANIFEST, json.as_slice())?;
    for (name, path) in files {
        let mut source = File::open(path)?;
        let mut header = tar::Header::new_gnu();
        header.set_size(source.metadata()?.len());
        header.set_mode(0o600);
        header.set_mtime(u64::try_from(manifest.created_at_ms / 1000).unwrap_or(0));
        header.set_cksum();
        tar.append_data(&mut header, name, &mut source)?;
    }
    let gzip = tar.into_inner()?;
    let buffered = gzip.finish()?;
    let file = buffered.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()
}

/// Reads the archive at `path`: its manifest (refusing a schema newer than `known_schema`),
/// then every entry it lists into `into` (an empty directory), each checked against its size
/// and hash. Returns the manifest once everything matched.
pub fn read(path: &Path, into: &Path, known_schema: i64) -> Result<BackupManifest, ArchiveError> {
    let file = File::open(path).map_err(|source| ArchiveError::Open {
        path: path.display().to_string(),
        source,
    })?;
    let corrupt =
        |what: &str, e: &dyn std::fmt::Display| ArchiveError::Corrupt(format!("{what}: {e}"));
    let mut archive = tar::Archive::new(GzDecoder::new(io::BufReader::new(file)));
    let mut entries = archive
        .entries()
        .map_err(|e| corrupt("not a LazyBoy backup (a .tar.gz)", &e))?;
    let mut first = entries
        .next()
        .ok_or_else(|| ArchiveError::Corrupt("the archive is empty".to_owned()))?
        .map_err(|e| corrupt("not a LazyBoy backup (a .tar.gz)", &e))?;
    let name = first
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    if name != MANIFEST {
        return Err(ArchiveError::Corrupt(format!(
            "its first entry is {name:?}, not {MANIFEST}: not a LazyBoy backup"
        )));
    }
    let mut json = Vec::new();
    (&mut first)
        .take(MAX_MANIFEST)
        .read_to_end(&mut json)
        .map_err(|e| corrupt("the manifest", &e))?;
    let manifest: BackupManifest =
        serde_json::from_slice(&json).map_err(|e| corrupt("the manifest", &e))?;
    if manifest.format != BACKUP_FORMAT {
        return Err(ArchiveError::Corrupt(format!(
            "manifest format {} (this lazyboyd reads {BACKUP_FORMAT})",
            manifest.format
        )));
    }
    if manifest.schema_version > known_schema {
        return Err(ArchiveError::NewerSchema {
            found: manifest.schema_version,
            known: known_schema,
        });
    }
    for listed in &manifest.files {
        if !ALLOWED.contains(&listed.name.as_str()) {
            return Err(ArchiveError::Corrupt(format!(
                "the manifest lists {:?}, which a backup never holds",
                listed.name
            )));
        }
    }
    if !manifest.files.iter().any(|f| f.name == paths::DATABASE) {
        return Err(ArchiveError::Corrupt(
            "the manifest lists no database".to_owned(),
        ));
    }
    let mut seen: Vec<String> = Vec::new();
    for entry in entries {
        let mut entry = entry.map_err(|e| corrupt("reading the archive", &e))?;
        let name = entry
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let listed = manifest
            .files
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| ArchiveError::Corrupt(format!("{name:?} is not in the manifest")))?;
        if seen.contains(&name) {
            return Err(ArchiveError::Corrupt(format!("{name:?} appears twice")));
        }
        let target = into.join(&listed.name);
        let write_error = |source| ArchiveError::Write {
            path: target.display().to_string(),
            source,
        };
        let out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&target)
            .map_err(write_error)?;
        let mut hashing = Hashing {
            inner: BufWriter::new(out),
            digest: ring::digest::Context::new(&ring::digest::SHA256),
            bytes: 0,
        };
        // Read errors (a truncated stream) and write errors are told apart by the reader.
        io::copy(&mut (&mut entry).take(listed.bytes + 1), &mut hashing)
            .map_err(|e| corrupt(&format!("reading {name}"), &e))?;
        let out = hashing
            .inner
            .into_inner()
            .map_err(|e| ArchiveError::Write {
                path: target.display().to_string(),
                source: e.into_error(),
            })?;
        out.sync_all().map_err(|source| ArchiveError::Write {
            path: target.display().to_string(),
            source,
        })?;
        let sha = hex(hashing.digest.finish());
        if hashing.bytes != listed.bytes || sha != listed.sha256 {
            return Err(ArchiveError::Corrupt(format!(
                "{name} does not match its checksum ({} bytes, sha256 {sha}; the manifest says \
                 {} bytes, {})",
                hashing.bytes, listed.bytes, listed.sha256
            )));
        }
        seen.push(name);
    }
    // The gzip trailer (its CRC and length) is checked once the stream is read to its end.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(|e| corrupt("the end of the archive", &e))?;
    for listed in &manifest.files {
        if !seen.contains(&listed.name) {
            return Err(ArchiveError::Corrupt(format!(
                "{} is missing (the archive ends early)",
                listed.name
            )));
        }
    }
    Ok(manifest)
}
