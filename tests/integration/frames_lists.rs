//! Frames lists read by their bytes (issue 33): torch writes each
//! allocation's own `frames` list of memo reads, and a list whose bytes
//! were seen before gets the stack folded then, without reading its items.
//! Every stream must load as through the general machine (the oracle),
//! also where the bytes stay the same and what they read does not.

use std::path::Path;

use memgate::snapshot::load_bytes;
use memgate::Device;

use super::templates::{same_both_ways, Stream};

/// The memo slots of the keys an entry and a frame use.
struct Keys {
    action: u32,
    alloc: u32,
    addr: u32,
    size: u32,
    frames: u32,
    filename: u32,
    line: u32,
    name: u32,
}

/// `{"segments": [], "device_traces": [[` with every key memoized (and
/// popped) first; `entries` writes the entries; then the closing bytes.
fn snapshot(entries: impl Fn(&mut Stream, &Keys)) -> Vec<u8> {
    let mut s = Stream::new();
    let k = Keys {
        action: s.popped("action"),
        alloc: s.popped("alloc"),
        addr: s.popped("addr"),
        size: s.popped("size"),
        frames: s.popped("frames"),
        filename: s.popped("filename"),
        line: s.popped("line"),
        name: s.popped("name"),
    };
    s.open_trace();
    entries(&mut s, &k);
    s.out.extend_from_slice(b"eau.");
    s.out
}

/// A frame dict written in place, named `name`, stored in a new memo slot
/// or (`into`) over a filled one by `BINPUT`; its slot.
fn frame(s: &mut Stream, k: &Keys, name: &str, into: Option<u32>) -> u32 {
    s.out.push(b'}');
    let slot = match into {
        Some(i) => {
            s.out.extend_from_slice(&[b'q', u8::try_from(i).unwrap()]);
            i
        }
        None => s.memoize(),
    };
    s.out.push(b'(');
    s.get(k.filename);
    s.str("train.py");
    s.get(k.line);
    s.int(7);
    s.get(k.name);
    s.str(name);
    s.out.push(b'u');
    slot
}

/// An allocation of `size` bytes up to its `frames` key, with `extra`
/// written among its items first.
fn entry_head(s: &mut Stream, k: &Keys, size: u32, extra: impl Fn(&mut Stream)) {
    s.out.push(b'}');
    s.memoize();
    s.out.push(b'(');
    s.get(k.action);
    s.get(k.alloc);
    s.get(k.addr);
    s.int(size << 4);
    s.get(k.size);
    s.int(size);
    extra(s);
    s.get(k.frames);
    s.out.push(b']');
    s.memoize();
}

/// An allocation whose frames list reads `slots` from the memo (torch's
/// `MARK BINGET… APPENDS`).
fn entry(s: &mut Stream, k: &Keys, size: u32, slots: &[u32], extra: impl Fn(&mut Stream)) {
    entry_head(s, k, size, extra);
    s.out.push(b'(');
    for &f in slots {
        s.get(f);
    }
    s.out.extend_from_slice(b"eu");
}

/// The names of each allocation's frames on device 0, innermost first.
fn stacks(bytes: &[u8]) -> Vec<Vec<String>> {
    let s = load_bytes(Path::new("frames.pickle"), bytes).unwrap();
    (s.trace(Device::new(0)).iter())
        .map(|e| s.stack(e.stack).iter().map(|&f| s.frame_label(f)).collect())
        .collect()
}

/// The first allocation writes frames `a` and `b` in place, the next
/// three read them; then `between`, and three more allocations read the
/// same slots with the same bytes.
fn torch_shaped(between: impl Fn(&mut Stream, &Keys, [u32; 2])) -> Vec<u8> {
    snapshot(|s, k| {
        entry_head(s, k, 512, |_| {});
        s.out.push(b'(');
        let a = frame(s, k, "a", None);
        let b = frame(s, k, "b", None);
        s.out.extend_from_slice(b"eu");
        for size in [1024, 2048, 4096] {
            entry(s, k, size, &[a, b], |_| {});
        }
        between(s, k, [a, b]);
        for size in [8192, 16384, 32768] {
            entry(s, k, size, &[a, b], |_| {});
        }
    })
}

#[test]
fn frames_lists_with_the_same_bytes_load_the_same_as_the_general_machine() {
    let plain = torch_shaped(|_, _, _| {});
    same_both_ways(Path::new("plain.pickle"), &plain);
    let want = ["a (train.py:7)", "b (train.py:7)"];
    assert_eq!(stacks(&plain), vec![want.map(String::from).to_vec(); 7]);
}

#[test]
fn a_frame_slot_overwritten_by_binput_gives_the_same_bytes_the_new_stack() {
    // An allocation writes frame `c` in place over the slot of `a`: the
    // allocations after it read `c` with the bytes that read `a` before.
    let bytes = torch_shaped(|s, k, [a, _]| {
        entry_head(s, k, 64, |_| {});
        s.out.push(b'(');
        frame(s, k, "c", Some(a));
        s.out.extend_from_slice(b"eu");
    });
    same_both_ways(Path::new("overwritten.pickle"), &bytes);
    let got = stacks(&bytes);
    let names = |n: usize| got[n].iter().map(|f| &f[..1]).collect::<String>();
    assert_eq!(names(3), "ab");
    assert_eq!(names(4), "c");
    for n in 5..8 {
        assert_eq!(names(n), "cb", "allocation {n}: {got:?}");
    }
}

#[test]
fn a_frames_list_reading_a_slot_its_own_entry_writes_reads_the_new_value() {
    // The entry stores a key string over the slot of `b` before its
    // frames list reads that slot with the bytes seen before: the list
    // holds the string, not frame `b`.
    let bytes = snapshot(|s, k| {
        entry_head(s, k, 512, |_| {});
        s.out.push(b'(');
        let a = frame(s, k, "a", None);
        let b = frame(s, k, "b", None);
        s.out.extend_from_slice(b"eu");
        for size in [1024, 2048] {
            entry(s, k, size, &[a, b], |_| {});
        }
        entry(s, k, 4096, &[a, b], |s| {
            s.out.extend_from_slice(b"\x8c\x05other");
            s.out.extend_from_slice(&[b'q', u8::try_from(b).unwrap()]);
            s.int(1);
        });
    });
    same_both_ways(Path::new("own-write.pickle"), &bytes);
    let got = load_bytes(Path::new("own-write.pickle"), &bytes).map(|s| {
        let t = s.trace(Device::new(0));
        t.last().map(|e| s.stack(e.stack).len())
    });
    assert!(
        !matches!(got, Ok(Some(2))),
        "the last list was read as the two frames cached before: {got:?}"
    );
}

#[test]
fn more_distinct_frames_lists_than_the_cache_holds_load_the_same_as_the_general_machine() {
    // 40000 allocations, each list three of 60 frames in its own order:
    // more lists than the cache keeps (32768), so it is emptied on the way
    // and lists seen before it was emptied are read again.
    let bytes = snapshot(|s, k| {
        entry_head(s, k, 512, |_| {});
        s.out.push(b'(');
        let names: Vec<String> = (0..60).map(|n| format!("f{n}")).collect();
        let f: Vec<u32> = names.iter().map(|n| frame(s, k, n, None)).collect();
        s.out.extend_from_slice(b"eu");
        for n in 0..40_000usize {
            let pick = [f[n % 60], f[(n / 60) % 60], f[(n / 3600 + n) % 60]];
            entry(s, k, u32::try_from(n % 4096).unwrap() + 1, &pick, |_| {});
        }
        // The first lists again, after the cache was emptied.
        for n in 0..100usize {
            let pick = [f[n % 60], f[(n / 60) % 60], f[(n / 3600 + n) % 60]];
            entry(s, k, 7, &pick, |_| {});
        }
    });
    same_both_ways(Path::new("many-lists.pickle"), &bytes);
    let got = stacks(&bytes);
    assert_eq!(got.len(), 40_101);
    assert_eq!(got[40_001], got[1], "the same list, the same stack");
}
