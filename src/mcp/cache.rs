//! Parse once, ask many times: decoded snapshots kept for the session,
//! keyed by canonical path and reused while the file's length, modification
//! time and digest (SHA-256 over its first and last MiB) are unchanged. The
//! cache holds at most a bound of (estimated) decoded bytes; the oldest
//! entry is evicted first. A snapshot larger than the bound is decoded for
//! the call and not kept.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::mem::size_of;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::files;
use crate::snapshot::{self, Snapshot};

/// The digest covers this much at each end of the file.
const DIGEST_SPAN: u64 = 1 << 20;

/// What must be unchanged for a cached snapshot to be reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    digest: [u8; 32],
}

impl Fingerprint {
    /// The regular file at `path`, opened once (a FIFO, socket or device
    /// is refused before a byte is read, without waiting for a writer;
    /// beneath the roots, [`crate::beneath`]), its fingerprint, and the
    /// open file and its length, to decode from the same handle.
    pub(crate) fn open(path: &Path) -> Result<(Fingerprint, File, u64), String> {
        let named = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let (mut f, len) = files::open_regular(path).map_err(|e| named(&e))?;
        let print = Fingerprint::of_file(&mut f, len).map_err(|e| named(&e))?;
        Ok((print, f, len))
    }

    fn of_file(f: &mut File, len: u64) -> std::io::Result<Fingerprint> {
        let modified = f.metadata()?.modified().ok();
        let mut hash = Sha256::new();
        hash.update(len.to_le_bytes());
        let mut buf = Vec::new();
        f.by_ref().take(DIGEST_SPAN).read_to_end(&mut buf)?;
        hash.update(&buf);
        if len > DIGEST_SPAN {
            buf.clear();
            f.seek(SeekFrom::Start(
                len.saturating_sub(DIGEST_SPAN).max(DIGEST_SPAN),
            ))?;
            f.by_ref().take(DIGEST_SPAN).read_to_end(&mut buf)?;
            hash.update(&buf);
        }
        Ok(Fingerprint {
            len,
            modified,
            digest: hash.finalize().into(),
        })
    }
}

/// The decoded size of a snapshot, estimated from its tables (what the
/// cache bound counts).
pub(crate) fn estimated_bytes(s: &Snapshot) -> u64 {
    let blocks: usize = s.segments.iter().map(|g| g.blocks.len()).sum();
    let strings: usize = s
        .strings
        .iter()
        .map(|t| t.len() + size_of::<Box<str>>())
        .sum();
    let total = s.entries.len() * size_of::<crate::snapshot::TraceEntry>()
        + s.segments.len() * size_of::<crate::snapshot::Segment>()
        + blocks * 64
        + strings
        + s.frames.len() * 24
        + s.stack_frames.len() * 4
        + s.stack_spans.len() * 8
        // The labels' slots, one per frame and three per stack.
        + (s.frames.len() + 3 * s.stack_spans.len()) * 16;
    u64::try_from(total).unwrap_or(u64::MAX)
}

struct Entry {
    path: PathBuf,
    print: Fingerprint,
    snap: Arc<Snapshot>,
    bytes: u64,
}

/// Where a snapshot came from: the cache, or a fresh decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Cached,
    Decoded,
}

/// The session's snapshots, oldest first.
pub(crate) struct Cache {
    limit: u64,
    inner: Mutex<VecDeque<Entry>>,
}

impl Cache {
    pub(crate) fn new(limit: u64) -> Cache {
        Cache {
            limit,
            inner: Mutex::new(VecDeque::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Entry>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes the cache holds now.
    pub(crate) fn held(&self) -> u64 {
        self.lock().iter().map(|e| e.bytes).sum()
    }

    /// How many snapshots it holds.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The snapshot at canonical `path`, decoded unless a cached copy is
    /// still the file's.
    pub(crate) fn get(&self, path: &Path) -> Result<(Arc<Snapshot>, Source), String> {
        self.get_with(path, |p, f, len| {
            snapshot::load_opened(p, f, len).map_err(|e| e.to_string())
        })
    }

    /// `load` decodes the file the fingerprint was taken of, already open.
    fn get_with(
        &self,
        path: &Path,
        load: impl FnOnce(&Path, File, u64) -> Result<Snapshot, String>,
    ) -> Result<(Arc<Snapshot>, Source), String> {
        let (print, file, len) = Fingerprint::open(path)?;
        {
            let mut q = self.lock();
            if let Some(i) = q.iter().position(|e| e.path == path) {
                if q[i].print == print {
                    return Ok((Arc::clone(&q[i].snap), Source::Cached));
                }
                q.remove(i);
            }
        }
        let snap = Arc::new(load(path, file, len)?);
        self.insert(path, print, Arc::clone(&snap));
        Ok((snap, Source::Decoded))
    }

    fn insert(&self, path: &Path, print: Fingerprint, snap: Arc<Snapshot>) {
        let bytes = estimated_bytes(&snap);
        if bytes > self.limit {
            return;
        }
        let mut q = self.lock();
        let mut held: u64 = q.iter().map(|e| e.bytes).sum();
        while held + bytes > self.limit {
            match q.pop_front() {
                Some(old) => held -= old.bytes,
                None => break,
            }
        }
        q.push_back(Entry {
            path: path.to_path_buf(),
            print,
            snap,
            bytes,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    fn example() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/snapshots/rank0.pickle")
            .canonicalize()
            .unwrap()
    }

    #[test]
    fn a_second_get_of_an_unchanged_file_is_not_decoded_again() {
        let cache = Cache::new(1 << 30);
        let path = example();
        let decodes = Cell::new(0);
        let load = |p: &Path, f: File, len: u64| {
            decodes.set(decodes.get() + 1);
            snapshot::load_opened(p, f, len).map_err(|e| e.to_string())
        };
        let (a, s1) = cache.get_with(&path, load).unwrap();
        let (b, s2) = cache.get_with(&path, load).unwrap();
        assert_eq!((s1, s2), (Source::Decoded, Source::Cached));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(decodes.get(), 1);
        assert_eq!(cache.held(), estimated_bytes(&a));
    }

    #[test]
    fn a_changed_file_is_decoded_again() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("s.pickle");
        std::fs::copy(example(), &copy).unwrap();
        let cache = Cache::new(1 << 30);
        assert_eq!(cache.get(&copy).unwrap().1, Source::Decoded);
        assert_eq!(cache.get(&copy).unwrap().1, Source::Cached);
        // One byte more: the length (and the digest of the last MiB) differ.
        let mut bytes = std::fs::read(&copy).unwrap();
        let before = Fingerprint::open(&copy).unwrap().0;
        bytes.push(b'.');
        std::fs::write(&copy, &bytes).unwrap();
        assert_ne!(Fingerprint::open(&copy).unwrap().0, before);
        assert_eq!(cache.get(&copy).unwrap().1, Source::Decoded);
        assert_eq!(cache.len(), 1);
    }

    #[cfg(unix)] // FIFOs
    #[test]
    fn a_fifo_nobody_writes_is_refused_at_once_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("stuck.pickle");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo failed");
        // On another thread: a blocking open would never return.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(Cache::new(1 << 30).get(&fifo).map(|_| ()));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(5));
        let err = got
            .expect("the fingerprint waited for a writer")
            .unwrap_err();
        assert!(err.contains("FIFO"), "{err}");
    }

    #[test]
    fn the_bound_evicts_the_oldest_and_refuses_what_cannot_fit() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> = (0..3)
            .map(|i| {
                let p = dir.path().join(format!("s{i}.pickle"));
                std::fs::copy(example(), &p).unwrap();
                p
            })
            .collect();
        let one = estimated_bytes(&snapshot::load(&paths[0]).unwrap());
        let cache = Cache::new(2 * one);
        for p in &paths {
            cache.get(p).unwrap();
        }
        assert_eq!(cache.len(), 2);
        assert!(cache.held() <= 2 * one);
        // The oldest (s0) went; s2 is still there.
        assert_eq!(cache.get(&paths[2]).unwrap().1, Source::Cached);
        assert_eq!(cache.get(&paths[0]).unwrap().1, Source::Decoded);
        let tiny = Cache::new(one - 1);
        tiny.get(&paths[0]).unwrap();
        assert_eq!((tiny.len(), tiny.held()), (0, 0));
    }
}
