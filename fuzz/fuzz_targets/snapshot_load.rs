//! The whole load path on in-memory bytes: kind detection, the pickle
//! decoder with the snapshot folder (frames, stacks and trace entries
//! compacted while decoding), JSON input, the typed model, and `inspect`'s
//! document and text rendering of it. Errors are fine; panics, hangs and blow-ups are not.
//! The fast paths (flat dicts, entry templates, the frames-list cache,
//! device lists held as ranges) are fuzzed against the general machine:
//! both must give the same model, or both an error.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz-input");
    let general = memgate::snapshot::load_bytes_general(path, data).map(|s| s.canonical());
    let loaded = memgate::snapshot::load_bytes(path, data);
    match (&loaded, &general) {
        (Ok(fast), Ok(general)) => assert!(fast.canonical() == *general, "the models differ"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("fast {:?} vs general {:?}", a.as_ref().err(), b.as_ref().err()),
    }
    match loaded {
        Ok(snap) => {
            let inventory = memgate::document::SnapshotInventory::of(path, &snap);
            let doc = memgate::document::InspectDocument::new(vec![inventory]);
            let mut text = Vec::new();
            memgate::report::inspect::text(&mut text, &doc).expect("a Vec takes every write");
            for d in snap.devices() {
                for e in snap.trace(d) {
                    for &f in snap.stack(e.stack) {
                        let _ = snap.frame_label(f);
                    }
                    let _ = snap.action_name(e.action());
                }
            }
        }
        // Every error names the file, as the CLI prints it.
        Err(e) => assert!(e.to_string().starts_with("fuzz-input: "), "{e}"),
    }
});
