//! Parse once, ask many times: decoded snapshots kept for the session,
//! keyed by canonical path and reused while the file's length, modification
//! time and digest (SHA-256 over its first and last MiB) are unchanged.
//!
//! The cache (`moka`) holds at most a bound of heap bytes, each snapshot
//! weighed by what its tables hold and what its labels can grow to
//! (`Tables::heap_bytes`), the least recently used evicted first; a
//! snapshot heavier than the bound is decoded for the call and not kept.
//! Concurrent first calls on one file decode it once: the first decodes
//! under the file's entry lock, the others wait for it and reuse it. Each
//! call gets its own use of the tables ([`Snapshot::reuse`]), so its
//! report limit is its own.
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use moka::ops::compute::{CompResult, Op};
use moka::policy::EvictionPolicy;
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

/// A cached snapshot and the fingerprint of the file it was read from.
struct Kept {
    print: Fingerprint,
    snap: Snapshot,
    bytes: u64,
}

/// Where a snapshot came from: the cache, or a fresh decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Cached,
    Decoded,
}

/// The session's snapshots.
pub(crate) struct Cache {
    limit: u64,
    kept: moka::sync::Cache<PathBuf, Arc<Kept>>,
}

/// Weights are counted in KiB: a `u32` weight then reaches 4 TiB.
const WEIGHT_UNIT: u64 = 1 << 10;

impl Cache {
    pub(crate) fn new(limit: u64) -> Cache {
        let kept = moka::sync::Cache::builder()
            .max_capacity(limit / WEIGHT_UNIT)
            .eviction_policy(EvictionPolicy::lru())
            .weigher(|_, k: &Arc<Kept>| {
                u32::try_from(k.bytes.div_ceil(WEIGHT_UNIT)).unwrap_or(u32::MAX)
            })
            .build();
        Cache { limit, kept }
    }

    /// The bytes the cache holds now.
    pub(crate) fn held(&self) -> u64 {
        self.kept.run_pending_tasks();
        self.kept.iter().map(|(_, k)| k.bytes).sum()
    }

    /// How many snapshots it holds.
    pub(crate) fn len(&self) -> usize {
        self.kept.run_pending_tasks();
        usize::try_from(self.kept.entry_count()).unwrap_or(usize::MAX)
    }

    /// A use of the snapshot at canonical `path`, decoded unless a cached
    /// copy is still the file's.
    pub(crate) fn get(&self, path: &Path) -> Result<(Snapshot, Source), String> {
        self.get_with(path, |p, f, len| {
            snapshot::load_opened(p, f, len).map_err(|e| e.to_string())
        })
    }

    /// `load` decodes the file the fingerprint was taken of, already open.
    fn get_with(
        &self,
        path: &Path,
        load: impl FnOnce(&Path, File, u64) -> Result<Snapshot, String>,
    ) -> Result<(Snapshot, Source), String> {
        let (print, file, len) = Fingerprint::open(path)?;
        if let Some(k) = self.kept.get(path).filter(|k| k.print == print) {
            return Ok((k.snap.reuse(), Source::Cached));
        }
        // Decoded under the entry's lock: a concurrent call on the same file
        // waits here and then finds it (unless it was too heavy to keep).
        let mut decoded = None;
        let done = self
            .kept
            .entry(path.to_path_buf())
            .and_try_compute_with(|now| {
                if now.as_ref().is_some_and(|e| e.value().print == print) {
                    return Ok(Op::Nop);
                }
                let snap = load(path, file, len)?;
                let bytes = snap.heap_bytes();
                let kept = Arc::new(Kept { print, snap, bytes });
                let op = if bytes > self.limit {
                    Op::Remove
                } else {
                    Op::Put(Arc::clone(&kept))
                };
                decoded = Some(kept);
                Ok::<_, String>(op)
            })?;
        self.kept.run_pending_tasks();
        Ok(match done {
            CompResult::Unchanged(e) => (e.value().snap.reuse(), Source::Cached),
            _ => {
                let kept = decoded.ok_or_else(|| format!("{}: not decoded", path.display()))?;
                (kept.snap.reuse(), Source::Decoded)
            }
        })
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
        assert!(a.shares_tables(&b));
        assert_eq!(decodes.get(), 1);
        assert_eq!(cache.held(), a.heap_bytes());
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
        let one = snapshot::load(&paths[0]).unwrap().heap_bytes();
        // Room for two (weights are counted in whole KiB), not three.
        let cache = Cache::new(2 * one + 2 * WEIGHT_UNIT);
        for p in &paths {
            cache.get(p).unwrap();
        }
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.held(), 2 * one);
        // The oldest (s0) went; s2 is still there.
        assert_eq!(cache.get(&paths[2]).unwrap().1, Source::Cached);
        assert_eq!(cache.get(&paths[0]).unwrap().1, Source::Decoded);
        let tiny = Cache::new(one - 1);
        tiny.get(&paths[0]).unwrap();
        assert_eq!((tiny.len(), tiny.held()), (0, 0));
    }

    #[test]
    fn sixty_four_concurrent_first_calls_on_one_file_decode_it_once() {
        let cache = Cache::new(1 << 30);
        let path = example();
        let decodes = std::sync::atomic::AtomicUsize::new(0);
        let start = std::sync::Barrier::new(64);
        let got: Vec<(Snapshot, Source)> = std::thread::scope(|s| {
            let calls: Vec<_> = (0..64)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        cache
                            .get_with(&path, |p, f, len| {
                                decodes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                // Slow enough that every other call arrives meanwhile.
                                std::thread::sleep(std::time::Duration::from_millis(200));
                                snapshot::load_opened(p, f, len).map_err(|e| e.to_string())
                            })
                            .unwrap()
                    })
                })
                .collect();
            calls.into_iter().map(|c| c.join().unwrap()).collect()
        });
        assert_eq!(decodes.into_inner(), 1);
        let decoded = got.iter().filter(|(_, s)| *s == Source::Decoded).count();
        assert_eq!(decoded, 1);
        assert!(got.iter().all(|(s, _)| s.shares_tables(&got[0].0)));
        assert_eq!((cache.len(), cache.held()), (1, got[0].0.heap_bytes()));
    }

    /// A JSON snapshot with one live block whose stack has `n` frames, each
    /// with its own line and two 500-byte strings shared by all of them.
    fn long_labels(n: usize) -> Snapshot {
        let (name, file) = ("f".repeat(500), "/p".repeat(250));
        let frames: Vec<_> = (0..n)
            .map(|i| serde_json::json!({"filename": file, "line": i, "name": name}))
            .collect();
        let block = serde_json::json!({"address": 0, "size": 512, "requested_size": 512,
            "state": "active_allocated", "frames": frames});
        let seg = serde_json::json!({"device": 0, "address": 0, "total_size": 512,
            "allocated_size": 512, "active_size": 512, "stream": 0,
            "segment_type": "small", "blocks": [block]});
        let text = serde_json::json!({"segments": [seg], "device_traces": [[]]}).to_string();
        snapshot::load_bytes(Path::new("long.json"), text.as_bytes()).unwrap()
    }

    #[test]
    fn the_weight_counts_the_labels_a_snapshot_can_grow_to_before_any_is_made() {
        let snap = long_labels(2000);
        let weight = snap.heap_bytes();
        // What the labels hold once made: each frame's label once, and a
        // 16-byte slot per frame in its stack's shared list.
        let mut made = 0;
        for i in 0..snap.stack_count() {
            let id = crate::snapshot::StackId::from_raw(u32::try_from(i).unwrap());
            let labels = snap.stack_labels(id);
            made += labels.iter().map(|l| l.len() + 16).sum::<usize>();
        }
        assert!(made > 2000 * 1000, "{made}");
        // The strings themselves are stored once: the labels are most of it.
        assert!(weight >= made as u64, "weight {weight} < labels {made}");
        assert!(weight < 2 * made as u64, "weight {weight}, labels {made}");
        // Making them changed nothing the cache counted.
        assert_eq!(snap.heap_bytes(), weight);
    }

    #[test]
    fn each_use_of_a_cached_snapshot_counts_its_own_report_limit() {
        // 2000 frames of ~1 KB: one listing costs ~2 MB, so 40 uses would
        // pass the 64 MiB limit if the count were the snapshot's.
        let snap = long_labels(2000);
        let stack = (0..u32::try_from(snap.stack_count()).unwrap())
            .map(crate::snapshot::StackId::from_raw)
            .max_by_key(|&id| snap.stack(id).len())
            .unwrap();
        for _ in 0..40 {
            let one = snap.reuse();
            let labels = one.stack_labels(stack);
            assert_eq!(labels.len(), 2000);
            assert_eq!(one.labels_overflow(), None);
        }
        // Within one use the limit still holds.
        for _ in 0..40 {
            snap.stack_labels(stack);
        }
        assert!(snap.labels_overflow().is_some());
    }
}
