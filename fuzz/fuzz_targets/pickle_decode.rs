//! The pickle decoder alone, keeping every container: any bytes must give
//! `Ok` or a `DecodeError`, never a panic, a hang or an allocation that the
//! input's length does not pay for; and the flat-dict fast path must agree
//! with the general machine on the value, the memo and the error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memgate::pickle::{decode, decode_checked, Decoded, KeepAll, Value};

fn render(d: &Decoded, v: Value) -> String {
    d.arena.render(v, &mut 5_000)
}

fuzz_target!(|data: &[u8]| {
    let len = Some(data.len() as u64);
    match (
        decode_checked(data, len, &mut KeepAll, true),
        decode_checked(data, len, &mut KeepAll, false),
    ) {
        (Ok((a, ma)), Ok((b, mb))) => {
            assert_eq!(render(&a, a.root), render(&b, b.root), "values differ");
            assert_eq!(ma.len(), mb.len(), "memo sizes differ");
            // One node budget for the whole memo on each side.
            let (mut ba, mut bb) = (20_000, 20_000);
            for ((i, x), (j, y)) in ma.iter().zip(&mb) {
                assert_eq!(i, j, "memo indices differ");
                let (x, y) = (a.arena.render(*x, &mut ba), b.arena.render(*y, &mut bb));
                assert_eq!(x, y, "memo slot {i} differs");
            }
        }
        (Err(a), Err(b)) => assert_eq!(a, b, "errors differ"),
        (a, b) => panic!("fast {:?} vs general {:?}", a.err(), b.err()),
    }
    let known = decode(data, Some(data.len() as u64), &mut KeepAll);
    // The same bytes through a pipe (length unknown) must agree on success.
    let piped = decode(data, None, &mut KeepAll);
    assert_eq!(
        known.is_ok(),
        piped.is_ok(),
        "file and pipe decodes disagree"
    );
    if let Ok(d) = known {
        // Walk what the decode produced: every id it handed out resolves.
        let _ = d.arena.type_name(d.root);
        for obj in &d.arena.objs {
            let _ = obj.kind();
        }
        if let Some(items) = d.arena.dict(d.root) {
            for (k, v) in items {
                let _ = (d.arena.type_name(*k), d.arena.int(*v));
            }
        }
        if let Some(items) = d.arena.seq(d.root) {
            for v in items {
                if let Value::Str(s) = v {
                    let _ = d.arena.str(*s);
                }
            }
        }
        assert!(d.stop_offset <= data.len() as u64);
    }
});
