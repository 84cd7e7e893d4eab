//! Decoder unit tests on byte strings written by CPython's `pickle.dumps`.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn dec(bytes: &[u8]) -> Result<Decoded, DecodeError> {
    decode(bytes, Some(bytes.len() as u64), &mut KeepAll)
}

#[test]
fn a_memoized_list_shared_by_two_keys_is_one_object_not_a_copy() {
    // pickle.dumps({'a': x, 'b': x}, protocol=4) with x = ['hello']: the case
    // serde-pickle reports as a recursive structure.
    let d = dec(&hex(
        "8004951a000000000000007d94288c0161945d948c0568656c6c6f94618c0162946802752e",
    ))
    .unwrap();
    assert_eq!(d.protocol, Some(4));
    let items = d.arena.dict(d.root).unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].1, items[1].1, "both keys reference one list");
    let list = d.arena.seq(items[0].1).unwrap();
    assert_eq!(
        d.arena.str(match list[0] {
            Value::Str(s) => s,
            _ => panic!(),
        }),
        "hello"
    );
}

#[test]
fn protocol_zero_text_opcodes_decode() {
    // pickle.dumps({'k': [1, 2, {'z': None}]}, protocol=0)
    let d = dec(&hex(
        "286470300a566b0a70310a286c70320a49310a6149320a61286470330a567a0a70340a4e7361732e",
    ))
    .unwrap();
    assert_eq!(d.protocol, None);
    let items = d.arena.dict(d.root).unwrap();
    let list = d.arena.seq(items[0].1).unwrap();
    assert_eq!(list[0], Value::Int(1));
    assert_eq!(list[1], Value::Int(2));
    assert_eq!(d.arena.dict(list[2]).unwrap()[0].1, Value::None);
}

#[test]
fn wide_integers_and_floats_keep_their_value() {
    // [1, -1, 2**63, 2**70, -2**100, 3.5, True, None, (1, 2), 'é'] (protocol 2),
    // cut before the bytes object, which protocol 2 writes with GLOBAL/REDUCE.
    let full = hex("80025d7100284b014affffffff8a090000000000000080008a090000000000000000408a0d000000000000000000000000f047400c000000000000884e4b014b028671015802000000c3a97102");
    let mut bytes = full.clone();
    bytes.extend_from_slice(b"e.");
    let d = dec(&bytes).unwrap();
    let list = d.arena.seq(d.root).unwrap();
    assert_eq!(d.arena.int(list[0]), Some(1));
    assert_eq!(d.arena.int(list[1]), Some(-1));
    assert_eq!(d.arena.int(list[2]), Some(1i128 << 63));
    assert_eq!(d.arena.int(list[3]), Some(1i128 << 70));
    assert_eq!(d.arena.int(list[4]), Some(-(1i128 << 100)));
    assert_eq!(list[5], Value::Float(3.5));
    assert_eq!(list[6], Value::Bool(true));
    assert_eq!(list[7], Value::None);
    assert_eq!(d.arena.seq(list[8]).unwrap().len(), 2);
    match list[9] {
        Value::Str(s) => assert_eq!(d.arena.str(s), "é"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn global_and_reduce_are_refused_with_offset_and_name() {
    // protocol 2 encodes bytes as _codecs.encode(...): GLOBAL at offset 89.
    let bytes = hex("80025d7100284b014affffffff8a090000000000000080008a090000000000000000408a0d000000000000000000000000f047400c000000000000884e4b014b028671015802000000c3a97102635f636f646563730a656e636f64650a710358020000006162710458060000006c6174696e317105867106527107652e");
    let err = dec(&bytes).unwrap_err();
    match err {
        DecodeError::Refused { opcode, offset } => {
            assert_eq!(opcode, "GLOBAL");
            assert_eq!(bytes[usize::try_from(offset).unwrap()], b'c');
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn every_prefix_of_a_pickle_is_an_error_and_never_a_panic() {
    let bytes = hex("8004951a000000000000007d94288c0161945d948c0568656c6c6f94618c0162946802752e");
    for n in 0..bytes.len() {
        assert!(dec(&bytes[..n]).is_err(), "prefix of {n} bytes decoded");
    }
    assert!(matches!(dec(&[]), Err(DecodeError::Empty)));
}

#[test]
fn a_length_beyond_the_end_is_refused_before_allocating() {
    // BINUNICODE8 claiming 2^60 bytes.
    let mut bytes = vec![0x80, 4, 0x8d];
    bytes.extend_from_slice(&(1u64 << 60).to_le_bytes());
    bytes.extend_from_slice(b"abc.");
    match dec(&bytes).unwrap_err() {
        DecodeError::LengthPastEnd { length, offset, .. } => {
            assert_eq!(length, 1 << 60);
            assert_eq!(offset, 2);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn trailing_bytes_after_stop_are_ignored_and_counted() {
    let mut bytes = hex("80044b012e");
    bytes.extend_from_slice(b"junk");
    let d = dec(&bytes).unwrap();
    assert_eq!(d.root, Value::Int(1));
    assert_eq!(d.trailing_bytes, 4);
}

#[test]
fn deep_nesting_does_not_recurse() {
    // One million nested lists: ( ( ( ... l l l .
    let depth = 1_000_000;
    let mut bytes = vec![b'('; depth];
    bytes.extend(std::iter::repeat_n(b'l', depth));
    bytes.push(b'.');
    let d = dec(&bytes).unwrap();
    assert!(d.arena.seq(d.root).is_some());
}

#[test]
fn future_protocols_and_unknown_opcodes_are_named() {
    assert!(matches!(
        dec(&[0x80, 6, b'N', b'.']),
        Err(DecodeError::Protocol { version: 6, .. })
    ));
    assert!(matches!(
        dec(&[0x80, 4, 0xff]),
        Err(DecodeError::UnknownOpcode {
            byte: 0xff,
            offset: 2
        })
    ));
}

fn str_of(d: &Decoded, v: Value) -> &str {
    match d.arena.resolve(v) {
        Value::Str(s) => d.arena.str(s),
        other => panic!("not a str: {other:?}"),
    }
}

#[test]
fn a_dict_reading_a_memo_slot_it_wrote_itself_decodes_like_python() {
    // pickle.dumps([d, k, j, d, '']) with d = {k: 1, j: '', 'x': ''}: the
    // dict's last value is a BINGET of a string memoized inside the dict,
    // which the flat-dict fast path must leave to the general machine.
    let d = dec(&hex(
        "80049530000000000000005d94287d94288c076b65795f6f6e65944b018c076b65795f74776f948c00948c0178946804756802680368016804652e",
    ))
    .unwrap();
    let list = d.arena.seq(d.root).unwrap().to_vec();
    assert_eq!(list.len(), 5);
    let items = d.arena.dict(list[0]).unwrap().to_vec();
    assert_eq!(str_of(&d, items[0].0), "key_one");
    assert_eq!(items[0].1, Value::Int(1));
    assert_eq!(str_of(&d, items[2].0), "x");
    assert_eq!(str_of(&d, items[2].1), "");
    assert_eq!(str_of(&d, list[1]), "key_one");
    assert_eq!(str_of(&d, list[2]), "key_two");
    assert_eq!(list[3], list[0], "the same dict object twice");
    assert_eq!(str_of(&d, list[4]), "");
}

#[test]
fn dicts_of_memo_references_keep_memo_indices_in_step() {
    // pickle.dumps([d1, d2, d2, k, j]) with d1 = {k: 1, j: 2}, d2 = {k: 3, j: -5}:
    // d2 is all memo reads and ints (the fast path), then read back by BINGET.
    let d = dec(&hex(
        "80049536000000000000005d94287d94288c076b65795f6f6e65944b018c076b65795f74776f944b02757d942868024b0368034afbffffff75680468026803652e",
    ))
    .unwrap();
    let list = d.arena.seq(d.root).unwrap().to_vec();
    assert_eq!(list.len(), 5);
    let d2 = d.arena.dict(list[1]).unwrap().to_vec();
    assert_eq!(str_of(&d, d2[0].0), "key_one");
    assert_eq!(d2[0].1, Value::Int(3));
    assert_eq!(str_of(&d, d2[1].0), "key_two");
    assert_eq!(d2[1].1, Value::Int(-5));
    assert_eq!(list[2], list[1], "BINGET of the dict gives the same dict");
    assert_eq!(str_of(&d, list[3]), "key_one");
    assert_eq!(str_of(&d, list[4]), "key_two");
}

#[test]
fn a_binput_overwriting_a_slot_read_later_in_the_same_dict_wins() {
    // Hand-written (protocol 2 style): memo[0] = outer list, then a dict whose
    // key is stored over memo[0] and whose value reads memo[0]: Python gives
    // [{'a': 'a'}].
    let mut b = vec![
        0x80, 2, b']', b'q', 0, b'}', b'(', 0x8c, 1, b'a', b'q', 0, b'h', 0,
    ];
    b.extend_from_slice(b"ua.");
    let d = dec(&b).unwrap();
    let list = d.arena.seq(d.root).unwrap().to_vec();
    let items = d.arena.dict(list[0]).unwrap().to_vec();
    assert_eq!(str_of(&d, items[0].0), "a");
    assert_eq!(str_of(&d, items[0].1), "a");
}

#[test]
fn a_string_stored_over_its_own_dicts_memo_slot_wins() {
    // Hand-written (protocol 2): the dict is BINPUT to slot 0, then its key
    // is BINPUT to slot 0 too; a later BINGET 0 reads the key, as in Python
    // ([{'a': 1}, 'a']). The flat-dict fast path takes this dict.
    let d = dec(&hex("8002287d7100288c016171004b017568006c2e")).unwrap();
    let list = d.arena.seq(d.root).unwrap().to_vec();
    let items = d.arena.dict(list[0]).unwrap().to_vec();
    assert_eq!(str_of(&d, items[0].0), "a");
    assert_eq!(items[0].1, Value::Int(1));
    assert_eq!(str_of(&d, list[1]), "a");
}

/// Folds every list offered by `fold_list` into its length, and records
/// what it was offered.
#[derive(Default)]
struct ListCounter {
    offered: Vec<(String, Vec<Value>)>,
}

impl Folder for ListCounter {
    fn fold(&mut self, _: &mut Arena, _: ObjId, _: Slot) -> Result<Option<Value>, String> {
        Ok(None)
    }

    fn fold_list(
        &mut self,
        arena: &mut Arena,
        key: Value,
        items: &[Value],
    ) -> Result<Option<Value>, String> {
        let Value::Str(k) = key else { return Ok(None) };
        if arena.str(k) != "f" {
            return Ok(None);
        }
        self.offered
            .push((arena.str(k).to_string(), items.to_vec()));
        Ok(Some(Value::Int(i64::try_from(items.len()).unwrap() + 100)))
    }
}

#[test]
fn a_list_of_memo_reads_in_a_flat_dict_is_offered_to_the_folder_before_a_list_is_built() {
    // pickle.dumps([a, b, {'f': [a, b, a], 'n': 1}, {'f': [b], 'n': 2},
    // {'f': [], 'n': 3}, {'f': l, 'n': 4}, {'g': [a], 'n': 5},
    // {'f': l, 'n': 6}], protocol=4) with a, b = 'aa', 'bb' and l = [a]:
    // torch's `frames` shape (MARK gets APPENDS), one item (APPEND), empty,
    // a list under a key the folder declines, and a list read back by BINGET.
    let bytes = hex(
        "8004956e000000000000005d94288c026161948c026262947d94288c0166945d9428680168026801658c016e944b01757d942868045d9468026168064b02757d942868045d9468064b03757d942868045d9468016168064b04757d94288c0167945d9468016168064b05757d94286804680c68064b0675652e",
    );
    let mut folder = ListCounter::default();
    let d = decode(&bytes[..], Some(bytes.len() as u64), &mut folder).unwrap();
    let list = d.arena.seq(d.root).unwrap().to_vec();
    let (a, b) = (list[0], list[1]);
    let lens: Vec<usize> = folder.offered.iter().map(|(_, v)| v.len()).collect();
    assert_eq!(lens, [3, 1, 0, 1], "each `f` list once, the shared one too");
    assert_eq!(folder.offered[0].1, [a, b, a]);
    assert_eq!(folder.offered[1].1, [b]);
    assert_eq!(folder.offered[3].1, [a]);
    let value_of = |i: usize, key: &str| {
        let items = d.arena.dict(list[i]).unwrap();
        items.iter().find(|(k, _)| str_of(&d, *k) == key).unwrap().1
    };
    assert_eq!(value_of(2, "f"), Value::Int(103));
    assert_eq!(value_of(3, "f"), Value::Int(101));
    assert_eq!(value_of(4, "f"), Value::Int(100));
    assert_eq!(value_of(5, "f"), Value::Int(101));
    assert_eq!(
        value_of(7, "f"),
        Value::Int(101),
        "the memo holds the folded value"
    );
    assert_eq!(value_of(7, "n"), Value::Int(6));
    // The declined list is built and kept as a list.
    assert_eq!(d.arena.seq(value_of(6, "g")).unwrap(), [a]);
}

/// Folds every dict into `Folded(7, n)`, `n` counting up, and lets lists
/// of them be kept as runs (what the snapshot folder does for entries).
#[derive(Default)]
struct Numbering {
    next: u32,
}

impl Folder for Numbering {
    fn fold(&mut self, arena: &mut Arena, id: ObjId, _: Slot) -> Result<Option<Value>, String> {
        if !matches!(arena.obj(id), Obj::Dict(_)) {
            return Ok(None);
        }
        self.next += 1;
        Ok(Some(Value::Folded(7, self.next - 1)))
    }

    fn runs(&self, tag: u8) -> bool {
        tag == 7
    }
}

#[test]
fn a_list_of_folded_values_in_order_is_held_as_their_range() {
    // [{}, {}, {}] appended in one batch, then {} appended alone.
    let bytes = b"\x80\x04](}}}e}a.";
    let d = decode(
        &bytes[..],
        Some(bytes.len() as u64),
        &mut Numbering::default(),
    )
    .unwrap();
    let Value::Obj(id) = d.root else {
        panic!("a list")
    };
    assert!(
        matches!(d.arena.obj(id), Obj::Run(_)),
        "no item stored: {:?}",
        d.arena.obj(id)
    );
    assert_eq!(
        d.arena.run(d.root),
        Some((7, std::slice::from_ref(&(0..4))))
    );
    // Read generically, it is the list it stands for.
    let items: Vec<Value> = (0..4).map(|i| Value::Folded(7, i)).collect();
    assert_eq!(d.arena.seq(d.root).unwrap(), &items[..]);
    // The same stream through a folder that allows no runs: a plain list.
    let mut keep_lists = ListCounter::default();
    let plain = decode(&bytes[..], Some(bytes.len() as u64), &mut keep_lists).unwrap();
    assert_eq!(plain.arena.run(plain.root), None);
}

#[test]
fn a_run_out_of_order_starts_a_range_and_anything_else_makes_it_a_list_again() {
    let mut arena = Arena::default();
    let id = arena.alloc(Obj::List(Vec::new()));
    let list = Value::Obj(id);
    let f = |i| Value::Folded(7, i);
    let runs = |tag: u8| tag == 7;
    assert!(arena.append_run(id, &[f(3), f(4)], runs));
    assert!(arena.append_run(id, &[f(5)], runs));
    assert_eq!(arena.run(list), Some((7, std::slice::from_ref(&(3..6)))));
    // Not the next index (a record folded late): a new range.
    assert!(arena.append_run(id, &[f(9), f(6), f(7)], runs));
    assert_eq!(arena.run(list), Some((7, &[3..6, 9..10, 6..8][..])));
    assert_eq!(arena.seq(list).unwrap(), [3, 4, 5, 9, 6, 7].map(f));
    // Read generically first, then appended: spelled out, and the caller
    // appends as usual (the read's items must never go stale).
    assert!(!arena.append_run(id, &[f(8)], runs));
    assert!(matches!(arena.obj(id), Obj::List(items) if items[..] == [3, 4, 5, 9, 6, 7].map(f)));
    // Anything but a value of its tag: spelled out too, without the item.
    let id = arena.alloc(Obj::List(Vec::new()));
    assert!(arena.append_run(id, &[f(0)], runs));
    assert!(!arena.append_run(id, &[f(1), Value::Int(1)], runs));
    assert!(matches!(arena.obj(id), Obj::List(items) if items[..] == [f(0)]));
    // Another tag, a tag the folder keeps no runs of, a scalar first, a
    // list that already has items, the last index: never a run.
    let fresh = |arena: &mut Arena| arena.alloc(Obj::List(Vec::new()));
    let id = fresh(&mut arena);
    assert!(!arena.append_run(id, &[Value::Folded(2, 0)], runs));
    assert!(!arena.append_run(id, &[Value::Int(1), f(0)], runs));
    assert!(!arena.append_run(id, &[f(0), Value::Folded(2, 1)], runs));
    assert!(!arena.append_run(id, &[f(u32::MAX)], runs));
    assert!(matches!(arena.obj(id), Obj::List(items) if items.is_empty()));
    let id = arena.alloc(Obj::List(vec![Value::None]));
    assert!(!arena.append_run(id, &[f(0)], runs));
}
