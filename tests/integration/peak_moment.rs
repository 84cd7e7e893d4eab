//! The gated moment explained (`peak`, `diff`, `check`): where each peak
//! falls (phase, iteration, time), the stacks live at the chosen peak, OOM
//! details, and `diff` saying when a peak moved. Synthetic snapshots are
//! written here with every expectation worked out by hand in the comments;
//! the real fixture is checked against `../shared/fixtures/README.md`.

use crate::common::json_of as json;
use crate::common::memgate;
use std::path::{Path, PathBuf};

use serde_json::Value;

const M: u64 = 1 << 20;

fn frames(v: &[(&str, &str, u32)]) -> String {
    let f: Vec<String> = v
        .iter()
        .map(|(name, file, line)| {
            format!(r#"{{"name": "{name}", "filename": "{file}", "line": {line}}}"#)
        })
        .collect();
    format!("[{}]", f.join(", "))
}

/// One device, sizes in bytes, `a` and `c` the sizes that vary:
///
/// | entry | time (s) | action | size | dynamic | allocated |
/// |---|---|---|---|---|---|
/// | 0 | 1.0 | segment_alloc | 2048 MiB | 0 | 500 MiB (X, live before recording) |
/// | 1 | 1.1 | alloc A (small.py) | a | a | 500 MiB + a |
/// | 2 | 1.5 | alloc B (model.py) | 300 MiB | 300 MiB + a | 800 MiB + a |
/// | 3 | 2.0 | free X (init.py, never allocated in the trace) | 500 MiB | same | 300 MiB + a |
/// | 4 | 2.5 | free B | 300 MiB | a | a |
/// | 5 | 3.0 | alloc C (opt.py) | c | c + a | c + a |
/// | 6 | 3.1 | oom, 1 GiB requested, 123456 free | | | |
///
/// Annotations: ProfilerStep#0 START 0.9 s (entry 0) … END 2.6 s;
/// forward 1.2 s (entry 2) .. 1.8 s (entry 3); ProfilerStep#1 START 2.7 s
/// (entry 5); Optimizer.step 2.8 s (entry 5) .. 3.2 s (past the end). So
/// entry 2 is in `forward`, iteration 0; entries 5 and 6 in
/// `Optimizer.step`, iteration 1; entry 0 in `ProfilerStep#0`, iteration 0.
/// Times are relative to entry 0 (1.0 s).
fn snapshot(a: u64, c: u64) -> String {
    #[expect(clippy::cast_possible_truncation, reason = "a few seconds, in µs")]
    let t = |s: f64| (s * 1e6).round() as i64;
    let entry = |action: &str, addr: u64, size: u64, time: f64, fr: &str| {
        format!(
            r#"{{"action": "{action}", "addr": {addr}, "size": {size}, "stream": 0, "time_us": {}, "frames": {fr}}}"#,
            t(time)
        )
    };
    let none = "[]".to_string();
    let entries = [
        entry("segment_alloc", 1 << 30, 2048 * M, 1.0, &none),
        entry("alloc", 0x1000, a, 1.1, &frames(&[("a", "small.py", 1)])),
        entry(
            "alloc",
            0x2000,
            300 * M,
            1.5,
            &frames(&[("fwd", "model.py", 10)]),
        ),
        entry(
            "free_completed",
            0x9000,
            500 * M,
            2.0,
            &frames(&[("old", "init.py", 3)]),
        ),
        entry(
            "free_completed",
            0x2000,
            300 * M,
            2.5,
            &frames(&[("fwd", "model.py", 10)]),
        ),
        entry("alloc", 0x3000, c, 3.0, &frames(&[("step", "opt.py", 7)])),
        format!(
            r#"{{"action": "oom", "device_free": 123456, "size": {}, "stream": 0, "time_us": {}, "frames": {}}}"#,
            1u64 << 30,
            t(3.1),
            frames(&[("at::empty", "aten/Empty.cpp", 5), ("step", "opt.py", 8)])
        ),
    ];
    let ann = |name: &str, stage: &str, time: f64| {
        format!(
            r#"{{"name": "{name}", "stage": "{stage}", "device": 0, "time_us": {}}}"#,
            t(time)
        )
    };
    let annotations = [
        ann("ProfilerStep#0", "START", 0.9),
        ann("forward", "START", 1.2),
        ann("forward", "END", 1.8),
        ann("ProfilerStep#0", "END", 2.6),
        ann("ProfilerStep#1", "START", 2.7),
        ann("Optimizer.step", "START", 2.8),
        ann("Optimizer.step", "END", 3.2),
    ];
    format!(
        r#"{{"segments": [{{"device": 0, "address": {}, "total_size": {}, "stream": 0,
             "segment_type": "large", "blocks": []}}],
            "device_traces": [[{}]],
            "external_annotations": [{}]}}"#,
        1u64 << 30,
        2048 * M,
        entries.join(",\n"),
        annotations.join(",\n")
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn text(args: &[&str]) -> String {
    let out = memgate().args(args).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

const A: u64 = 2048;
const C: u64 = 350 * M;

#[test]
fn the_allocated_and_dynamic_peaks_are_placed_in_their_own_phase_iteration_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.json", &snapshot(A, C));
    let v = json(&["peak", "--format", "json", s.to_str().unwrap()]);
    let d = &v["snapshots"][0]["devices"][0];
    assert_eq!(d["figures"]["allocated-peak"], 800 * M + A);
    assert_eq!(d["figures"]["dynamic-peak"], C + A);
    let p = &d["peak-phase"];
    assert_eq!(
        p["allocated-peak"],
        serde_json::json!({"annotation": "forward", "iteration": 0, "entry": 2, "rel-s": 0.5})
    );
    assert_eq!(
        p["dynamic-peak"],
        serde_json::json!({"annotation": "Optimizer.step", "iteration": 1, "entry": 5, "rel-s": 2.0})
    );
    // The segment is mapped at entry 0, inside ProfilerStep#0.
    assert_eq!(
        p["reserved-peak"],
        serde_json::json!({"annotation": "ProfilerStep#0", "iteration": 0, "entry": 0, "rel-s": 0.0})
    );

    let t = text(&["peak", s.to_str().unwrap()]);
    assert!(
        t.contains("allocated peak (MemoryViz active memory): 800.00 MiB (838862848 bytes)  [entry 2, +0.500 s, phase: forward, iteration 0]"),
        "{t}"
    );
    assert!(
        t.contains("(367003648 bytes)  [entry 5, +2.000 s, phase: Optimizer.step, iteration 1]"),
        "{t}"
    );
}

fn stacks(d: &Value) -> Vec<(u64, String)> {
    d["stacks-at-moment"]["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["bytes"].as_u64().unwrap(),
                g["frames"][0].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn peak_lists_the_stacks_live_at_the_allocated_peak_unless_told_another_moment() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.json", &snapshot(A, C));
    let s = s.to_str().unwrap();
    // After entry 2: X (live before recording), B and A: 800 MiB + A.
    let d = json(&["peak", "--format", "json", s]);
    let d = &d["snapshots"][0]["devices"][0];
    assert_eq!(d["stacks-at-moment"]["at"], "allocated-peak");
    assert_eq!(
        stacks(d),
        [
            (500 * M, "old (init.py:3)".to_string()),
            (300 * M, "fwd (model.py:10)".to_string()),
            (A, "a (small.py:1)".to_string()),
        ]
    );
    // After entry 5: C and A (X and B freed).
    let d = json(&["peak", "--format", "json", "--at", "dynamic", s]);
    let d = &d["snapshots"][0]["devices"][0];
    assert_eq!(d["stacks-at-moment"]["at"], "dynamic-peak");
    assert_eq!(
        stacks(d),
        [
            (C, "step (opt.py:7)".to_string()),
            (A, "a (small.py:1)".to_string()),
        ]
    );
    // After entry 0: only X.
    let d = json(&["peak", "--format", "json", "--at", "reserved", s]);
    let d = &d["snapshots"][0]["devices"][0];
    assert_eq!(stacks(d), [(500 * M, "old (init.py:3)".to_string())]);

    let t = text(&["peak", s]);
    assert!(
        t.contains("live at the allocated peak, by call stack"),
        "{t}"
    );
    let t = text(&["peak", "--at", "dynamic", s]);
    assert!(t.contains("live at the dynamic peak, by call stack"), "{t}");
}

#[test]
fn an_oom_is_detailed_with_what_it_asked_what_was_free_and_the_memory_then() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(dir.path(), "s.json", &snapshot(A, C));
    let v = json(&["peak", "--format", "json", s.to_str().unwrap()]);
    let d = &v["snapshots"][0]["devices"][0];
    // At entry 6: allocated C + A, reserved the one 2048 MiB segment.
    assert_eq!(
        d["oom"],
        serde_json::json!([{
            "entry": 6, "rel-s": 2.1, "requested": 1u64 << 30, "device-free": 123456,
            "allocated": C + A, "reserved": 2048 * M,
            // The dump lists no block in the segment: all of it was a free
            // block, so the failure is not explained by the snapshot.
            "cached-free": 2048 * M - C - A, "largest-free-block": 2048 * M,
            "cause": "unexplained", "phase": "Optimizer.step",
            "iteration": 1, "frames": ["at::empty (aten/Empty.cpp:5)", "step (opt.py:8)"]
        }])
    );
    let t = text(&["peak", s.to_str().unwrap()]);
    assert!(
        t.contains("OOM 1 of 1: requested 1 GiB (1073741824 bytes), device free ")
            && t.contains("(123456 bytes); allocated 350.00 MiB (367003648 bytes), reserved 2 GiB (2147483648 bytes)  [entry 6, +2.100 s, phase: Optimizer.step, iteration 1]"),
        "{t}"
    );
}

#[test]
fn a_gate_failing_on_an_oom_says_where_it_happened() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "s.json", &snapshot(A, C));
    write(
        dir.path(),
        "memgate.toml",
        // The trace frees memory allocated before recording (it started
        // mid-run): its allocated peak is a lower bound, taken as it is.
        "[[target]]\nname = \"train\"\nsnapshots = \"s.json\"\naccept-lower-bounds = true\n\n[target.budget]\nallocated-peak = \"1 GiB\"\n",
    );
    let out = memgate()
        .current_dir(dir.path())
        .arg("check")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        all.contains("1 OOM events, more than the 0 allowed by the default budget; the first: requested 1 GiB with "),
        "{all}"
    );
    assert!(
        all.contains("(allocated 350.00 MiB, reserved 2 GiB) at entry 6, +2.100 s, phase: Optimizer.step, iteration 1, in step (opt.py:8)"),
        "{all}"
    );
    // The verdict JSON carries the OOM details per device (docs/figures.md#oom).
    let out = memgate()
        .current_dir(dir.path())
        .args(["check", "--json", "-"])
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let oom = &v["targets"][0]["snapshots"][0]["devices"][0]["oom"][0];
    assert_eq!(
        (&oom["entry"], &oom["phase"]),
        (&serde_json::json!(6), &serde_json::json!("Optimizer.step"))
    );
}

#[test]
fn without_time_or_annotations_a_peak_is_placed_by_its_entry_alone() {
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "npu.json",
        r#"{"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 4096, "size": 100, "stream": 0, "frames": []},
            {"action": "alloc", "addr": 8192, "size": 50, "stream": 0, "frames": []},
            {"action": "free_completed", "addr": 4096, "size": 100, "stream": 0, "frames": []}]]}"#,
    );
    let v = json(&["peak", "--format", "json", s.to_str().unwrap()]);
    let p = &v["snapshots"][0]["devices"][0]["peak-phase"];
    assert_eq!(
        p["allocated-peak"],
        serde_json::json!({"annotation": "", "entry": 1})
    );
    let t = text(&["peak", s.to_str().unwrap()]);
    assert!(t.contains("(150 bytes)  [entry 1, phase: (none)]"), "{t}");
}

#[test]
fn diff_says_the_allocated_peak_moved_and_gives_no_percentage_of_a_tiny_base() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &snapshot(A, C));
    // C grows to 1200 MiB: the allocated peak is now entry 5 (1200 MiB +
    // a) in Optimizer.step, iteration 1; the dynamic peak stays there.
    let new = write(dir.path(), "new.json", &snapshot(3 * A, 1200 * M));
    let rules = write(
        dir.path(),
        "rules.toml",
        "[categories]\nsmall = \"small\\\\.py\"\nmodel = \"model\\\\.py\"\ninit = \"init\\\\.py\"\nopt = \"opt\\\\.py\"\n",
    );
    let (b, n, r) = (
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        rules.to_str().unwrap(),
    );
    let v = json(&["diff", "--format", "json", "--rules", r, b, n]);
    let d = &v["devices"][0];
    assert_eq!(
        d["peak-moved"],
        serde_json::json!([{
            "peak": "allocated-peak",
            "base": {"annotation": "forward", "iteration": 0, "entry": 2, "rel-s": 0.5},
            "new": {"annotation": "Optimizer.step", "iteration": 1, "entry": 5, "rel-s": 2.0}
        }])
    );
    let find = |list: &str, id: &str| -> Value {
        d[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == id)
            .unwrap()
            .clone()
    };
    // 800 MiB + 2 KiB -> 1200 MiB + 6 KiB: well above the floor.
    let ap = find("figures", "allocated-peak");
    let expected = (400.0 * M as f64 + 4096.0) * 100.0 / (800.0 * M as f64 + 2048.0);
    assert!(
        (ap["percent"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{ap}"
    );
    // 2 KiB -> 6 KiB: under 1 MiB, no percentage.
    let small = find("categories", "small");
    assert_eq!(
        (small["base"].as_u64(), small["new"].as_u64()),
        (Some(A), Some(3 * A))
    );
    assert!(small["percent"].is_null(), "{small}");

    let t = text(&["diff", "--rules", r, b, n]);
    assert!(
        t.contains("  allocated peak moved: forward (iteration 0, entry 2) -> Optimizer.step (iteration 1, entry 5)\n"),
        "{t}"
    );
    assert!(!t.contains("dynamic peak moved"), "{t}");
    let row = |id: &str| {
        t.lines()
            .find(|l| l.trim_start().starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no {id} row in {t}"))
            .to_string()
    };
    assert!(!row("small").contains('%'), "{t}");
    assert!(row("small").contains("+4 KiB"), "{t}");
    assert!(row("model").trim_end().ends_with("gone"), "{t}");
    assert!(row("opt").trim_end().ends_with("new"), "{t}");
    assert!(row("allocated-peak").trim_end().ends_with("+50.0%"), "{t}");
    // The move is said before the category deltas.
    assert!(t.find("peak moved").unwrap() < t.find("categories at").unwrap());
}

fn real(name: &str) -> Option<PathBuf> {
    crate::common::real_fixture(name, "the real-snapshot peak-moment test")
}

#[test]
fn on_wedsonlin_the_peaks_named_agree_with_the_fixtures_readme_and_the_listing_stays_readable() {
    let Some(path) = real("wedsonlin_medium_1024_training.pickle") else {
        return;
    };
    let p = path.to_str().unwrap();
    let d = &crate::common::peak_device(&path);
    // README: dynamic peak first reached at entry 3737; allocated-peak
    // 24207167496 bytes.
    assert_eq!(d["peak-phase"]["dynamic-peak"]["entry"], 3737);
    assert_eq!(d["figures"]["allocated-peak"], 24207167496u64);
    assert_eq!(
        d["peak-phase"]["allocated-peak"]["entry"],
        d["peak-entry"]["allocated-peak"]
    );
    // Everything live at the allocated peak is listed: its stacks add up
    // to the README's figure.
    let listed: u64 = d["stacks-at-moment"]["stacks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(listed, 24207167496);
    // JSON keeps every frame; text folds them and cuts long lines.
    let t = text(&["peak", "--top", "10", p]);
    assert!(t.contains(" C++ frames\n"), "{t}");
    let longest = t
        .lines()
        .filter(|l| l.starts_with("        "))
        .map(|l| l.chars().count())
        .max()
        .unwrap();
    assert!(longest <= 8 + 200, "a frame line of {longest} characters");
    assert!(t.lines().count() < 155, "{} lines", t.lines().count());
    let frames_in_json = d["stacks-at-moment"]["stacks"][0]["frames"]
        .as_array()
        .unwrap()
        .len();
    assert!(frames_in_json > 50, "{frames_in_json}");
}

#[test]
fn only_the_first_twenty_ooms_are_detailed_and_the_rest_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let ooms: Vec<String> = (0..23)
        .map(|i| {
            format!(
                r#"{{"action": "oom", "device_free": {i}, "size": 4096, "stream": 0, "frames": []}}"#
            )
        })
        .collect();
    let s = write(
        dir.path(),
        "ooms.json",
        &format!(
            r#"{{"segments": [], "device_traces": [[{}]]}}"#,
            ooms.join(",")
        ),
    );
    let v = json(&["peak", "--format", "json", s.to_str().unwrap()]);
    let d = &v["snapshots"][0]["devices"][0];
    assert_eq!(d["figures"]["oom-events"], 23);
    let listed = d["oom"].as_array().unwrap();
    assert_eq!(listed.len(), 20);
    assert_eq!(listed[19]["entry"], 19);
    assert_eq!(listed[19]["device-free"], 19);
    let t = text(&["peak", s.to_str().unwrap()]);
    assert!(t.contains("    OOM 20 of 23: requested 4 KiB"), "{t}");
    assert!(!t.contains("OOM 21 of 23"), "{t}");
    assert!(
        t.contains("… 3 more OOMs (only the first 20 are detailed)"),
        "{t}"
    );
}

#[test]
fn on_every_real_fixture_the_stacks_at_the_allocated_peak_add_up_to_the_readmes_allocated_peak() {
    // `../shared/fixtures/README.md`, column allocated-peak.
    let table = [
        ("select_n_04d383c.pickle", 20802383104u64),
        ("select_n_1f2f548.pickle", 2409045992),
        ("select_n_dec166a.pickle", 544460336),
        ("wedsonlin_medium_1024_training.pickle", 24207167496),
        ("cranberrii_ftcourse.pickle", 5876132840),
        ("muduard_layoutediting_list.pkl", 3308174782),
        ("zidongliu_decomfl.pickle", 1783664516),
    ];
    for (name, allocated_peak) in table {
        let Some(path) = real(name) else {
            return;
        };
        let v = json(&[
            "peak",
            "--format",
            "json",
            "--top",
            "1000000",
            path.to_str().unwrap(),
        ]);
        let d = &v["snapshots"][0]["devices"][0];
        let listed: u64 = d["stacks-at-moment"]["stacks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["bytes"].as_u64().unwrap())
            .sum();
        assert_eq!(listed, allocated_peak, "{name}");
    }
}

#[test]
fn a_reserved_peak_held_from_the_start_lists_what_was_live_before_the_first_entry() {
    // One 1000-byte segment all along (no segment event), holding a
    // 400-byte block from before recording; entry 0 allocates 100 bytes
    // elsewhere. The reserved peak is the start: only the block is live.
    let dir = tempfile::tempdir().unwrap();
    let s = write(
        dir.path(),
        "start.json",
        r#"{"segments": [{"device": 0, "address": 0, "total_size": 1000, "stream": 0,
              "segment_type": "large",
              "blocks": [{"address": 0, "size": 400, "requested_size": 400, "state": "active_allocated", "frames": []},
                         {"address": 400, "size": 600, "requested_size": 0, "state": "inactive", "frames": []}]}],
            "device_traces": [[
              {"action": "alloc", "addr": 90000, "size": 100, "stream": 0, "frames": []}]]}"#,
    );
    let v = json(&[
        "peak",
        "--format",
        "json",
        "--at",
        "reserved",
        s.to_str().unwrap(),
    ]);
    let d = &v["snapshots"][0]["devices"][0];
    assert_eq!(d["figures"]["reserved-peak"], 1000);
    assert_eq!(stacks(d), [(400, String::new())]);
}

#[test]
fn diff_against_a_summary_says_the_peak_moved_as_against_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &snapshot(A, C));
    let new = write(dir.path(), "new.json", &snapshot(3 * A, 1200 * M));
    let golden = dir.path().join("golden");
    memgate()
        .args(["summarize", "-o"])
        .arg(&golden)
        .arg(&base)
        .assert()
        .success();
    let summary = golden.join("base.json");
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(
        stored["devices"][0]["peak-phase"]["allocated-peak"]["annotation"],
        "forward"
    );
    let (s, n) = (summary.to_str().unwrap(), new.to_str().unwrap());
    let d = &json(&["diff", "--format", "json", s, n])["devices"][0];
    let moved = &d["peak-moved"][0];
    assert_eq!(moved["peak"], "allocated-peak", "{d}");
    assert_eq!(moved["base"]["annotation"], "forward");
    assert_eq!(moved["new"]["annotation"], "Optimizer.step");
}
