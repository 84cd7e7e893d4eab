//! Opening an input file: its kind decided once from its content (pickle or
//! JSON snapshot, or a memgate JSON document such as a summary), decode,
//! build, and errors that name the file. Each file is opened and read once;
//! its SHA-256, when asked, is taken from the same bytes.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::files::{self, FileError};
use crate::pickle::{decode, decode_checked, Arena};

use super::build::build;
use super::collect::Collector;
use super::model::{Format, Snapshot};

/// Why a file could not be read as a snapshot: `"<file>: <what>"`, and
/// apart from it, what the user can do ([`Hint`]), printed after it.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{path}: {message}{}", self.hint.map(Hint::after).unwrap_or_default())]
pub struct LoadError {
    pub(crate) path: String,
    pub(crate) message: String,
    /// The file's mode forbade reading it: a snapshot then gets the
    /// torch_npu hint, a baseline or summary does not.
    pub(crate) denied: bool,
    pub(crate) hint: Option<Hint>,
}

/// What the user can do about a [`LoadError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// A snapshot may be unreadable to its owner: torch_npu's dumps are.
    NpuFileMode,
    /// A summary is what `check` compares against.
    WriteSummary,
    /// The summary was written by a memgate of another schema.
    RegenerateSummary,
}

impl Hint {
    pub fn text(self) -> &'static str {
        match self {
            Hint::NpuFileMode => "old torch_npu dumps are written with mode 0200",
            Hint::WriteSummary => "write one with `memgate summarize`",
            Hint::RegenerateSummary => "regenerate it with `memgate summarize`",
        }
    }

    /// The hint as printed after the message.
    fn after(self) -> String {
        match self {
            Hint::NpuFileMode => format!(" ({})", self.text()),
            Hint::WriteSummary | Hint::RegenerateSummary => format!("; {}", self.text()),
        }
    }
}

impl LoadError {
    pub(crate) fn new(path: &Path, message: impl Into<String>) -> LoadError {
        LoadError {
            path: path.display().to_string(),
            message: message.into(),
            denied: false,
            hint: None,
        }
    }

    pub(crate) fn with_hint(self, hint: Hint) -> LoadError {
        LoadError {
            hint: Some(hint),
            ..self
        }
    }

    /// What the user can do, apart from the message.
    pub fn hint(&self) -> Option<Hint> {
        self.hint
    }

    /// This error of a file read as a snapshot: a permission denied gets
    /// the hint about torch_npu's file mode.
    pub(crate) fn of_snapshot(self) -> LoadError {
        if self.denied {
            return self.with_hint(Hint::NpuFileMode);
        }
        self
    }
}

/// What a file looks like from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Pickle,
    Json,
    Empty,
    Zip,
    Png,
    Gzip,
    Unknown,
}

/// Opcodes a protocol 0/1 pickle can start with (protocol 2+ starts with PROTO).
const PROTOCOL0_STARTS: &[u8] = b"(}])NIJKLMFGSTUVXdl";

/// Classify content by its first bytes.
pub(crate) fn detect_bytes(head: &[u8]) -> FileKind {
    let first_non_ws = head.iter().find(|b| !b.is_ascii_whitespace());
    match head {
        [] => FileKind::Empty,
        [b'P', b'K', 3, 4, ..] | [b'P', b'K', 5, 6, ..] => FileKind::Zip,
        [0x89, b'P', b'N', b'G', ..] => FileKind::Png,
        [0x1f, 0x8b, ..] => FileKind::Gzip,
        [0x80, ..] => FileKind::Pickle,
        _ if matches!(first_non_ws, Some(b'{') | Some(b'[')) => FileKind::Json,
        [b, ..] if PROTOCOL0_STARTS.contains(b) => FileKind::Pickle,
        // `cmodule\nname\n` / `imodule\nname\n`: a protocol 0 GLOBAL or INST,
        // the classic exploit; decode it so the refusal names the opcode.
        [b'c' | b'i', rest @ ..] if starts_with_module_line(rest) => FileKind::Pickle,
        _ => FileKind::Unknown,
    }
}

/// A Python dotted module name ended by a newline.
fn starts_with_module_line(bytes: &[u8]) -> bool {
    match bytes.iter().position(|&b| b == b'\n') {
        Some(end) if end > 0 => bytes[..end]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.'),
        _ => false,
    }
}

/// Open a snapshot; a FIFO, socket or device is refused at once instead of
/// blocking the open or never ending ([`files::open_regular`]).
fn open(path: &Path) -> Result<(File, u64), LoadError> {
    files::open_regular(path).map_err(|e| match e {
        FileError::NotFound => LoadError::new(path, "no such file"),
        FileError::Directory => LoadError::new(path, "is a directory, not a snapshot file"),
        FileError::Read(e) => io_error(path, &e),
        other => LoadError::new(path, other.to_string()),
    })
}

/// An I/O error in words; the role-specific hint is added by
/// [`LoadError::of_snapshot`].
fn io_error(path: &Path, e: &std::io::Error) -> LoadError {
    let mut error = LoadError::new(
        path,
        match e.kind() {
            std::io::ErrorKind::NotFound => "no such file".into(),
            std::io::ErrorKind::PermissionDenied => "cannot be read: permission denied".into(),
            _ => format!("cannot be read: {e}"),
        },
    );
    error.denied = e.kind() == std::io::ErrorKind::PermissionDenied;
    error
}

fn head(file: &mut File) -> Result<Vec<u8>, std::io::Error> {
    let mut buf = Vec::with_capacity(64);
    file.by_ref().take(64).read_to_end(&mut buf)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(buf)
}

/// What an input file holds.
#[derive(Debug)]
pub(crate) enum Content {
    /// Boxed: a snapshot's model is many times the size of a JSON value.
    Snapshot(Box<Snapshot>),
    /// A JSON object declaring itself a memgate document (a top-level
    /// `schema_version` or `kind`, which no snapshot has), parsed but left
    /// for the baseline layer to read.
    Document(serde_json::Value),
}

/// Top-level keys that make a JSON object a memgate document.
pub(crate) const DOCUMENT_KEYS: [&str; 2] = ["schema_version", "kind"];

impl Content {
    /// The snapshot, refusing a memgate document with a message naming `path`.
    pub(crate) fn into_snapshot(self, path: &Path) -> Result<Snapshot, LoadError> {
        match self {
            Content::Snapshot(s) => Ok(*s),
            Content::Document(_) => Err(LoadError::new(
                path,
                "is a memgate summary, not a snapshot (summaries are accepted as baselines \
                 and by `check`)",
            )),
        }
    }
}

/// Size and hex SHA-256 of every byte of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileDigest {
    pub(crate) size: u64,
    pub(crate) sha256: String,
}

/// A reader that hashes what passes through it, when asked to.
struct Hashing<R> {
    inner: R,
    hasher: Option<Sha256>,
    size: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(h) = &mut self.hasher {
            h.update(&buf[..n]);
            self.size += n as u64;
        }
        Ok(n)
    }
}

impl<R: Read> Hashing<R> {
    /// The digest of the whole input: what the decoder left unread (bytes
    /// after the pickle's STOP) is read and hashed too.
    fn finish(mut self) -> std::io::Result<Option<FileDigest>> {
        if self.hasher.is_none() {
            return Ok(None);
        }
        std::io::copy(&mut self, &mut std::io::sink())?;
        let digest = self.hasher.take().map(|h| h.finalize());
        Ok(digest.map(|d| FileDigest {
            size: self.size,
            sha256: d.iter().map(|b| format!("{b:02x}")).collect(),
        }))
    }
}

fn read(path: &Path, digest: bool) -> Result<(Content, Option<FileDigest>), LoadError> {
    let (file, len) = open(path)?;
    read_opened(path, file, len, digest)
}

/// [`read`] of a file already open (`len` bytes, read from its start).
fn read_opened(
    path: &Path,
    mut file: File,
    len: u64,
    digest: bool,
) -> Result<(Content, Option<FileDigest>), LoadError> {
    let io = |e: std::io::Error| io_error(path, &e);
    let head = head(&mut file).map_err(io)?;
    let mut input = Hashing {
        inner: file,
        hasher: digest.then(Sha256::new),
        size: 0,
    };
    let content = load_from(path, &head, &mut input, len, Way::Usual)?;
    Ok((content, input.finish().map_err(io)?))
}

/// Read a snapshot or a memgate document, deciding which by content. The
/// role is the caller's to say: see [`LoadError::of_snapshot`].
pub(crate) fn read_input(path: &Path) -> Result<Content, LoadError> {
    read(path, false).map(|(c, _)| c)
}

/// [`read_input`] of a snapshot (what `summarize` reads), and the file's
/// size and SHA-256 from the same bytes.
pub(crate) fn read_input_hashed(path: &Path) -> Result<(Content, FileDigest), LoadError> {
    let (content, digest) = read(path, true).map_err(LoadError::of_snapshot)?;
    Ok((content, digest.expect("the digest was asked for")))
}

/// The size and SHA-256 of a file, read whole but not decoded (a
/// snapshot already decoded elsewhere, `memgate mcp`'s cache, summarized).
pub(crate) fn digest_of(path: &Path) -> Result<FileDigest, LoadError> {
    let (file, _) = open(path)?;
    let hashing = Hashing {
        inner: file,
        hasher: Some(Sha256::new()),
        size: 0,
    };
    let digest = hashing.finish().map_err(|e| io_error(path, &e))?;
    digest.ok_or_else(|| LoadError::new(path, "no digest".to_string()))
}

/// Load a pickle or JSON snapshot.
pub fn load(path: &Path) -> Result<Snapshot, LoadError> {
    read_input(path)
        .map_err(LoadError::of_snapshot)?
        .into_snapshot(path)
}

#[cfg(feature = "mcp")]
/// Load a snapshot from a regular file already open (the MCP cache, which
/// fingerprinted it through the same handle): read from its start, never
/// opened again by name; `path` names it in errors.
pub(crate) fn load_opened(path: &Path, mut file: File, len: u64) -> Result<Snapshot, LoadError> {
    file.seek(SeekFrom::Start(0))
        .map_err(|e| io_error(path, &e).of_snapshot())?;
    read_opened(path, file, len, false)
        .map_err(LoadError::of_snapshot)?
        .0
        .into_snapshot(path)
}

/// Load a snapshot that is already in memory (fuzzing, tests); `name`
/// stands for the path in error messages.
pub fn load_bytes(name: &Path, bytes: &[u8]) -> Result<Snapshot, LoadError> {
    load_bytes_checked(name, bytes, true)
}

/// [`load_bytes`] with each device's trace held as a range of records
/// while decoding (`runs`, the usual way) or item by item (the oracle):
/// for tests and fuzzing, which check that both load alike.
#[doc(hidden)]
pub fn load_bytes_checked(name: &Path, bytes: &[u8], runs: bool) -> Result<Snapshot, LoadError> {
    let way = if runs { Way::Usual } else { Way::ItemLists };
    load_bytes_by(name, bytes, way)
}

/// [`load_bytes`] with every opcode through the decoder's general machine:
/// no flat-dict fast path and no entry templates. The oracle the fast
/// paths are tested against (tests, fuzzing); never used to load.
#[doc(hidden)]
pub fn load_bytes_general(name: &Path, bytes: &[u8]) -> Result<Snapshot, LoadError> {
    load_bytes_by(name, bytes, Way::General)
}

fn load_bytes_by(name: &Path, bytes: &[u8], way: Way) -> Result<Snapshot, LoadError> {
    let head = &bytes[..bytes.len().min(64)];
    load_from(name, head, bytes, bytes.len() as u64, way)?.into_snapshot(name)
}

/// How a pickle is decoded: the usual way, or as one of the oracles the
/// usual way is tested against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Way {
    Usual,
    /// Each device's trace list kept item by item, not as a range.
    ItemLists,
    /// Every opcode through the general machine (no fast path).
    General,
}

/// Decode and build from `input` (positioned at the start, `len` bytes long)
/// whose first bytes are `head`, decoded the `way` asked.
fn load_from<R: Read>(
    path: &Path,
    head: &[u8],
    input: R,
    len: u64,
    way: Way,
) -> Result<Content, LoadError> {
    let fail = |m: String| LoadError::new(path, m);
    match detect_bytes(head) {
        FileKind::Empty => Err(fail(
            "the file is empty (0 bytes): a crashed or interrupted dump".into(),
        )),
        FileKind::Zip => Err(fail(
            "is a zip archive (a torch.save file?), not a memory snapshot; dump one with \
             torch.cuda.memory._dump_snapshot()"
                .into(),
        )),
        FileKind::Png => Err(fail("is a PNG image, not a memory snapshot".into())),
        FileKind::Gzip => Err(fail(
            "is gzip-compressed; decompress it first (gunzip)".into(),
        )),
        // Only the first byte: the path may be a symlink to a secret
        // (`/proc/self/environ`), and the error goes to a public CI log.
        FileKind::Unknown => Err(fail(format!(
            "not a memory snapshot: neither a pickle nor JSON (first byte 0x{:02x})",
            head[0]
        ))),
        FileKind::Pickle => {
            let mut c = Collector::new(len);
            if way == Way::ItemLists {
                c = c.without_runs();
            }
            let d = match way {
                Way::General => decode_checked(input, Some(len), &mut c, false).map(|(d, _)| d),
                Way::Usual | Way::ItemLists => decode(input, Some(len), &mut c),
            };
            let d = d.map_err(|e| fail(e.to_string()))?;
            build(
                d.root,
                d.arena,
                c,
                Format::Pickle {
                    protocol: d.protocol,
                },
                d.trailing_bytes,
            )
            .map(|s| Content::Snapshot(Box::new(s)))
            .map_err(fail)
        }
        FileKind::Json => {
            let json = super::unique_keys::from_reader(BufReader::new(input)).map_err(fail)?;
            if DOCUMENT_KEYS.iter().any(|k| json.get(k).is_some()) {
                return Ok(Content::Document(json));
            }
            let mut arena = Arena::default();
            let mut c = Collector::new(0);
            let root = super::json::to_arena(&json, &mut arena, &mut c).map_err(&fail)?;
            drop(json);
            build(root, arena, c, Format::Json, 0)
                .map(|s| Content::Snapshot(Box::new(s)))
                .map_err(fail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_snapshot_that_cannot_be_read_gets_the_torch_npu_hint() {
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let e = io_error(Path::new("golden/rank0.json"), &denied);
        assert_eq!(
            e.to_string(),
            "golden/rank0.json: cannot be read: permission denied"
        );
        let snapshot = e.of_snapshot().of_snapshot();
        assert_eq!(snapshot.hint(), Some(Hint::NpuFileMode));
        assert_eq!(snapshot.message, "cannot be read: permission denied");
        assert_eq!(
            snapshot.to_string(),
            "golden/rank0.json: cannot be read: permission denied (old torch_npu dumps are \
             written with mode 0200)"
        );
        let missing = std::io::Error::from(std::io::ErrorKind::NotFound);
        let e = io_error(Path::new("x.pickle"), &missing).of_snapshot();
        assert_eq!(e.to_string(), "x.pickle: no such file");
    }
}
