//! A device's trace held as a range of records while decoding (issue 33):
//! hand-written pickles, each loaded with the range on and off (the list
//! kept item by item is the oracle), which must agree figure for figure.

use std::path::Path;

use super::build::build;
use super::collect::{Collector, TAG_ENTRY};
use super::load::load_bytes_checked;
use crate::pickle::{decode, Obj, Value};

/// `SHORT_BINUNICODE`.
fn s(text: &str) -> Vec<u8> {
    let mut out = vec![0x8c, u8::try_from(text.len()).unwrap()];
    out.extend_from_slice(text.as_bytes());
    out
}

/// `BININT`.
fn int(n: i32) -> Vec<u8> {
    let mut out = vec![b'J'];
    out.extend_from_slice(&n.to_le_bytes());
    out
}

/// A trace-entry dict: `{action: alloc, addr, size}` plus `more` items.
fn entry(addr: i32, more: &[u8]) -> Vec<u8> {
    [
        &b"}("[..],
        &s("action"),
        &s("alloc"),
        &s("addr"),
        &int(addr),
        &s("size"),
        &int(addr + 1),
        more,
        b"u",
    ]
    .concat()
}

/// `device_traces`: the outer list holding `parts` (device lists and
/// whatever the test writes between them).
fn device_traces(parts: &[&[u8]]) -> Vec<u8> {
    [&b"]("[..], &parts.concat(), b"e"].concat()
}

/// A device list of two entries (addr 10 and 20), stored in memo slot 10.
fn memoized_pair() -> Vec<u8> {
    [&b"]q\x0a("[..], &entry(10, b""), &entry(20, b""), b"e"].concat()
}

/// `{before…, segments: [], device_traces: TRACES, after…}`.
fn snapshot(before: &[u8], traces: &[u8], after: &[u8]) -> Vec<u8> {
    [
        &b"\x80\x04}("[..],
        before,
        &s("segments"),
        b"]",
        &s("device_traces"),
        traces,
        after,
        b"u.",
    ]
    .concat()
}

/// The bytes loaded with the range on and off: the same snapshot (every
/// table, every warning) or the same error. Returns the first.
fn same_both_ways(bytes: &[u8]) -> Result<String, String> {
    let load = |runs| {
        load_bytes_checked(Path::new("runs.pickle"), bytes, runs)
            .map(|s| format!("{:?}", *s))
            .map_err(|e| e.to_string())
    };
    let (on, off) = (load(true), load(false));
    assert_eq!(on, off, "the range and the item list disagree");
    on
}

/// The first device list of a decoded snapshot, and whether it was held
/// as ranges of entry records (which ranges, as `(start, end)`).
fn first_list_range(bytes: &[u8]) -> Option<Vec<(u32, u32)>> {
    let mut c = Collector::new(bytes.len() as u64);
    let d = decode(bytes, Some(bytes.len() as u64), &mut c).unwrap();
    let top = d.arena.dict(d.root).unwrap();
    let traces = top
        .iter()
        .find(|(k, _)| matches!(k, Value::Str(s) if d.arena.str(*s) == "device_traces"))
        .map(|(_, v)| *v)
        .unwrap();
    let first = d.arena.seq(traces).unwrap()[0];
    let Value::Obj(id) = d.arena.resolve(first) else {
        panic!("a list")
    };
    let held = matches!(d.arena.obj(id), Obj::Run(_));
    let range = d.arena.run(first).map(|(tag, r)| {
        assert_eq!(tag, TAG_ENTRY);
        r.iter().map(|r| (r.start, r.end)).collect()
    });
    assert_eq!(held, range.is_some());
    // Built, the range is the device's trace.
    build(d.root, d.arena, c, super::Format::Json, 0).unwrap();
    range
}

#[test]
fn a_device_list_of_entries_in_order_is_held_as_a_range_not_item_by_item() {
    // One APPENDS batch, then single APPENDs (protocol 2's shape for short lists).
    let traces = device_traces(&[
        &b"]("[..],
        &entry(10, b""),
        &entry(20, b""),
        &entry(30, b""),
        b"e",
        &entry(40, b""),
        b"a",
    ]);
    let bytes = snapshot(b"", &traces, b"");
    assert_eq!(first_list_range(&bytes), Some(vec![(0, 4)]));
    let text = same_both_ways(&bytes).unwrap();
    assert!(text.contains("addr: 40"), "{text}");
}

#[test]
fn an_entry_left_to_the_general_machine_starts_a_new_range_and_loads_alike() {
    // torch's shape: an entry whose `frames` holds a frame dict seen for the
    // first time is no flat dict; it is folded when the batch is appended,
    // after the entries behind it.
    let frame = [
        &b"}("[..],
        &s("filename"),
        &s("a.py"),
        &s("name"),
        &s("f"),
        &s("line"),
        b"K\x03u",
    ]
    .concat();
    let frames = [&s("frames")[..], b"](", &frame, b"e"].concat();
    let traces = device_traces(&[
        &b"]("[..],
        &entry(10, b""),
        &entry(20, &frames),
        &entry(30, b""),
        b"e",
    ]);
    let bytes = snapshot(b"", &traces, b"");
    assert_eq!(first_list_range(&bytes), Some(vec![(0, 1), (2, 3), (1, 2)]));
    let text = same_both_ways(&bytes).unwrap();
    let at = |addr: &str| text.find(addr).unwrap();
    assert!(at("addr: 10") < at("addr: 20") && at("addr: 20") < at("addr: 30"));
}

#[test]
fn a_non_entry_appended_after_entries_loads_as_with_the_item_list() {
    // An int after two entries: refused alike.
    let two = [&b"]("[..], &entry(10, b""), &entry(20, b""), b"e"].concat();
    let traces = device_traces(&[&two[..], b"K\x05a"]);
    let e = same_both_ways(&snapshot(b"", &traces, b"")).unwrap_err();
    assert!(e.contains("device_traces[0][2] is a int"), "{e}");
    // An empty dict appended (not an entry yet), filled after it was
    // stored: it becomes the third entry, alike.
    let traces = device_traces(&[&two[..], b"}q\x0ba"]);
    let fill = [
        &b"h\x0b("[..],
        &s("action"),
        &s("free_completed"),
        &s("addr"),
        &int(10),
        &s("size"),
        &int(11),
        b"u0",
    ]
    .concat();
    let bytes = snapshot(b"", &traces, &fill);
    assert_eq!(first_list_range(&bytes), None);
    let text = same_both_ways(&bytes).unwrap();
    assert_eq!(text.matches("TraceEntry").count(), 3, "{text}");
}

#[test]
fn a_device_list_read_back_from_the_memo_and_appended_again_stays_one_range() {
    let traces = device_traces(&[
        &memoized_pair(),
        b"h\x0a(",
        &entry(30, b""),
        &entry(40, b""),
        b"e0",
    ]);
    let bytes = snapshot(b"", &traces, b"");
    assert_eq!(first_list_range(&bytes), Some(vec![(0, 4)]));
    same_both_ways(&bytes).unwrap();
    // Another list's entry in between: two ranges.
    let traces = device_traces(&[
        &b"]q\x0a("[..],
        &entry(10, b""),
        b"e](",
        &entry(20, b""),
        b"eh\x0a",
        &entry(30, b""),
        b"a0",
    ]);
    let bytes = snapshot(b"", &traces, b"");
    assert_eq!(first_list_range(&bytes), Some(vec![(0, 1), (2, 3)]));
    same_both_ways(&bytes).unwrap();
}

#[test]
fn entries_out_of_order_load_as_with_the_item_list() {
    // Entry B is folded first (in a list under a key memgate ignores),
    // then the device lists A and B again (a memo read).
    let junk = [
        &s("junk")[..],
        b"](",
        &entry(20, b"")[..1],
        b"q\x14",
        &entry(20, b"")[1..],
        b"e",
    ]
    .concat();
    let traces = device_traces(&[&b"]("[..], &entry(10, b""), b"h\x14e"]);
    let bytes = snapshot(&junk, &traces, b"");
    assert_eq!(first_list_range(&bytes), Some(vec![(1, 2), (0, 1)]));
    let text = same_both_ways(&bytes).unwrap();
    let a = text.find("addr: 10").unwrap();
    let b = text.find("addr: 20").unwrap();
    assert!(a < b, "the device's order, A then B: {text}");
}

#[test]
fn a_device_list_shared_by_two_devices_is_refused_as_with_the_item_list() {
    let traces = device_traces(&[&memoized_pair()[..], b"h\x0a"]);
    let e = same_both_ways(&snapshot(b"", &traces, b"")).unwrap_err();
    assert!(e.contains("the same object as device_traces[0]"), "{e}");
}

#[test]
fn a_device_list_also_read_as_another_list_loads_as_with_the_item_list() {
    // The device list memo-read as `external_annotations` (spelled out at
    // build) and as an entry's `pool_id` while still growing (refused).
    let annotations = [&s("external_annotations")[..], b"h\x0a"].concat();
    let pair = device_traces(&[&memoized_pair()]);
    let text = same_both_ways(&snapshot(b"", &pair, &annotations)).unwrap();
    assert!(text.contains("2 of 2 `external_annotations`"), "{text}");
    let pool = [&s("pool_id")[..], b"h\x0a"].concat();
    let traces = device_traces(&[&memoized_pair()[..], &entry(30, &pool), b"a"]);
    let e = same_both_ways(&snapshot(b"", &traces, b"")).unwrap_err();
    assert!(e.contains("pool_id"), "{e}");
}
