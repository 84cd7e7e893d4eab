//! Opening a snapshot file: kind detection from content, decode, build,
//! and errors that name the file.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;

use thiserror::Error;

use crate::pickle::{decode, Arena};

use super::build::build;
use super::collect::Collector;
use super::model::{Format, Snapshot};

/// Why a file could not be read as a snapshot: `"<file>: <what>"`.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{path}: {message}")]
pub struct LoadError {
    pub path: String,
    pub message: String,
}

impl LoadError {
    pub fn new(path: &Path, message: impl Into<String>) -> LoadError {
        LoadError {
            path: path.display().to_string(),
            message: message.into(),
        }
    }
}

/// What a file looks like from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
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
pub fn detect_bytes(head: &[u8]) -> FileKind {
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

fn open(path: &Path) -> Result<(File, u64), LoadError> {
    let meta = std::fs::metadata(path).map_err(|e| LoadError::new(path, io_message(&e)))?;
    if meta.is_dir() {
        return Err(LoadError::new(path, "is a directory, not a snapshot file"));
    }
    let file = File::open(path).map_err(|e| LoadError::new(path, io_message(&e)))?;
    Ok((file, meta.len()))
}

fn io_message(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => {
            "cannot be read: permission denied (old torch_npu dumps are written with mode 0200)"
                .into()
        }
        _ => format!("cannot be read: {e}"),
    }
}

fn head(file: &mut File) -> Result<Vec<u8>, std::io::Error> {
    let mut buf = Vec::with_capacity(64);
    file.by_ref().take(64).read_to_end(&mut buf)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(buf)
}

/// The kind of a file on disk (for callers that accept summaries too).
pub fn detect(path: &Path) -> Result<FileKind, LoadError> {
    let (mut file, _) = open(path)?;
    let head = head(&mut file).map_err(|e| LoadError::new(path, io_message(&e)))?;
    Ok(detect_bytes(&head))
}

/// Load a pickle or JSON snapshot.
pub fn load(path: &Path) -> Result<Snapshot, LoadError> {
    let (mut file, len) = open(path)?;
    let head = head(&mut file).map_err(|e| LoadError::new(path, io_message(&e)))?;
    load_from(path, &head, file, len)
}

/// Load a snapshot that is already in memory (fuzzing, tests); `name`
/// stands for the path in error messages.
pub fn load_bytes(name: &Path, bytes: &[u8]) -> Result<Snapshot, LoadError> {
    load_from(
        name,
        &bytes[..bytes.len().min(64)],
        bytes,
        bytes.len() as u64,
    )
}

/// Decode and build from `input` (positioned at the start, `len` bytes long)
/// whose first bytes are `head`.
fn load_from<R: Read>(path: &Path, head: &[u8], input: R, len: u64) -> Result<Snapshot, LoadError> {
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
            let d = decode(input, Some(len), &mut c).map_err(|e| fail(e.to_string()))?;
            build(
                d.root,
                d.arena,
                c,
                Format::Pickle {
                    protocol: d.protocol,
                },
                d.trailing_bytes,
            )
            .map_err(fail)
        }
        FileKind::Json => {
            let json: serde_json::Value = serde_json::from_reader(BufReader::new(input))
                .map_err(|e| fail(format!("invalid JSON: {e}")))?;
            if json.get("schema_version").is_some() {
                return Err(fail(
                    "is a memgate summary, not a snapshot (summaries are accepted as baselines \
                     and by `check`)"
                        .into(),
                ));
            }
            let mut arena = Arena::default();
            let mut c = Collector::new(0);
            let root = super::json::to_arena(&json, &mut arena, &mut c).map_err(&fail)?;
            drop(json);
            build(root, arena, c, Format::Json, 0).map_err(fail)
        }
    }
}
