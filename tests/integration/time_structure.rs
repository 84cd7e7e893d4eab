//! `memgate phases` (docs/figures.md#time-structure): the usage at each annotation event against
//! Mosaic's own numbers on the shared fixtures, and phases, iterations and
//! the leak fit on a small trace whose expectations are worked out by hand
//! below.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

/// `memgate phases --all ARGS FILES` (every list whole).
fn phases(args: &[&str], files: &[&Path]) -> (Option<i32>, Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memgate"))
        .args(["phases", "--all"])
        .args(args)
        .args(files)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), doc, stderr)
}

fn shared_fixtures() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures");
    if dir.join("mosaic-expected.json").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: {} not found: annotation-stage usage not checked against Mosaic",
            dir.display()
        );
        None
    }
}

#[test]
fn annotation_stage_usage_equals_mosaics_on_the_shared_fixtures() {
    let Some(dir) = shared_fixtures() else { return };
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("mosaic-expected.json")).unwrap())
            .unwrap();
    let files = expected["files"].as_object().unwrap();
    assert_eq!(files.len(), 3, "mosaic-expected.json lists three files");
    for (file, want) in files {
        let path = ["real", "format"]
            .iter()
            .map(|d| dir.join(d).join(file))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{file} not in real/ or format/"));
        let (code, doc, stderr) = phases(&["--format", "json"], &[&path]);
        assert_eq!(code, Some(0), "{file}: {stderr}");
        let mut got = serde_json::Map::new();
        for d in doc["snapshots"][0]["devices"].as_array().unwrap() {
            for a in d["annotations"].as_array().unwrap() {
                let key = a["key"].as_str().unwrap().to_string();
                assert!(got.insert(key, a["dynamic-usage"].clone()).is_none());
            }
        }
        assert_eq!(
            Value::Object(got),
            want["annotation-stages"],
            "{file}: usage by annotation stage"
        );
    }
}

/// Four iterations (`ProfilerStep#k`, START at 100k µs, END at 100k + 90),
/// each allocating 1 MiB that is never freed and a 4 MiB temporary freed
/// again; a `forward` annotation around the first temporary; an END with
/// no START. Entry 3k+j has time 100k + 10(j+1).
fn leaky_loop() -> Value {
    let mut trace = Vec::new();
    let mut anns = Vec::new();
    for k in 0..4u64 {
        let t = 100 * k;
        let step = format!("ProfilerStep#{k}");
        anns.push(json!({"name": step, "stage": "START", "device": 0, "time_us": t}));
        if k == 0 {
            anns.push(json!({"name": "forward", "stage": "START", "device": 0, "time_us": 15}));
            anns.push(json!({"name": "forward", "stage": "END", "device": 0, "time_us": 35}));
        }
        anns.push(json!({"name": step, "stage": "END", "device": 0, "time_us": t + 90}));
        let kept = 0x1000 + 0x100 * k;
        trace.push(
            json!({"action": "alloc", "addr": kept, "size": MIB, "time_us": t + 10, "frames": []}),
        );
        trace.push(json!({"action": "alloc", "addr": 0x9000, "size": 4 * MIB, "time_us": t + 20, "frames": []}));
        trace.push(json!({"action": "free_completed", "addr": 0x9000, "size": 4 * MIB, "time_us": t + 30, "frames": []}));
    }
    anns.push(json!({"name": "backward", "stage": "END", "device": 0, "time_us": 250}));
    json!({"segments": [], "device_traces": [trace], "external_annotations": anns})
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

#[test]
fn events_phases_iterations_and_the_leak_of_a_small_loop() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "loop.json", &leaky_loop());
    let (code, doc, stderr) = phases(&["--format", "json"], &[&path]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(doc["schema_version"], 2);
    let d = &doc["snapshots"][0]["devices"][0];

    // Usage at an event: after every entry with time <= the event's.
    // Allocated after entry 3k is (k+1) MiB, after 3k+1 (k+5) MiB, after
    // 3k+2 (k+1) MiB.
    let usage: Vec<(&str, u64, u64)> = d["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["key"].as_str().unwrap(),
                a["entry"].as_u64().unwrap(),
                a["dynamic-usage"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        usage,
        [
            ("ProfilerStep#0_START", 0, 0),
            ("forward_START", 1, MIB),
            ("forward_END", 3, MIB),
            ("ProfilerStep#0_END", 3, MIB),
            ("ProfilerStep#1_START", 3, MIB),
            ("ProfilerStep#1_END", 6, 2 * MIB),
            ("ProfilerStep#2_START", 6, 2 * MIB),
            ("ProfilerStep#2_END", 9, 3 * MIB),
            ("ProfilerStep#3_START", 9, 3 * MIB),
            ("ProfilerStep#3_END", 12, 4 * MIB),
            ("backward_END", 12, 4 * MIB),
        ]
    );
    // 15 µs after the first entry (10 µs).
    assert_eq!(d["annotations"][1]["rel-s"], 5e-6);

    // Phases by start: ProfilerStep#0 holds entries 0..2 and forward 1..2.
    let p = &d["phases"];
    assert_eq!(p.as_array().unwrap().len(), 5);
    assert_eq!(
        (&p[0]["name"], &p[0]["from-entry"], &p[0]["to-entry"]),
        (&json!("ProfilerStep#0"), &json!(0), &json!(2))
    );
    assert_eq!(p[0]["allocated-peak"], 5 * MIB);
    assert_eq!(p[0]["live-at-start"], 0);
    assert_eq!(p[0]["live-at-end"], MIB);
    assert_eq!(p[0]["allocated-during"], 5 * MIB);
    assert_eq!(
        (&p[1]["name"], &p[1]["from-entry"], &p[1]["to-entry"]),
        (&json!("forward"), &json!(1), &json!(2))
    );
    assert_eq!(p[1]["allocated-peak"], 5 * MIB);
    assert_eq!(p[1]["live-at-start"], MIB);
    assert_eq!(p[1]["allocated-during"], 4 * MIB);
    assert_eq!(p[4]["name"], "ProfilerStep#3");
    assert_eq!(p[4]["closed"], true);

    // Iterations start at each ProfilerStep START: entries 0, 3, 6, 9.
    let it = &d["iterations"];
    assert_eq!(it["boundary"], "ProfilerStep#*:START");
    let items: Vec<(u64, u64, u64)> = it["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["from-entry"].as_u64().unwrap(),
                i["allocated-peak"].as_u64().unwrap(),
                i["live-at-start"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            (0, 5 * MIB, 0),
            (3, 6 * MIB, MIB),
            (6, 7 * MIB, 2 * MIB),
            (9, 8 * MIB, 3 * MIB)
        ]
    );
    assert_eq!(it["steady-state-peak"], 8 * MIB);
    // Live at start after the first: 1, 2, 3 MiB, a straight line.
    assert_eq!(
        it["leak"],
        json!({"bytes-per-iteration": MIB, "iterations": 3, "residual": 0})
    );
    assert_eq!(d["warnings"].as_array().unwrap().len(), 1, "{d}");
    assert!(d["warnings"][0].as_str().unwrap().contains("END"));
}

#[test]
fn annotation_filter_and_iteration_boundary_options() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "loop.json", &leaky_loop());
    let (code, doc, stderr) = phases(
        &[
            "--format",
            "json",
            "--annotation",
            "forward",
            "--iteration-boundary",
            "forward",
        ],
        &[&path],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let d = &doc["snapshots"][0]["devices"][0];
    let keys: Vec<&str> = d["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["forward_START", "forward_END"]);
    // One forward START: one iteration, from entry 1 to the end (a span
    // inside the step says nothing of where the step ends).
    let it = &d["iterations"];
    assert_eq!(it["boundary"], "forward*:START");
    assert_eq!(it["items"].as_array().unwrap().len(), 1);
    assert_eq!(it["items"][0]["from-entry"], 1);
    assert_eq!(it["items"][0]["to-entry"], 11);
    assert!(it.get("leak").is_none());
}

#[test]
fn a_trace_without_annotations_has_no_phases_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let snap = json!({"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 16, "size": 512, "frames": []}
    ]]});
    let path = write(dir.path(), "npu.json", &snap);
    let (code, doc, stderr) = phases(&["--format", "json"], &[&path]);
    assert_eq!(code, Some(0), "{stderr}");
    let d = &doc["snapshots"][0]["devices"][0];
    assert_eq!(d["annotations"], json!([]));
    assert_eq!(d["phases"], json!([]));
    assert!(d.get("iterations").is_none());
    let out = Command::new(env!("CARGO_BIN_EXE_memgate"))
        .args(["phases"])
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("no annotations"), "{text}");
}

fn time_fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/time")
}

#[test]
fn memory_used_after_the_last_profiler_step_end_is_outside_every_iteration() {
    // The generator measured each step's peak while making the run; the
    // 512 MiB checkpoint after ProfilerStep#5's END belongs to no step.
    let dir = time_fixtures();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("expected.json")).unwrap()).unwrap();
    let want = &expected["checkpoint_after_loop.pickle"];
    let path = dir.join("checkpoint_after_loop.pickle");
    let out = Command::new(env!("CARGO_BIN_EXE_memgate"))
        .args(["peak", "--format", "json"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &doc["snapshots"][0]["devices"][0];
    assert_eq!(d["time"]["iterations"], want["iterations"]);
    assert_eq!(d["time"]["steady-state-peak"], want["steady-state-peak"]);
    // The run's peak is the checkpoint's, and it is in no iteration.
    assert_eq!(d["figures"]["allocated-peak"], want["allocated-peak"]);
    let place = &d["peak-phase"]["allocated-peak"];
    assert_eq!(place["annotation"], "", "{place}");
    assert!(place.get("iteration").is_none(), "{place}");

    let (code, doc, stderr) = phases(&["--format", "json"], &[&path]);
    assert_eq!(code, Some(0), "{stderr}");
    let items = &doc["snapshots"][0]["devices"][0]["iterations"]["items"];
    let peaks: Vec<&Value> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["allocated-peak"])
        .collect();
    let want_peaks: Vec<&Value> = want["step-allocated-peaks"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(peaks, want_peaks);

    // `Optimizer.step` marks a moment inside each step, not the step: its
    // last iteration runs to the end of the trace, checkpoint included
    // (never a figure cut short).
    let (code, doc, stderr) = phases(
        &["--format", "json", "--iteration-boundary", "Optimizer.step"],
        &[&path],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let d = &doc["snapshots"][0]["devices"][0];
    let last_event = d["annotations"].as_array().unwrap().last().unwrap()["entry"].clone();
    let last = d["iterations"]["items"].as_array().unwrap().last().unwrap();
    assert!(last["to-entry"].as_u64() > last_event.as_u64(), "{last}");
    assert_eq!(d["iterations"]["steady-state-peak"], want["allocated-peak"]);
    // A prefix whose spans reach each next START spans the steps: its last
    // iteration ends at its END, like `ProfilerStep#`'s.
    let (code, doc, stderr) = phases(
        &["--format", "json", "--iteration-boundary", "ProfilerStep"],
        &[&path],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let it = &doc["snapshots"][0]["devices"][0]["iterations"];
    assert_eq!(it["steady-state-peak"], want["steady-state-peak"]);
}

#[test]
fn the_time_fixtures_are_what_the_generator_writes() {
    let out = tempfile::tempdir().unwrap();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let ran = Command::new("python3")
        .arg(root.join("tests/fixtures/gen/generate.py"))
        .arg("--time")
        .arg(out.path())
        .output();
    let Ok(ran) = ran else {
        eprintln!(
            "SKIPPED: python3 not found; tests/fixtures/time not compared with the generator"
        );
        return;
    };
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    for name in ["checkpoint_after_loop.pickle", "expected.json"] {
        let made = std::fs::read(out.path().join(name)).unwrap();
        let kept = std::fs::read(time_fixtures().join(name)).unwrap();
        assert!(
            made == kept,
            "tests/fixtures/time/{name} differs from what generate.py writes"
        );
    }
}
