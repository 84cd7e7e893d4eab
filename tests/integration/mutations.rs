//! Random and mutated opcode streams never panic the decoder or the loader,
//! and every error is one line naming the file. (The fuzz/ targets do the
//! same for hours; this keeps a fast slice of it in the normal suite.)

use std::path::{Path, PathBuf};

use memgate::pickle::{decode, decode_checked, Decoded, KeepAll, Value};
use proptest::prelude::*;

/// Opcodes with well-formed arguments, and the snapshot keys, so random
/// streams get past the first byte and build containers, memo and folds.
const TOKENS: &[&[u8]] = &[
    b"(",
    b")",
    b"]",
    b"}",
    b"N",
    b"\x88",
    b"\x89",
    b"K\x01",
    b"M\xff\xff",
    b"J\xff\xff\xff\xff",
    b"\x8a\x01\x05",
    b"\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00",
    b"G@\x09\x21\xfb\x54\x44\x2d\x18",
    b"\x8c\x06action",
    b"\x8c\x05alloc",
    b"\x8c\x04size",
    b"\x8c\x04addr",
    b"\x8c\x06frames",
    b"\x8c\x08filename",
    b"\x8c\x04name",
    b"\x8c\x04line",
    b"\x8c\x08segments",
    b"\x8c\x0ddevice_traces",
    b"\x8c\x06blocks",
    b"\x8c\x05state",
    b"\x8c\x06device",
    b"\x8c\x07address",
    b"\x8c\x0atotal_size",
    b"\x8c\x07history",
    b"\x8c\x10active_allocated",
    b"a",
    b"e",
    b"s",
    b"u",
    b"t",
    b"l",
    b"d",
    b"\x85",
    b"\x86",
    b"\x87",
    b"\x94",
    b"h\x00",
    b"h\x01",
    b"h\x02",
    b"q\x02",
    b"j\x03\x00\x00\x00",
    b"0",
    b"1",
    b"2",
    b"\x80\x04",
    b"\x95\x10\x00\x00\x00\x00\x00\x00\x00",
    b"\x8f",
    b"\x90",
    b"\x91",
    b"I42\n",
    b"Vname\n",
    b"p7\n",
    b"g7\n",
    b".",
];

fn token() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => (0..TOKENS.len()).prop_map(|i| TOKENS[i].to_vec()),
        1 => any::<u8>().prop_map(|b| vec![b]),
    ]
}

/// One `EMPTY_DICT [memo] MARK (key value)* SETITEMS` run, its items drawn
/// from strings (memoized or not), memo reads and stores, scalars and
/// lists of memo reads.
fn flat_dict() -> impl Strategy<Value = Vec<u8>> {
    const ITEMS: &[&[u8]] = &[
        b"\x8c\x01a",
        b"\x8c\x01b\x94",
        b"\x8c\x01c\x94",
        b"\x8c\x00\x94",
        b"h\x00",
        b"h\x01",
        b"h\x02",
        b"h\x03",
        b"h\x05",
        b"j\x04\x00\x00\x00",
        b"\x8c\x01d\x94h\x04",
        b"\x8c\x01eq\x01",
        b"\x8c\x01fq\x00",
        b"\x8c\x01gq\x30",
        b"\x8c\x01h\x94q\x31",
        b"h\x30",
        b"\x8c\x01iq\x30",
        b"h\x06",
        b"h\x08",
        b"K\x07",
        b"\x8a\x03\x01\x02\x83",
        b"N",
        b"\x88",
        // Lists of memo reads (torch's `frames`): batched, one item, empty,
        // both at once, reading the outer list (a container), reading their
        // own slot, overwriting a slot, unterminated.
        b"]\x94(h\x01h\x02e",
        b"]\x94h\x02a",
        b"]\x94",
        b"](h\x01eh\x02a",
        b"](h\x00e",
        b"]q\x30(h\x30e",
        b"]q\x01(h\x01h\x03e",
        b"]\x94(h\x01h\x02",
    ];
    (
        prop::sample::select(vec![&b""[..], b"\x94", b"q\x02", b"q\x00"]),
        prop::collection::vec(prop::sample::select(ITEMS.to_vec()), 0..12),
    )
        .prop_map(|(memo, items)| {
            let mut d = vec![b'}'];
            d.extend_from_slice(memo);
            d.push(b'(');
            for i in items {
                d.extend_from_slice(i);
            }
            d.push(b'u');
            d
        })
}

fn seed_files() -> Vec<(PathBuf, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        "tests/fixtures/hostile/valid_tiny_proto4.pickle",
        "tests/fixtures/hostile/valid_tiny_proto2.pickle",
        "fuzz/seeds/tiny_proto0.pickle",
        "fuzz/seeds/tiny.json",
        "tests/fixtures/synthetic/v1_13_list.pickle",
    ]
    .iter()
    .map(|p| {
        let path = root.join(p);
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    })
    .collect()
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        3 => (any::<usize>(), token()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        2 => (any::<usize>(), 1usize..16).prop_map(|(i, n)| Mutation::Remove(i, n)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    let len = bytes.len().max(1);
    match m {
        Mutation::Flip(i, b) => {
            if !bytes.is_empty() {
                let i = i % bytes.len();
                bytes[i] ^= b | 1;
            }
        }
        Mutation::Insert(i, t) => {
            let i = i % (bytes.len() + 1);
            bytes.splice(i..i, t.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let i = i % len;
            let end = (i + n).min(bytes.len());
            if i < end {
                bytes.drain(i..end);
            }
        }
        Mutation::Truncate(i) => bytes.truncate(i % len),
    }
}

/// The fast path and the general machine agree on `bytes`: the same error,
/// or the same value and the same final memo.
fn same_as_general(bytes: &[u8]) {
    let len = Some(bytes.len() as u64);
    let fast = decode_checked(bytes, len, &mut KeepAll, true);
    let general = decode_checked(bytes, len, &mut KeepAll, false);
    match (fast, general) {
        (Ok((a, ma)), Ok((b, mb))) => {
            let render = |d: &Decoded, v: Value| d.arena.render(v, &mut 20_000);
            assert_eq!(
                render(&a, a.root),
                render(&b, b.root),
                "the decoded values differ"
            );
            assert_eq!(a.stop_offset, b.stop_offset);
            let memo = |d: &Decoded, m: &[(u32, Value)]| {
                m.iter()
                    .map(|&(i, v)| format!("{i}={}", render(d, v)))
                    .collect::<Vec<_>>()
            };
            assert_eq!(memo(&a, &ma), memo(&b, &mb), "the final memos differ");
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        (a, b) => panic!(
            "one decode failed: fast {:?}, general {:?}",
            a.err(),
            b.err()
        ),
    }
}

/// A device's trace held as a range while decoding loads as the list kept
/// item by item does: the same snapshot, or the same error.
fn same_as_item_lists(bytes: &[u8]) {
    let load = |runs| {
        memgate::snapshot::load_bytes_checked(Path::new("mutant.pickle"), bytes, runs)
            .map(|s| format!("{:?}", *s))
            .map_err(|e| e.to_string())
    };
    assert_eq!(
        load(true),
        load(false),
        "the range and the item list disagree"
    );
}

/// The snapshot loads to the same model with the fast paths (flat dicts,
/// entry templates, the frames-list cache) as through the general machine
/// alone, or fails both ways (the message may name another opcode).
fn same_model_as_general_load(bytes: &[u8]) {
    let name = Path::new("mutant.pickle");
    let fast = memgate::snapshot::load_bytes(name, bytes).map(|s| s.canonical());
    let general = memgate::snapshot::load_bytes_general(name, bytes).map(|s| s.canonical());
    match (fast, general) {
        (Ok(a), Ok(b)) => assert!(a == b, "the fast and the general load disagree"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("fast {:?} vs general {:?}", a.err(), b.err()),
    }
}

/// Both entry points on `bytes`: no panic, and one-line errors naming the file.
fn check(bytes: &[u8]) {
    same_as_general(bytes);
    same_as_item_lists(bytes);
    same_model_as_general_load(bytes);
    let _ = decode(bytes, None, &mut KeepAll);
    if let Err(e) = memgate::snapshot::load_bytes(Path::new("mutant.pickle"), bytes) {
        let e = e.to_string();
        assert!(e.starts_with("mutant.pickle: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_opcode_streams_never_panic(
        tokens in prop::collection::vec(token(), 0..200),
        stop in any::<bool>(),
    ) {
        let mut bytes: Vec<u8> = vec![0x80, 4];
        for t in &tokens {
            bytes.extend_from_slice(t);
        }
        if stop {
            bytes.push(b'.');
        }
        check(&bytes);
        check(&bytes[2..]);
    }

    #[test]
    fn dicts_of_memo_references_decode_as_the_general_machine_does(
        dicts in prop::collection::vec(flat_dict(), 1..24),
    ) {
        // A list of flat dicts whose keys and values are memo stores and
        // reads of each other's slots: the fast path's memo numbering must
        // match the general machine's exactly.
        let mut bytes: Vec<u8> = vec![0x80, 4, b']', 0x94, b'('];
        for d in &dicts {
            bytes.extend_from_slice(d);
        }
        bytes.extend_from_slice(b"e.");
        same_as_general(&bytes);
        // Protocol 2 style: the same with every MEMOIZE as an explicit BINPUT.
        let mut explicit = Vec::new();
        let mut next = 0u8;
        for &b in &bytes {
            if b == 0x94 {
                explicit.extend_from_slice(&[b'q', next]);
                next = next.wrapping_add(1);
            } else {
                explicit.push(b);
            }
        }
        same_as_general(&explicit);
    }

    #[test]
    fn mutated_valid_snapshots_never_panic(
        seed in 0usize..5,
        mutations in prop::collection::vec(mutation(), 1..8),
    ) {
        let seeds = seed_files();
        let mut bytes = seeds[seed % seeds.len()].1.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        check(&bytes);
    }
}

#[test]
fn a_slot_stored_twice_in_one_dict_is_counted_once() {
    // Two keys BINPUT to slot 48, then a memoized key: Python's memo
    // holds 48 once, so the MEMOIZE takes index 3, not 4.
    let mut b: Vec<u8> = vec![0x80, 4, b']', 0x94, b'(', b'}', 0x94, b'('];
    b.extend_from_slice(b"\x8c\x01gq\x30K\x01\x8c\x01iq\x30K\x02\x8c\x01k\x94K\x03ue.");
    same_as_general(&b);
}

#[test]
fn the_mutation_seeds_load_unmutated() {
    for (path, bytes) in seed_files() {
        assert!(
            memgate::snapshot::load_bytes(&path, &bytes).is_ok(),
            "{}",
            path.display()
        );
    }
}
