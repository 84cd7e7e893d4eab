//! `--window FROM..TO` (docs/figures.md#windows): every bound kind, the state carried in,
//! the errors, on a small snapshot whose figures are worked out by hand
//! below; and Mosaic's own window peaks and usages at events on the real
//! fixtures of `../shared` (skipped, loudly, when it is absent).

use crate::common::memgate;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use memgate::analysis::{analyze_in_window, RuleSet, Window};
use memgate::snapshot;

fn frame(name: &str) -> Value {
    json!([{"name": name, "filename": "model.py", "line": 1}])
}

fn entry(action: &str, addr: u64, size: u64, time: Option<i64>, stack: &str) -> Value {
    let mut e = json!({"action": action, "addr": addr, "size": size, "stream": 0,
                       "frames": frame(stack)});
    if let Some(t) = time {
        e["time_us"] = json!(t);
    }
    e
}

const A: u64 = 0x100;
const B: u64 = 0x200;
const C: u64 = 0x300;
/// Allocated before recording started; only its free is in the trace.
const P: u64 = 0x900;

/// Device 0's trace, and by hand after each entry: dynamic (Mosaic: allocs
/// minus frees of addresses allocated in the trace) and allocated
/// (MemoryViz: what was live before recording, 50 freed at entry 2 plus the
/// untouched 1000-byte block, i.e. 1050, plus the trace's changes).
///
/// | #  | time | action         | addr   | size | dynamic | allocated |
/// |----|------|----------------|--------|------|---------|-----------|
/// | 0  | 100  | alloc          | A      | 100  | 100     | 1150      |
/// | 1  | 200  | alloc          | B      | 200  | 300     | 1350      |
/// | 2  | 300  | free_completed | P      | 50   | 300     | 1300      |
/// | 3  | 400  | free_completed | A (v0) | 100  | 200     | 1200      |
/// | 4  | 500  | alloc          | A (v1) | 400  | 600     | 1600      |
/// | 5  | 600  | alloc          | C      | 50   | 650     | 1650      |
/// | 6  | 700  | free_completed | B      | 200  | 450     | 1450      |
/// | 7  | 800  | free_completed | A (v1) | 400  | 50      | 1050      |
/// | 8  | 900  | alloc          | A (v2) | 30   | 80      | 1080      |
/// | 9  | 1000 | oom            |        |      | 80      | 1080      |
///
/// Annotations: `fwd` START 150, END 450, START 650, END 850; `my:step`
/// START 50 (a name with a colon, before every entry).
fn trace(timed: bool) -> Vec<Value> {
    let t = |v: i64| timed.then_some(v);
    vec![
        entry("alloc", A, 100, t(100), "a0"),
        entry("alloc", B, 200, t(200), "b"),
        entry("free_completed", P, 50, t(300), "p"),
        entry("free_completed", A, 100, t(400), "a0"),
        entry("alloc", A, 400, t(500), "a1"),
        entry("alloc", C, 50, t(600), "c"),
        entry("free_completed", B, 200, t(700), "b"),
        entry("free_completed", A, 400, t(800), "a1"),
        entry("alloc", A, 30, t(900), "a2"),
        entry("oom", 0, 64, t(1000), "a2"),
    ]
}

fn snapshot_json(timed: bool) -> Value {
    let annotations: Vec<Value> = [
        ("fwd", "START", 150),
        ("fwd", "END", 450),
        ("fwd", "START", 650),
        ("fwd", "END", 850),
        ("my:step", "START", 50),
    ]
    .iter()
    .map(|(n, s, t)| json!({"device": 0, "name": n, "stage": s, "time_us": t}))
    .collect();
    let mut snap = json!({
        "segments": [{"device": 0, "address": 1_000_000, "total_size": 1000, "stream": 0,
                      "segment_type": "large", "frames": [],
                      "blocks": [{"address": 1_000_000, "size": 1000, "requested_size": 1000,
                                  "state": "active_allocated", "frames": frame("w")}]}],
        "device_traces": [trace(timed)],
    });
    if timed {
        snap["external_annotations"] = json!(annotations);
    }
    snap
}

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn write(timed: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir
        .path()
        .join(if timed { "snap.json" } else { "npu.json" });
    std::fs::write(&path, snapshot_json(timed).to_string()).unwrap();
    Fixture { _dir: dir, path }
}

/// Device 0 of `memgate CMD --window WINDOW --format json`.
fn windowed(cmd: &str, f: &Fixture, window: &str) -> Value {
    let out = memgate()
        .args([cmd, "--format", "json", "--window", window])
        .arg(&f.path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{window}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["snapshots"][0]["devices"][0].clone()
}

/// `memgate peak --window WINDOW`'s stderr, asserting exit code 2.
fn refused(f: &Fixture, window: &str) -> String {
    let out = memgate()
        .args(["peak", "--window", window])
        .arg(&f.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{window} was not refused");
    assert!(out.stdout.is_empty(), "{window}: no figures on an error");
    String::from_utf8(out.stderr).unwrap()
}

/// (from-entry, to-entry, dynamic-usage-at-from, dynamic-usage-at-to).
fn edges(d: &Value) -> (u64, u64, u64, u64) {
    let w = &d["window"];
    let n = |k: &str| w[k].as_u64().unwrap_or_else(|| panic!("{k} in {w}"));
    (
        n("from-entry"),
        n("to-entry"),
        n("dynamic-usage-at-from"),
        n("dynamic-usage-at-to"),
    )
}

fn fig(d: &Value, k: &str) -> u64 {
    d["figures"][k].as_u64().unwrap()
}

#[test]
fn without_a_window_the_figures_are_the_whole_trace_and_no_window_is_reported() {
    let f = write(true);
    let out = memgate()
        .args(["peak", "--format", "json"])
        .arg(&f.path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &v["snapshots"][0]["devices"][0];
    assert!(d.get("window").is_none());
    assert_eq!(fig(d, "dynamic-peak"), 650);
    assert_eq!(fig(d, "allocated-peak"), 1650);
    assert_eq!(fig(d, "trace-entries"), 10);
}

#[test]
fn an_entry_window_takes_the_maxima_and_counts_inside_it() {
    let f = write(true);
    let d = windowed("peak", &f, "#4..#6");
    assert_eq!(edges(&d), (4, 6, 200, 450));
    assert_eq!(d["window"]["allocated-at-to"], 1450);
    assert_eq!(
        (d["window"]["from"].as_str(), d["window"]["to"].as_str()),
        (Some("#4"), Some("#6"))
    );
    assert_eq!(fig(&d, "dynamic-peak"), 650);
    assert_eq!(fig(&d, "allocated-peak"), 1650);
    assert_eq!(fig(&d, "static-memory"), 1000);
    assert_eq!(fig(&d, "overall-peak"), 1650);
    assert_eq!(fig(&d, "reserved-peak"), 1000);
    assert_eq!(fig(&d, "alloc-events"), 2);
    assert_eq!(fig(&d, "trace-entries"), 3);
    assert_eq!(d["peak-entry"]["dynamic-peak"], 5);
    assert_eq!(d["peak-entry"]["allocated-peak"], 5);
}

#[test]
fn the_state_before_the_window_is_carried_in_and_is_its_first_candidate() {
    let f = write(true);
    // Entry 6 frees B: the window's highest state is the one after it
    // (450), not the 650 before it, and the stacks are those live there.
    let d = windowed("peak", &f, "#6..#8");
    assert_eq!(edges(&d), (6, 8, 650, 80));
    assert_eq!(fig(&d, "dynamic-peak"), 450);
    assert_eq!(fig(&d, "allocated-peak"), 1450);
    assert_eq!(d["peak-entry"]["dynamic-peak"], 6);
    assert_eq!((fig(&d, "alloc-events"), fig(&d, "trace-entries")), (1, 3));
    let stacks: Vec<(u64, &str)> = d["stacks-at-peak"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["bytes"].as_u64().unwrap(),
                s["frames"][0].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(stacks, [(400, "a1 (model.py:1)"), (50, "c (model.py:1)")]);
    // A window of one entry that changes nothing: its figures are the
    // state carried in.
    let d = windowed("peak", &f, "#9..");
    assert_eq!(edges(&d), (9, 9, 80, 80));
    assert_eq!(fig(&d, "dynamic-peak"), 80);
    assert_eq!(fig(&d, "allocated-peak"), 1080);
    assert_eq!(d["peak-entry"]["allocated-peak"], 9);
    assert_eq!(
        (
            fig(&d, "oom-events"),
            fig(&d, "alloc-events"),
            fig(&d, "trace-entries")
        ),
        (1, 0, 1)
    );
}

#[test]
fn time_bounds_are_inclusive_on_both_sides() {
    let f = write(true);
    assert_eq!(edges(&windowed("peak", &f, "500..700")), (4, 6, 200, 450));
    assert_eq!(edges(&windowed("peak", &f, "450..750")), (4, 6, 200, 450));
    assert_eq!(edges(&windowed("peak", &f, "501..699")), (5, 5, 600, 650));
    assert_eq!(edges(&windowed("peak", &f, "..300")), (0, 2, 0, 300));
}

#[test]
fn relative_seconds_count_from_the_first_timed_entry() {
    let f = write(true);
    // The first entry is at 100 µs: +0.0004 s is 500, +0.0006 s is 700.
    let d = windowed("peak", &f, "+0.0004s..+0.0006s");
    assert_eq!(edges(&d), (4, 6, 200, 450));
    assert_eq!(edges(&windowed("peak", &f, "+0s..")), (0, 9, 0, 80));
}

#[test]
fn annotation_bounds_pick_the_nth_start_or_end_and_names_may_hold_colons() {
    let f = write(true);
    // fwd START 150 .. END 450: entries 1 (200) to 3 (400).
    let d = windowed("peak", &f, "@fwd:START..@fwd:END");
    assert_eq!(edges(&d), (1, 3, 100, 200));
    assert_eq!(fig(&d, "dynamic-peak"), 300);
    assert_eq!(d["peak-entry"]["dynamic-peak"], 1);
    // The second occurrence: 650 .. 850, entries 6 and 7.
    let d = windowed("peak", &f, "@fwd:START:1..@fwd:END:1");
    assert_eq!(edges(&d), (6, 7, 650, 50));
    assert_eq!(fig(&d, "dynamic-peak"), 450);
    // `my:step` starts at 50, before every entry.
    let d = windowed("peak", &f, "@my:step:START..");
    assert_eq!(edges(&d), (0, 9, 0, 80));
    assert_eq!(fig(&d, "dynamic-peak"), 650);
}

#[test]
fn allocation_events_use_mosaics_address_and_version() {
    let f = write(true);
    // A's version 1 is the alloc after its first free: entry 4.
    let d = windowed("peak", &f, "..100_1:alloc");
    assert_eq!(edges(&d), (0, 4, 0, 600));
    assert_eq!(fig(&d, "dynamic-peak"), 600);
    assert_eq!(edges(&windowed("peak", &f, "..100_0:free_completed")).1, 3);
    // The free of a block allocated before recording is an event too.
    assert_eq!(
        edges(&windowed("peak", &f, "900_0:free_completed..#2")).0,
        2
    );
    let d = windowed("peak", &f, "100_1:free_completed..");
    assert_eq!(edges(&d), (7, 9, 450, 80));
    assert_eq!(fig(&d, "dynamic-peak"), 80);
}

#[test]
fn profile_reports_the_categories_at_the_windowed_peaks() {
    let f = write(true);
    let d = windowed("profile", &f, "#6..#8");
    assert_eq!(edges(&d), (6, 8, 650, 80));
    let at_dynamic: u64 = d["categories"]["at-dynamic-peak"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(at_dynamic, 450);
    let at_allocated: u64 = d["categories"]["at-allocated-peak"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(at_allocated, 1450);
}

#[test]
fn the_text_output_names_the_window_on_the_device_line() {
    let f = write(true);
    for cmd in ["peak", "profile"] {
        let out = memgate()
            .args([cmd, "--window", "#6..#8"])
            .arg(&f.path)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("dev0"))
            .unwrap();
        assert!(
            line.contains("window #6..#8 (entries 6..8, dynamic usage carried in: 650 B)"),
            "{cmd}: {line}"
        );
    }
}

#[test]
fn a_window_holding_no_entry_is_an_error_saying_what_the_trace_holds() {
    let f = write(true);
    for window in ["#7..#5", "2000..", "..50", "601..699"] {
        let err = refused(&f, window);
        assert!(err.contains("device 0"), "{window}: {err}");
        assert!(err.contains(&format!("window `{window}`")), "{err}");
        assert!(err.contains("holds no trace entry"), "{err}");
        assert!(
            err.contains("10 entries (#0..#9), time_us 100..1000"),
            "{err}"
        );
    }
}

#[test]
fn a_bound_naming_something_absent_is_an_error_naming_the_device() {
    let f = write(true);
    for (window, says) in [
        ("#10..", "entry #10 is past the end"),
        (
            "@fwd:START:2..",
            "no occurrence 2 of annotation fwd:START (the device has 2)",
        ),
        ("@bwd:END..", "no occurrence 0 of annotation bwd:END"),
        ("..100_3:alloc", "no alloc of 100 after 3 free_completed"),
    ] {
        let err = refused(&f, window);
        assert!(err.contains("device 0: window"), "{window}: {err}");
        assert!(err.contains(says), "{window}: {err}");
    }
}

#[test]
fn a_trace_without_time_us_takes_entry_bounds_and_refuses_time_bounds() {
    let f = write(false);
    let d = windowed("peak", &f, "#4..#6");
    assert_eq!(edges(&d), (4, 6, 200, 450));
    for window in ["100..", "..+1s"] {
        let err = refused(&f, window);
        assert!(err.contains("device 0"), "{err}");
        assert!(err.contains("a time bound needs time_us"), "{err}");
        assert!(err.contains("no time_us"), "{err}");
    }
    assert!(refused(&f, "@fwd:START..").contains("no occurrence 0 of annotation fwd:START"));
}

#[test]
fn a_window_that_does_not_parse_is_a_usage_error_naming_the_bound() {
    let f = write(true);
    for (window, says) in [
        ("#4", "expected FROM..TO"),
        ("#x..", "FROM `#x`"),
        ("..later", "TO `later`: `later` is not a bound"),
        ("@fwd:MIDDLE..", "expected @NAME:START or @NAME:END"),
        ("..100_1:frees", "unknown action `frees`"),
        ("..zz_1:alloc", "`zz` is not a hex address"),
        ("+2.5..", "`+` takes seconds such as `+2.5s`"),
    ] {
        let out = memgate()
            .args(["peak", "--window", window])
            .arg(&f.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{window}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("--window"), "{window}: {err}");
        assert!(err.contains(says), "{window}: {err}");
    }
}

/// `memgate diff --window WINDOW --format json BASE NEW`, asserting success.
fn diff_json(base: &Path, new: &Path, window: &str) -> Value {
    let out = memgate()
        .args(["diff", "--format", "json", "--window", window])
        .arg(base)
        .arg(new)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `(base, new)` of one figure of device 0 in a diff document.
fn diff_figure(doc: &Value, id: &str) -> (u64, u64) {
    let f = doc["devices"][0]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["id"] == id)
        .unwrap();
    (f["base"].as_u64().unwrap(), f["new"].as_u64().unwrap())
}

#[test]
fn diff_compares_the_windows_of_both_traces() {
    let (timed, npu) = (write(true), write(false));
    // The same window by entry on the timed trace and the NPU one: the
    // entries 6..8 hold dynamic 450, 50, 80.
    let doc = diff_json(&timed.path, &npu.path, "#6..#8");
    assert_eq!(doc["window"], "#6..#8");
    assert_eq!(diff_figure(&doc, "dynamic-peak"), (450, 450));
    assert_eq!(diff_figure(&doc, "trace-entries"), (3, 3));
    // A window of the whole-trace peak: entries 4..6 reach 650.
    let doc = diff_json(&timed.path, &timed.path, "#4..#6");
    assert_eq!(diff_figure(&doc, "dynamic-peak"), (650, 650));
    let out = memgate()
        .args(["diff", "--window", "#6..#8"])
        .arg(&timed.path)
        .arg(&npu.path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().any(|l| l == "window: #6..#8"), "{text}");
}

#[test]
fn diff_refuses_a_window_one_side_cannot_take() {
    let (timed, npu) = (write(true), write(false));
    let out = memgate()
        .args(["diff", "--window", "100..900"])
        .arg(&timed.path)
        .arg(&npu.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("npu.json: device 0: window `100..900`"),
        "{err}"
    );
    assert!(err.contains("a time bound needs time_us"), "{err}");
}

#[test]
fn a_summary_of_the_whole_trace_does_not_compare_with_a_window() {
    let timed = write(true);
    let golden = timed._dir.path().join("golden");
    memgate()
        .args(["summarize", "-o"])
        .arg(&golden)
        .arg(&timed.path)
        .assert()
        .success();
    let out = memgate()
        .args(["diff", "--window", "#6..#8"])
        .arg(golden.join("snap.json"))
        .arg(&timed.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("device 0: window `#6..#8`"), "{err}");
    assert!(
        err.contains("this summary holds the whole trace's figures"),
        "{err}"
    );
}

/// A `memgate.toml` judging `snap.json` of the fixture's directory, with
/// `extra` lines in its target and a dynamic-peak budget of 500 bytes
/// (the whole trace reaches 650, entries 6..8 only 450).
/// The fixture frees memory allocated before recording (entry 2), so its
/// trace started mid-run: the target takes its lower bounds as they are.
fn budget_file(f: &Fixture, extra: &str) -> PathBuf {
    let path = f._dir.path().join("memgate.toml");
    let text = format!(
        "[defaults]\nfigures = []\n\n[[target]]\nname = \"t\"\nsnapshots = \"snap.json\"\n{extra}\n\
         accept-lower-bounds = true\n\n[target.budget]\ndynamic-peak = \"500 B\"\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// `memgate check --config CONFIG --json - ARGS…`: exit code, JSON (when
/// any), stderr.
fn check(config: &Path, args: &[&str]) -> (Option<i32>, Option<Value>, String) {
    let out = memgate()
        .arg("check")
        .arg("--config")
        .arg(config)
        .args(["--json", "-"])
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .output()
        .unwrap();
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).ok(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_target_window_judges_the_figures_inside_it() {
    let f = write(true);
    let (code, _, err) = check(&budget_file(&f, ""), &[]);
    assert_eq!(code, Some(1), "the whole trace's 650 is over 500: {err}");
    let (code, json, err) = check(&budget_file(&f, "window = \"#6..#8\""), &[]);
    assert_eq!(code, Some(0), "entries 6..8 peak at 450: {err}");
    let d = &json.unwrap()["targets"][0]["snapshots"][0]["devices"][0];
    assert_eq!(edges(d), (6, 8, 650, 80));
    // `--window` replaces the target's window.
    let (code, _, _) = check(
        &budget_file(&f, "window = \"#6..#8\""),
        &["--window", "#4..#6"],
    );
    assert_eq!(code, Some(1));
}

#[test]
fn a_target_window_that_does_not_parse_is_a_config_error_at_its_line() {
    let f = write(true);
    let config = budget_file(&f, "window = \"#x..\"");
    let (code, _, err) = check(&config, &[]);
    assert_eq!(code, Some(2));
    assert!(err.contains("memgate.toml:7:10"), "{err}");
    assert!(err.contains("target.window"), "{err}");
    assert!(err.contains("FROM `#x`"), "{err}");
}

#[test]
fn a_target_window_that_holds_no_entry_leaves_the_snapshot_not_judged() {
    let f = write(true);
    let (code, _, err) = check(&budget_file(&f, "window = \"2000..\""), &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("device 0: window `2000..`: holds no trace entry"),
        "{err}"
    );
}

#[test]
fn a_windowed_target_compares_with_a_summary_of_the_same_window_only() {
    let f = write(true);
    let golden = f._dir.path().join("golden");
    let summarize = |window: &str| {
        memgate()
            .args(["summarize", "--window", window, "-o"])
            .arg(&golden)
            .arg(&f.path)
            .assert()
            .success();
    };
    summarize("#6..#8");
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(golden.join("snap.json")).unwrap()).unwrap();
    assert_eq!(summary["devices"][0]["figures"]["dynamic-peak"], 450);
    assert_eq!(summary["devices"][0]["window"]["from"], "#6");
    let config = budget_file(&f, "window = \"#6..#8\"\nbaseline = \"golden/\"");
    let (code, json, err) = check(&config, &[]);
    assert_eq!(code, Some(0), "{err}");
    let checks = json.unwrap()["targets"][0]["snapshots"][0]["devices"][0]["checks"].clone();
    let dynamic = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "dynamic-peak")
        .unwrap();
    assert_eq!(
        (
            &dynamic["current"],
            &dynamic["baseline"],
            &dynamic["status"]
        ),
        (&json!(450), &json!(450), &json!("pass")),
        "compared with the window's baseline: {dynamic}"
    );
    summarize("#4..#6");
    let (code, _, err) = check(&config, &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("this summary holds this window's figures, not `#6..#8`'s"),
        "{err}"
    );
}

// Mosaic's numbers on the real fixtures.

fn shared() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if dir.join("mosaic-expected.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: ../shared not found at {}: the Mosaic window parity tests did not run",
            dir.display()
        );
        None
    }
}

const MOSAIC_FILES: [&str; 2] = [
    "wedsonlin_medium_1024_training.pickle",
    "zidongliu_decomfl.pickle",
];

/// Per file: the snapshot and its entry in mosaic-expected.json.
fn mosaic_cases(dir: &Path) -> Vec<(String, snapshot::Snapshot, Value)> {
    let text = std::fs::read_to_string(dir.join("mosaic-expected.json")).unwrap();
    let expected: Value = serde_json::from_str(&text).unwrap();
    MOSAIC_FILES
        .iter()
        .map(|name| {
            let snap = snapshot::load(&dir.join("real").join(name)).unwrap();
            (name.to_string(), snap, expected["files"][name].clone())
        })
        .collect()
}

fn parse(spec: &str) -> Window {
    spec.parse().unwrap_or_else(|e| panic!("{spec}: {e}"))
}

#[test]
fn window_peaks_equal_mosaics_get_memory_usage_peak() {
    let Some(dir) = shared() else { return };
    let rules = RuleSet::mosaic();
    let mut compared = 0;
    for (name, snap, exp) in mosaic_cases(&dir) {
        for w in exp["window-peaks"].as_array().unwrap() {
            let spec = format!("{}..{}", w["from-time-us"], w["to-time-us"]);
            let mosaic = w["dynamic-peak"].as_u64().unwrap();
            let got = analyze_in_window(&snap, &rules, 1, None, &parse(&spec));
            match got {
                Ok(devices) => {
                    assert_eq!(devices[0].0.figures.dynamic_peak, mosaic, "{name} {spec}");
                }
                // Mosaic answers 0 for a window holding no trace entry
                // (its peak starts at 0 and nothing is sampled); memgate
                // refuses such a window instead of reporting a figure of
                // nothing, so a 0 from Mosaic must be exactly that case.
                Err(e) => {
                    assert_eq!(mosaic, 0, "{name} {spec}: {e}");
                    assert!(e.to_string().contains("holds no trace entry"), "{e}");
                }
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 8, "every window of mosaic-expected.json");
}

#[test]
fn the_usage_at_an_event_equals_mosaics_get_memory_usage() {
    let Some(dir) = shared() else { return };
    let rules = RuleSet::mosaic();
    for (name, snap, exp) in mosaic_cases(&dir) {
        let events = exp["usage-at-event"].as_array().unwrap();
        assert!(!events.is_empty(), "{name}");
        for e in events {
            let spec = format!("..{}", e["event"].as_str().unwrap());
            let devices = analyze_in_window(&snap, &rules, 1, None, &parse(&spec))
                .unwrap_or_else(|err| panic!("{name} {spec}: {err}"));
            let w = devices[0].0.window.clone().unwrap();
            assert_eq!(
                w.dynamic_usage_at_to,
                e["dynamic-usage"].as_u64().unwrap(),
                "{name} {spec}"
            );
        }
    }
}

#[test]
fn the_usage_up_to_an_annotation_event_equals_mosaics_usage_by_annotation_stage() {
    let Some(dir) = shared() else { return };
    let rules = RuleSet::mosaic();
    for (name, snap, exp) in mosaic_cases(&dir) {
        for (key, usage) in exp["annotation-stages"].as_object().unwrap() {
            // `NAME_STAGE` or `NAME_STAGE(N)`: the Nth repeat, from 0.
            let (base, nth) = match key.strip_suffix(')').and_then(|k| k.rsplit_once('(')) {
                Some((base, n)) => (base, n.parse::<usize>().unwrap()),
                None => (key.as_str(), 0),
            };
            let (ann, stage) = base.rsplit_once('_').unwrap();
            let spec = format!("..@{ann}:{stage}:{nth}");
            let devices = analyze_in_window(&snap, &rules, 1, None, &parse(&spec))
                .unwrap_or_else(|err| panic!("{name} {spec}: {err}"));
            let w = devices[0].0.window.clone().unwrap();
            assert_eq!(
                w.dynamic_usage_at_to,
                usage.as_u64().unwrap(),
                "{name} {key}"
            );
        }
    }
}

#[test]
fn the_cli_gives_mosaics_window_peak_and_event_usage_in_json() {
    let Some(dir) = shared() else { return };
    let path = dir.join("real/wedsonlin_medium_1024_training.pickle");
    let run = |window: &str| -> Value {
        let out = memgate()
            .args(["peak", "--format", "json", "--top", "1", "--window", window])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{window}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["snapshots"][0]["devices"][0].clone()
    };
    let d = run("1783874422766414..1783874422934721");
    assert_eq!(d["figures"]["dynamic-peak"], 5283000324u64);
    let d = run("..c01a00000_21:free_completed");
    assert_eq!(d["window"]["dynamic-usage-at-to"], 10674970632u64);
}

#[test]
fn a_failing_windowed_check_says_its_window_and_where_its_peak_was_reached() {
    let f = write(true);
    // Entries 4..6 reach 650 at entry 5 (alloc C at 600 µs, 500 µs after
    // the first entry), between the two `fwd` spans; `my:step`, listed
    // last, only opens after them (annotations are taken in list order).
    let (code, json, err) = check(&budget_file(&f, "window = \"#4..#6\""), &[]);
    assert_eq!(code, Some(1), "{err}");
    let d = &json.unwrap()["targets"][0]["snapshots"][0]["devices"][0];
    let dynamic = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "dynamic-peak")
        .unwrap()
        .clone();
    assert_eq!(dynamic["status"], "fail");
    let kinds: Vec<&str> = dynamic["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["lower-bound", "over-budget", "peak-at", "in-window"],
        "{dynamic}"
    );
    assert_eq!(
        dynamic["findings"][2]["place"],
        json!({"annotation": "", "entry": 5, "rel-s": 0.0005})
    );
    // The terminal line says both.
    let out = memgate()
        .arg("check")
        .arg("--config")
        .arg(budget_file(&f, "window = \"#4..#6\""))
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(
            "the dynamic peak was reached at entry 5, +0.001 s, phase: (none); \
             judged in the window #4..#6 (entries 4..6)"
        ),
        "{stdout}"
    );
}

/// The fixture's device 0 and an idle device 1 (one segment, no trace, no
/// annotation): an annotation bound places nothing on device 1.
fn write_with_idle_device() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snap.json");
    let mut snap = snapshot_json(true);
    snap["segments"].as_array_mut().unwrap().push(json!({
        "device": 1, "address": 2_000_000, "total_size": 2_097_152, "stream": 0,
        "segment_type": "large", "frames": [],
        "blocks": [{"address": 2_000_000, "size": 2_097_152, "state": "inactive", "frames": []}]}));
    snap["device_traces"]
        .as_array_mut()
        .unwrap()
        .push(json!([]));
    std::fs::write(&path, snap.to_string()).unwrap();
    Fixture { _dir: dir, path }
}

#[test]
fn peak_and_profile_judge_the_devices_a_window_places_and_say_which_it_does_not() {
    let f = write_with_idle_device();
    let out = memgate()
        .args(["peak", "--format", "json", "--window", "@fwd:END:1.."])
        .arg(&f.path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = &v["snapshots"][0];
    let devices = s["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1, "{s}");
    // END 850 is before entry 8: the window holds entries 8..9.
    assert_eq!(edges(&devices[0]), (8, 9, 50, 80));
    assert_eq!(
        s["window-not-placed"],
        json!([{"device": 1, "window": "@fwd:END:1..",
                "problem": "no occurrence 1 of annotation fwd:END (the device has 0)"}])
    );
    for cmd in ["peak", "profile"] {
        let out = memgate()
            .args([cmd, "--window", "@fwd:END:1.."])
            .arg(&f.path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{cmd}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains("dev1: not judged: the window @fwd:END:1.. places nothing on it"),
            "{cmd}: {text}"
        );
    }
    // A window no device can place is still an error.
    let out = memgate()
        .args(["peak", "--window", "@bwd:END.."])
        .arg(&f.path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_judges_the_devices_its_target_names_in_the_window_and_lists_the_others() {
    let f = write_with_idle_device();
    // Every device judged: device 0 in its window, device 1 listed as not
    // judged (skipped, never passed), and the gate passes on device 0.
    let (code, json, err) = check(&budget_file(&f, "window = \"@fwd:END:1..\""), &[]);
    assert_eq!(code, Some(0), "{err}");
    let devices = json.unwrap()["targets"][0]["snapshots"][0]["devices"].clone();
    assert_eq!(devices[0]["device"], 0);
    assert_eq!(devices[0]["checks"][0]["status"], "pass");
    assert_eq!(devices[1]["device"], 1);
    let c = &devices[1]["checks"][0];
    assert_eq!(
        (&c["id"], &c["status"]),
        (&json!("window"), &json!("skipped"))
    );
    assert_eq!(c["findings"][0]["kind"], "window-not-placed");
    assert!(
        err.contains("SKIP t snap dev1 window: not judged: the window @fwd:END:1.. places nothing"),
        "{err}"
    );
    // `device = 0`: device 1 is not judged at all, so not mentioned.
    let config = budget_file(&f, "device = 0\nwindow = \"@fwd:END:1..\"");
    let (code, json, err) = check(&config, &[]);
    assert_eq!(code, Some(0), "{err}");
    let devices = json.unwrap()["targets"][0]["snapshots"][0]["devices"].clone();
    assert_eq!(devices.as_array().unwrap().len(), 1);
    assert!(!err.contains("dev1"), "{err}");
    // `device = 1`: the only judged device places nothing: not judged.
    let config = budget_file(&f, "device = 1");
    let (code, _, err) = check(&config, &["--window", "@fwd:END:1.."]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("device 1: window `@fwd:END:1..`: no occurrence 1 of annotation fwd:END"),
        "{err}"
    );
}

#[test]
fn a_summary_of_a_window_holds_the_devices_it_places_and_serves_as_their_baseline() {
    let f = write_with_idle_device();
    let golden = f._dir.path().join("golden");
    let out = memgate()
        .args(["summarize", "--window", "@fwd:END:1..", "-o"])
        .arg(&golden)
        .arg(&f.path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("dev1: not judged: the window @fwd:END:1.. places nothing on it"),
        "{text}"
    );
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(golden.join("snap.json")).unwrap()).unwrap();
    let devices: Vec<&Value> = summary["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["device"])
        .collect();
    assert_eq!(devices, [&json!(0)]);
    // Judged against it: device 0 compares, device 1 is listed, not judged.
    let config = budget_file(&f, "baseline = \"golden/\"\nwindow = \"@fwd:END:1..\"");
    let (code, json, err) = check(&config, &["--require-baseline"]);
    assert_eq!(code, Some(0), "{err}");
    let devices = json.unwrap()["targets"][0]["snapshots"][0]["devices"].clone();
    assert_eq!(devices.as_array().unwrap().len(), 2, "{devices}");
    assert_eq!(devices[0]["checks"][0]["baseline"], 80);
    assert_eq!(devices[1]["checks"][0]["id"], "window");
}
