//! Random and mutated opcode streams never panic the decoder or the loader,
//! and every error is one line naming the file. (The fuzz/ targets do the
//! same for hours; this keeps a fast slice of it in the normal suite.)

use std::path::{Path, PathBuf};

use memgate::pickle::{decode, KeepAll};
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

/// Both entry points on `bytes`: no panic, and one-line errors naming the file.
fn check(bytes: &[u8]) {
    let _ = decode(bytes, Some(bytes.len() as u64), &mut KeepAll);
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
fn the_mutation_seeds_load_unmutated() {
    for (path, bytes) in seed_files() {
        assert!(
            memgate::snapshot::load_bytes(&path, &bytes).is_ok(),
            "{}",
            path.display()
        );
    }
}
