//! The pickle decoder alone, keeping every container: any bytes must give
//! `Ok` or a `DecodeError`, never a panic, a hang or an allocation that the
//! input's length does not pay for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use memgate::pickle::{decode, KeepAll, Value};

fuzz_target!(|data: &[u8]| {
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
