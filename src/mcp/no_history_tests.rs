//! `explain_oom` on snapshots without allocation history
//! (docs/figures.md#a-dump-without-history), on the real fixtures of
//! `../shared` (skipped, loudly, when it is absent).

use std::path::PathBuf;
use std::sync::Arc;

use super::cache::Cache;
use super::params::OomArgs;
use super::roots::Roots;
use super::work::{Memo, Work};

fn work() -> Option<Work> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if !dir.is_dir() {
        eprintln!(
            "SKIPPED: ../shared not found at {}: explain_oom on a dump without history was not checked",
            dir.display()
        );
        return None;
    }
    Some(Work {
        roots: Roots::new(&[dir]).unwrap(),
        cache: Arc::new(Cache::new(1 << 30)),
        memo: Memo::default(),
        built_in: super::work::BuiltIn::default(),
    })
}

fn explain(w: &Work, path: &str) -> serde_json::Value {
    let args = OomArgs {
        path: path.into(),
        limit: None,
        cursor: None,
        detail: None,
        document_to: None,
    };
    w.explain_oom(&args).unwrap()
}

#[test]
fn explain_oom_on_a_dump_without_history_says_so_and_answers_from_the_dump() {
    let Some(w) = work() else { return };
    let a = explain(&w, "nohistory_charran78_docubox.pickle");
    let verdict = a["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("no allocation history in this snapshot"),
        "{verdict}"
    );
    assert!(!verdict.contains("no out-of-memory event"));
    // The fixtures README: allocated-peak 90861056 and reserved-peak
    // 109051904 (history never recorded, so both are the dump's); the
    // largest free and live blocks from an independent Python walk of the
    // segments.
    let d = &a["dump"][0];
    assert_eq!(d["device"], 0);
    assert_eq!(d["live"]["bytes"], 90_861_056u64);
    assert_eq!(d["reserved"]["bytes"], 109_051_904u64);
    assert_eq!(d["cached_free"]["bytes"], 109_051_904u64 - 90_861_056);
    assert_eq!(d["largest_free_block"]["bytes"], 11_534_336u64);
    let block = &d["largest_live"][0];
    assert_eq!(block["size"]["bytes"], 46_881_792u64);
    assert_eq!(block["no_frames"]["name"], "pre-trace");
    assert!(block["no_frames"]["meaning"]
        .as_str()
        .unwrap()
        .starts_with("memory live since before recording began"));
}

#[test]
fn explain_oom_on_a_trace_with_an_oom_keeps_its_verdict_and_has_no_dump() {
    let Some(w) = work() else { return };
    let a = explain(&w, "oom_constructor_sun.pickle");
    assert_eq!(a["oom_events"], 1);
    assert!(a["verdict"]
        .as_str()
        .unwrap()
        .starts_with("1 out-of-memory event"));
    assert!(a.get("dump").is_none());
}
