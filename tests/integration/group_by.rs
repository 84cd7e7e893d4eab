//! `memgate profile --group-by annotation|compile-context` (docs/figures.md#annotation-and-compile-context-groups): the
//! `categories` object filled with annotation names or compile contexts.
//! Against Mosaic's own numbers on the real fixtures (skipped loudly
//! without ../shared), and against expectations worked out by hand on small
//! JSON snapshots written here.

use crate::common::memgate;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// `memgate profile --format json ARGS… PATH`: the devices of the one
/// snapshot.
fn profile(path: &Path, args: &[&str]) -> Vec<Value> {
    let out = memgate()
        .arg("profile")
        .args(["--format", "json"])
        .args(args)
        .arg(path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["snapshots"][0]["devices"].as_array().unwrap().clone()
}

/// `{"": 1, "A": 2}` from pairs, the way the JSON holds a group map.
fn groups(pairs: &[(&str, u64)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

fn alloc(addr: u64, size: u64, t: i64) -> Value {
    json!({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": []})
}

fn free(addr: u64, size: u64, t: i64) -> Value {
    json!({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t,
           "frames": []})
}

fn ann(name: &str, stage: &str, t: i64) -> Value {
    json!({"name": name, "stage": stage, "device": 0, "time_us": t})
}

/// A JSON snapshot with one device trace and these annotations, written
/// into `dir`.
fn write_snapshot(dir: &Path, trace: Vec<Value>, annotations: Vec<Value>) -> PathBuf {
    let path = dir.join("snap.json");
    let snap = json!({"segments": [], "device_traces": [trace],
                      "external_annotations": annotations});
    std::fs::write(&path, snap.to_string()).unwrap();
    path
}

fn shared_fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if dir.join("mosaic-expected.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: ../shared/fixtures not found at {}: profile --group-by was not compared \
             with Mosaic's numbers",
            dir.display()
        );
        None
    }
}

#[test]
fn at_the_dynamic_peak_the_groups_equal_mosaics_profile_by_annotation_and_by_compile_context() {
    let Some(dir) = shared_fixtures() else { return };
    let text = std::fs::read_to_string(dir.join("mosaic-expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    for file in [
        "wedsonlin_medium_1024_training.pickle",
        "zidongliu_decomfl.pickle",
    ] {
        let exp = &expected["files"][file];
        let path = dir.join("real").join(file);
        for (flag, key, rules) in [
            ("annotation", "peak-by-annotations", "annotation"),
            (
                "compile-context",
                "peak-by-compile-context",
                "compile-context",
            ),
        ] {
            let devices = profile(&path, &["--group-by", flag]);
            // Mosaic's profile reads device_traces[0].
            let d = devices.iter().find(|d| d["device"] == 0).unwrap();
            assert_eq!(d["categories"]["rules"], rules, "{file}");
            assert_eq!(
                d["categories"]["at-dynamic-peak"], exp[key],
                "{file} --group-by {flag}"
            );
            assert_eq!(d["figures"]["dynamic-peak"], exp["peak-total"], "{file}");
        }
    }
}

#[test]
fn grouping_by_category_is_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_snapshot(dir.path(), vec![alloc(0x100, 64, 1)], vec![]);
    assert_eq!(
        profile(&path, &[]),
        profile(&path, &["--group-by", "category"])
    );
    assert_eq!(profile(&path, &[])[0]["categories"]["rules"], "default");
}

#[test]
fn an_allocation_inside_nested_annotations_belongs_to_the_innermost_and_an_unmatched_end_is_ignored(
) {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        alloc(0x100, 100, 5),   // before any annotation: ""
        alloc(0x200, 10, 15),   // in A
        alloc(0x300, 1000, 25), // in B, inside A: B
        alloc(0x400, 5, 30),    // B
        free(0x300, 1000, 35),  // B's 1000 leaves B
        alloc(0x500, 50, 40),   // B ended at 40: A (an END at T applies to entries at T)
        alloc(0x600, 3, 52),    // C's END at 50 closed nothing: still A
        alloc(0x700, 1, 70),    // A ended at 60: ""
    ];
    let annotations = vec![
        ann("A", "START", 10),
        ann("B", "START", 20),
        ann("B", "END", 40),
        ann("C", "END", 50),
        ann("A", "END", 60),
    ];
    let path = write_snapshot(dir.path(), trace, annotations);
    let d = &profile(&path, &["--group-by", "annotation"])[0];
    let c = &d["categories"];
    assert_eq!(c["rules"], "annotation");
    // Usage after each entry: 100, 110, 1110, 1115, 115, 165, 168, 169.
    assert_eq!(d["figures"]["dynamic-peak"], 1115);
    assert_eq!(
        c["at-dynamic-peak"],
        groups(&[("", 100), ("A", 10), ("B", 1005)])
    );
    // Every free matches an alloc of its size: allocated = dynamic.
    assert_eq!(c["at-allocated-peak"], c["at-dynamic-peak"]);
    // Own peaks: "" 100 + 1 at the end; A 10 + 50 + 3; B 1000 + 5.
    assert_eq!(c["peaks"], groups(&[("", 101), ("A", 63), ("B", 1005)]));
}

#[test]
fn a_group_that_fell_to_zero_before_the_peak_is_listed_and_one_not_yet_started_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        alloc(0x1, 8, 11),  // X
        free(0x1, 8, 12),   // X back to 0
        alloc(0x2, 20, 14), // "": the peak, 20
        free(0x2, 20, 15),
        alloc(0x3, 1, 17), // Y, after the peak
    ];
    let annotations = vec![
        ann("X", "START", 10),
        ann("X", "END", 13),
        ann("Y", "START", 16),
    ];
    let path = write_snapshot(dir.path(), trace, annotations);
    let c = &profile(&path, &["--group-by", "annotation"])[0]["categories"];
    // As Mosaic's per_annotation_alloc_sum: X exists (at 0), Y not yet.
    assert_eq!(c["at-dynamic-peak"], groups(&[("", 20), ("X", 0)]));
    assert_eq!(c["peaks"], groups(&[("", 20), ("X", 8), ("Y", 1)]));
}

#[test]
fn a_missing_or_empty_compile_context_is_na_and_a_present_one_is_its_own_group() {
    let dir = tempfile::tempdir().unwrap();
    let with = |mut e: Value, ctx: &str| {
        e["compile_context"] = json!(ctx);
        e
    };
    let trace = vec![
        with(alloc(0x10, 100, 1), "torch-compiled-region: 0/0"),
        with(alloc(0x20, 20, 2), ""),
        alloc(0x30, 3, 3), // no compile_context key
        with(alloc(0x40, 400, 4), "N/A"),
        with(alloc(0x50, 5000, 5), "torch-compiled-region: 1/0"),
        with(free(0x50, 5000, 6), "torch-compiled-region: 1/0"),
        with(alloc(0x60, 7, 7), "torch-compiled-region: 0/0"),
    ];
    let path = write_snapshot(dir.path(), trace, vec![]);
    let c = &profile(&path, &["--group-by", "compile-context"])[0]["categories"];
    assert_eq!(c["rules"], "compile-context");
    // Usage: 100, 120, 123, 523, 5523 (the peak), 523, 530.
    assert_eq!(
        c["at-dynamic-peak"],
        groups(&[
            ("N/A", 423),
            ("torch-compiled-region: 0/0", 100),
            ("torch-compiled-region: 1/0", 5000)
        ])
    );
    assert_eq!(
        c["peaks"],
        groups(&[
            ("N/A", 423),
            ("torch-compiled-region: 0/0", 107),
            ("torch-compiled-region: 1/0", 5000)
        ])
    );
}

#[test]
fn memory_live_before_recording_is_outside_every_annotation_and_has_no_compile_context() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        free(0x999, 4000, 12), // allocated before recording, freed inside A
        alloc(0x1, 10, 13),    // A
    ];
    let annotations = vec![ann("A", "START", 10)];
    let path = write_snapshot(dir.path(), trace, annotations);
    // Allocated: 4000 at the start (the peak), 0, 10. Dynamic ignores the
    // free of an address it never saw allocated: 0, 10.
    let c = &profile(&path, &["--group-by", "annotation"])[0]["categories"];
    assert_eq!(c["at-allocated-peak"], groups(&[("", 4000)]));
    assert_eq!(c["at-dynamic-peak"], groups(&[("A", 10)]));
    assert_eq!(c["peaks"], groups(&[("", 4000), ("A", 10)]));
    let c = &profile(&path, &["--group-by", "compile-context"])[0]["categories"];
    assert_eq!(c["at-allocated-peak"], groups(&[("N/A", 4000)]));
    assert_eq!(c["at-dynamic-peak"], groups(&[("N/A", 10)]));
}

#[test]
fn the_text_report_names_the_grouping_and_shows_the_empty_group_in_quotes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![alloc(0x1, 2048, 5), alloc(0x2, 1024, 11)];
    let path = write_snapshot(dir.path(), trace, vec![ann("fwd", "START", 10)]);
    let out = memgate()
        .args(["profile", "--group-by", "annotation"])
        .arg(&path)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("(rules: annotation)"), "{text}");
    assert!(text.contains("    annotation "), "{text}");
    let row = |name: &str| text.lines().find(|l| l.trim_start().starts_with(name));
    assert!(row("\"\" ").is_some_and(|l| l.contains(" 2 KiB")), "{text}");
    assert!(
        row("fwd ").is_some_and(|l| l.contains(" 1 KiB") && !l.contains("2 KiB")),
        "{text}"
    );
}

#[test]
fn the_html_page_draws_the_groups() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![alloc(0x1, 2048, 5), alloc(0x2, 1024, 11)];
    let path = write_snapshot(dir.path(), trace, vec![ann("fwd", "START", 10)]);
    let html = dir.path().join("out.html");
    memgate()
        .args(["profile", "--group-by", "annotation", "--html"])
        .arg(&html)
        .arg(&path)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("</svg>fwd</td>"), "{page}");
    assert!(
        page.contains("{\"name\":\"fwd\""),
        "the chart draws the group: {page}"
    );
    assert!(page.contains("rules annotation"), "{page}");
}
