//! Entry templates (issue 33): a trace entry whose key bytes repeat an
//! earlier entry's is read by position. Every snapshot must load to the
//! same model read that way as through the decoder's general machine (no
//! fast path, no templates), the oracle: real fixtures, the repository's
//! pickles, and hand-made streams that try to fool a template.

use std::path::{Path, PathBuf};

use memgate::snapshot::{load_bytes, load_bytes_general};
use memgate::Device;

/// The model (or the error) both ways; a failure names the file.
pub(super) fn same_both_ways(name: &Path, bytes: &[u8]) {
    let fast = load_bytes(name, bytes).map(|s| s.canonical());
    let general = load_bytes_general(name, bytes).map(|s| s.canonical());
    match (fast, general) {
        (Ok(a), Ok(b)) => {
            if a != b {
                let at = a
                    .bytes()
                    .zip(b.bytes())
                    .position(|(x, y)| x != y)
                    .unwrap_or(0);
                let lo = at.saturating_sub(300);
                panic!(
                    "{}: the models differ at {at}: {} ||| {}",
                    name.display(),
                    &a[lo..(at + 200).min(a.len())],
                    &b[lo..(at + 200).min(b.len())]
                );
            }
        }
        // The fast path names the dict's `SETITEMS`, the general machine
        // the opcode that stores it: the message after them is the same.
        (Err(a), Err(b)) => assert_eq!(after_opcode(&a), after_opcode(&b), "{}", name.display()),
        (a, b) => panic!(
            "{}: one way failed: fast {:?}, general {:?}",
            name.display(),
            a.err(),
            b.err()
        ),
    }
}

fn after_opcode(e: &memgate::snapshot::LoadError) -> String {
    let text = e.to_string();
    match text.find(", opcode ") {
        Some(i) => text[i..]
            .split_once(": ")
            .map_or(text.clone(), |(_, m)| m.to_string()),
        None => text,
    }
}

fn pickles_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            pickles_under(&p, out);
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("pickle" | "pkl")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn every_pickle_in_the_repository_loads_the_same_with_and_without_templates() {
    let mut files = Vec::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    pickles_under(&root.join("tests"), &mut files);
    pickles_under(&root.join("fuzz/seeds"), &mut files);
    assert!(files.len() > 50, "only {} pickles found", files.len());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        same_both_ways(&f, &bytes);
    }
}

#[test]
fn every_shared_fixture_loads_the_same_with_and_without_templates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if !dir.exists() {
        eprintln!(
            "SKIPPED: {} not found (../shared absent): the real snapshots were not read both ways",
            dir.display()
        );
        return;
    }
    let mut files = Vec::new();
    pickles_under(&dir, &mut files);
    assert!(!files.is_empty());
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        same_both_ways(&f, &bytes);
    }
}

/// A protocol 4 stream of `{"segments": [], "device_traces": [[E…]]}`,
/// its entries written by `entries` with the keys memoized once.
pub(super) struct Stream {
    pub(super) out: Vec<u8>,
    pub(super) memo: u32,
}

impl Stream {
    pub(super) fn new() -> Stream {
        Stream {
            out: vec![0x80, 4],
            memo: 0,
        }
    }
    pub(super) fn memoize(&mut self) -> u32 {
        self.out.push(0x94);
        self.memo += 1;
        self.memo - 1
    }
    pub(super) fn str(&mut self, s: &str) -> u32 {
        self.out.push(0x8c);
        self.out.push(u8::try_from(s.len()).unwrap());
        self.out.extend_from_slice(s.as_bytes());
        self.memoize()
    }
    pub(super) fn get(&mut self, i: u32) {
        self.out.push(b'h');
        self.out.push(u8::try_from(i).unwrap());
    }
    pub(super) fn int(&mut self, v: u32) {
        self.out.push(b'J');
        self.out.extend_from_slice(&v.to_le_bytes());
    }
    /// A string memoized and popped (a key read later by `BINGET`).
    pub(super) fn popped(&mut self, s: &str) -> u32 {
        let slot = self.str(s);
        self.out.push(b'0');
        slot
    }
    /// `{"segments": [], "device_traces": [[` up to the first entry.
    pub(super) fn open_trace(&mut self) {
        self.out.push(b'}');
        self.memoize();
        self.out.push(b'(');
        self.str("segments");
        self.out.push(b']');
        self.memoize();
        self.str("device_traces");
        self.out.push(b']');
        self.memoize();
        self.out.push(b']');
        self.memoize();
        self.out.push(b'(');
    }
    /// `BINPUT i` of the value on top of the stack, then `POP`.
    fn overwrite(&mut self, i: u32, s: &str) {
        self.out.push(0x8c);
        self.out.push(u8::try_from(s.len()).unwrap());
        self.out.extend_from_slice(s.as_bytes());
        self.out
            .extend_from_slice(&[b'q', u8::try_from(i).unwrap(), b'0']);
    }
}

/// Keys `action`, `addr`, `size` memoized by a first entry; then
/// `between(stream, keys)` and four more entries written with the same
/// key bytes.
fn trace(between: impl Fn(&mut Stream, [u32; 4])) -> Vec<u8> {
    let mut s = Stream::new();
    s.open_trace();
    let mut keys = [0; 4];
    for (n, size) in [4096u32, 512, 1024, 2048, 8192, 256]
        .into_iter()
        .enumerate()
    {
        s.out.push(b'}');
        s.memoize();
        s.out.push(b'(');
        if n == 0 {
            keys[0] = s.str("action");
            keys[3] = s.str("alloc");
            keys[1] = s.str("addr");
            s.int(1 << 20);
            keys[2] = s.str("size");
            s.int(size);
        } else {
            s.get(keys[0]);
            s.get(keys[3]);
            s.get(keys[1]);
            s.int((1 << 20) + 65536 * u32::try_from(n).unwrap());
            s.get(keys[2]);
            s.int(size);
        }
        s.out.push(b'u');
        if n == 2 {
            between(&mut s, keys);
        }
    }
    s.out.extend_from_slice(b"ea");
    s.out.extend_from_slice(b"u.");
    s.out
}

fn sizes(bytes: &[u8]) -> Vec<u64> {
    let s = load_bytes(Path::new("t.pickle"), bytes).unwrap();
    s.trace(Device::new(0)).iter().map(|e| e.size).collect()
}

#[test]
fn entries_with_the_same_key_bytes_load_the_same_as_the_general_machine() {
    let plain = trace(|_, _| {});
    same_both_ways(Path::new("plain.pickle"), &plain);
    assert_eq!(sizes(&plain), [4096, 512, 1024, 2048, 8192, 256]);
}

#[test]
fn a_key_slot_written_again_between_entries_is_read_as_its_new_key() {
    // After the third entry, the slot of `size` is made to hold "addr" and
    // the slot of `addr` "size": the next entries' bytes are unchanged but
    // their addr and size swap. A template kept past the overwrite would
    // read them as before.
    let swapped = trace(|s, [_, addr, size, _]| {
        s.overwrite(size, "addr");
        s.overwrite(addr, "size");
    });
    same_both_ways(Path::new("swapped.pickle"), &swapped);
    let got = sizes(&swapped);
    assert_eq!(&got[..3], [4096, 512, 1024]);
    assert!(
        got[3..].iter().all(|&s| s >= 1 << 20),
        "the addresses were read as sizes: {got:?}"
    );
}

#[test]
fn a_key_slot_holding_another_action_is_read_as_the_new_action() {
    // The value slot of `alloc` now holds "segment_alloc": the entries
    // after it are segment allocations, with the same bytes.
    let renamed = trace(|s, [_, _, _, alloc]| s.overwrite(alloc, "segment_alloc"));
    same_both_ways(Path::new("renamed.pickle"), &renamed);
    let s = load_bytes(Path::new("r.pickle"), &renamed).unwrap();
    let actions: Vec<&str> = (s.trace(Device::new(0)).iter())
        .map(|e| s.action_name(e.action()))
        .collect();
    assert_eq!(
        actions,
        [
            "alloc",
            "alloc",
            "alloc",
            "segment_alloc",
            "segment_alloc",
            "segment_alloc"
        ]
    );
}

/// One step of a random trace: an entry whose items are `(key, value)`
/// picks (indices into the key and value pools), or an overwrite of a key's
/// memo slot with another key's name.
#[derive(Debug, Clone)]
enum Step {
    Entry(Vec<(usize, usize)>),
    Overwrite(usize, usize),
}

const KEYS: [&str; 8] = [
    "action",
    "addr",
    "size",
    "time_us",
    "stream",
    "frames",
    "user_metadata",
    "other",
];

fn random_trace(steps: &[Step]) -> Vec<u8> {
    let mut s = Stream::new();
    // The key strings and `alloc`, memoized and popped before the snapshot.
    let keys: Vec<u32> = KEYS.iter().map(|k| s.popped(k)).collect();
    let alloc = s.popped("alloc");
    s.open_trace();
    for step in steps {
        match step {
            Step::Entry(items) => {
                s.out.push(b'}');
                s.memoize();
                s.out.push(b'(');
                // Most entries are well formed: an action and a size first.
                let valid = [(0, 0), (2, 6)];
                for &(k, v) in valid.iter().chain(items) {
                    s.get(keys[k % keys.len()]);
                    match v % 5 {
                        0 => s.get(alloc),
                        1 => s.int(u32::try_from(v).unwrap()),
                        2 => s.out.extend_from_slice(b"G@\x09\x21\xfb\x54\x44\x2d\x18"),
                        3 => s.out.push(b']'),
                        _ => s.get(keys[v % keys.len()]),
                    }
                }
                s.out.push(b'u');
            }
            Step::Overwrite(k, name) => {
                let slot = keys[k % keys.len()];
                s.overwrite(slot, KEYS[name % KEYS.len()]);
            }
        }
    }
    s.out.extend_from_slice(b"ea");
    s.out.extend_from_slice(b"u.");
    s.out
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        8 => proptest::collection::vec((1..8usize, prop_oneof![
            4 => Just(1usize), 1 => 0..40usize
        ]), 0..5).prop_map(Step::Entry),
        1 => (0..8usize, 0..8usize).prop_map(|(k, n)| Step::Overwrite(k, n)),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn random_entry_streams_load_the_same_with_and_without_templates(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        let bytes = random_trace(&steps);
        same_both_ways(Path::new("random.pickle"), &bytes);
    }
}

/// Found by the fuzz target `snapshot_load` once it compared the fast load
/// with the general machine (this session): a stream that adds items to a
/// dict through its memo slot after the dict's own `SETITEMS`. The general
/// machine folds the dict only when it is stored into the trace list, so it
/// takes the late items; every fast path (the flat-dict path since before
/// entry templates, and the templates) folds it at its `SETITEMS`, and the
/// late `SETITEMS` is refused ("found consumed container", exit 2 naming
/// the file). No snapshot writer does this; the load fails cleanly, but the
/// two ways disagree. Ignored until the fast path can take late items.
#[test]
#[ignore = "known divergence: a dict modified after its SETITEMS (docs in the test)"]
fn a_dict_modified_after_its_setitems_loads_as_the_general_machine_does() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/divergence/dict_modified_after_its_setitems.bin");
    let bytes = std::fs::read(&path).unwrap();
    same_both_ways(&path, &bytes);
}
