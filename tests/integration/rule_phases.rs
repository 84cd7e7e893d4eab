//! `memgate phases --rules FILE`: phases from the `[phases]` stack rules on
//! NPU-shaped snapshots (no `time_us`, no annotations), with every figure
//! worked out by hand in the comments.

use crate::common::memgate;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// One frame per stack, named after what the rules look for.
fn frames(kind: &str) -> Value {
    let (name, file) = match kind {
        "fwd" => ("forward", "model.py"),
        "bwd" => ("backward", "autograd.py"),
        "opt" => ("step", "adam.py"),
        // Matches both the forward and the backward rule.
        "both" => ("forward", "autograd.py"),
        _ => ("helper", "util.py"),
    };
    json!([{"name": name, "filename": file, "line": 1}])
}

/// NPU-shaped entries: no `time_us`.
fn alloc(addr: u64, size: u64, kind: &str) -> Value {
    json!({"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": frames(kind)})
}

fn free(addr: u64, size: u64) -> Value {
    json!({"action": "free_completed", "addr": addr, "size": size, "stream": 0,
           "frames": frames("none")})
}

const RULES: &str =
    "[phases]\nforward = \"forward\"\nbackward = \"backward\"\noptimizer = \"adam\\\\.py\"\n";

fn write(dir: &Path, trace: Vec<Value>, annotations: Vec<Value>) -> (PathBuf, PathBuf) {
    let snap = dir.join("npu.json");
    let body = json!({"segments": [], "device_traces": [trace],
                      "external_annotations": annotations});
    std::fs::write(&snap, body.to_string()).unwrap();
    let rules = dir.join("rules.toml");
    std::fs::write(&rules, RULES).unwrap();
    (snap, rules)
}

/// The standard output of `memgate ARGS… --rules RULES SNAP`, which must
/// succeed.
fn run(args: &[&str], snap: &Path, rules: &Path) -> Vec<u8> {
    memgate()
        .args(args)
        .arg("--rules")
        .arg(rules)
        .arg(snap)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// Device 0 of `memgate COMMAND --format json --rules RULES SNAP`.
fn device_json(command: &str, snap: &Path, rules: &Path) -> Value {
    let out = run(&[command, "--format", "json"], snap, rules);
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["snapshots"][0]["devices"][0].clone()
}

/// `memgate phases --format json --rules RULES SNAP`: device 0.
fn phases(snap: &Path, rules: &Path) -> Value {
    device_json("phases", snap, rules)
}

/// (name, occurrence, from, to, closed, allocated-peak, live-at-start,
/// live-at-end, allocated-during) of a span.
type Span = (String, u64, u64, u64, bool, u64, u64, u64, u64);

fn spans(d: &Value) -> Vec<Span> {
    d["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let n = |k: &str| p[k].as_u64().unwrap();
            (
                p["name"].as_str().unwrap().to_string(),
                n("occurrence"),
                n("from-entry"),
                n("to-entry"),
                p["closed"].as_bool().unwrap(),
                n("allocated-peak"),
                n("live-at-start"),
                n("live-at-end"),
                n("allocated-during"),
            )
        })
        .collect()
}

fn span(name: &str, occurrence: u64, from: u64, to: u64, closed: bool, figures: [u64; 4]) -> Span {
    let [peak, start, end, during] = figures;
    (
        name.to_string(),
        occurrence,
        from,
        to,
        closed,
        peak,
        start,
        end,
        during,
    )
}

#[test]
fn an_npu_trace_is_cut_into_phases_where_an_alloc_of_another_phase_comes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        alloc(1, 10, "none"), // 0: before any phase      live 10
        alloc(2, 100, "fwd"), // 1: forward #0 starts      110
        alloc(3, 50, "none"), // 2: matches nothing: still forward  160
        free(1, 10),          // 3                         150
        alloc(4, 200, "fwd"), // 4: forward again: same span  350
        alloc(5, 30, "bwd"),  // 5: backward #0 starts     380
        free(2, 100),         // 6                         280
        alloc(6, 5, "opt"),   // 7: optimizer #0 starts    285
        free(4, 200),         // 8                         85
        alloc(7, 7, "fwd"),   // 9: forward #1, to the end  92
    ];
    let (snap, rules) = write(dir.path(), trace, vec![]);
    let d = phases(&snap, &rules);
    assert_eq!(d["annotations"], json!([]));
    assert_eq!(
        spans(&d),
        vec![
            // [allocated-peak, live-at-start, live-at-end, allocated-during]
            span("forward", 0, 1, 4, true, [350, 10, 350, 350]),
            span("backward", 0, 5, 6, true, [380, 350, 280, 30]),
            span("optimizer", 0, 7, 8, true, [285, 280, 85, 5]),
            span("forward", 1, 9, 9, false, [92, 85, 92, 7]),
        ]
    );
    // No time_us: no rel-s anywhere; the dynamic peak of forward #0 is the
    // allocated one (no memory from before recording).
    assert_eq!(d["phases"][0]["dynamic-peak"], 350);
    assert!(!d.to_string().contains("rel-s"));
}

#[test]
fn the_first_phase_rule_in_file_order_wins_when_several_match() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        alloc(1, 10, "bwd"),  // 0: backward #0
        alloc(2, 20, "both"), // 1: forward and backward match: forward (listed first)
        alloc(3, 30, "bwd"),  // 2: backward #1
    ];
    let (snap, rules) = write(dir.path(), trace, vec![]);
    let d = phases(&snap, &rules);
    assert_eq!(
        spans(&d),
        vec![
            span("backward", 0, 0, 0, true, [10, 0, 10, 10]),
            span("forward", 0, 1, 1, true, [30, 10, 30, 20]),
            span("backward", 1, 2, 2, false, [60, 30, 60, 30]),
        ]
    );
}

#[test]
fn a_trace_with_no_matching_alloc_has_no_phases() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![alloc(1, 10, "none"), free(1, 10)];
    let (snap, rules) = write(dir.path(), trace, vec![]);
    assert_eq!(phases(&snap, &rules)["phases"], json!([]));
}

#[test]
fn annotations_win_over_the_phase_rules_and_a_warning_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let timed = |mut e: Value, t: i64| {
        e["time_us"] = json!(t);
        e
    };
    let trace = vec![
        timed(alloc(1, 10, "fwd"), 5),
        timed(alloc(2, 20, "bwd"), 15),
    ];
    let annotations = vec![json!({"name": "step", "stage": "START", "device": 0, "time_us": 10})];
    let (snap, rules) = write(dir.path(), trace, annotations);
    let d = phases(&snap, &rules);
    // The one annotation span: entry 1 to the end, never ended.
    assert_eq!(
        spans(&d),
        vec![span("step", 0, 1, 1, false, [30, 10, 30, 20])]
    );
    assert!(
        d["warnings"]
            .to_string()
            .contains("the [phases] / [iterations] rules were not used"),
        "{d}"
    );
}

#[test]
fn the_text_report_says_where_the_phases_came_from() {
    let dir = tempfile::tempdir().unwrap();
    let (snap, rules) = write(dir.path(), vec![alloc(1, 10, "fwd")], vec![]);
    let text = String::from_utf8(run(&["phases"], &snap, &rules)).unwrap();
    assert!(
        text.contains("no annotations; phases from the [phases] rules"),
        "{text}"
    );
    assert!(
        text.contains("forward #0  entries 0..0 (never ended)"),
        "{text}"
    );
}

#[test]
fn a_phase_rule_that_is_not_a_regex_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (snap, rules) = write(dir.path(), vec![alloc(1, 10, "fwd")], vec![]);
    std::fs::write(&rules, "[phases]\nbroken = \"(unclosed\"\n").unwrap();
    memgate()
        .args(["phases", "--rules"])
        .arg(&rules)
        .arg(&snap)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "phases.broken: not a valid regex",
        ));
}

#[test]
fn a_rules_file_with_only_phases_still_serves_as_category_rules() {
    let dir = tempfile::tempdir().unwrap();
    let (snap, rules) = write(dir.path(), vec![alloc(1, 10, "fwd")], vec![]);
    memgate()
        .args(["profile", "--rules"])
        .arg(&rules)
        .arg(&snap)
        .assert()
        .success();
    std::fs::write(&rules, "[other]\n").unwrap();
    memgate()
        .args(["profile", "--rules"])
        .arg(&rules)
        .arg(&snap)
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "no [categories], [phases] or [iterations] table",
        ));
}

#[test]
fn on_an_npu_trace_the_peaks_are_placed_in_their_stack_rule_phase_by_entry() {
    let dir = tempfile::tempdir().unwrap();
    let trace = vec![
        alloc(1, 100, "fwd"), // 0: forward #0            100
        alloc(2, 300, "bwd"), // 1: backward #0           400: the peak
        free(1, 100),         // 2                        300
        alloc(3, 5, "opt"),   // 3: optimizer #0          305
    ];
    let (snap, rules) = write(dir.path(), trace, vec![]);
    for command in ["peak", "profile"] {
        let d = &device_json(command, &snap, &rules);
        assert_eq!(d["figures"]["allocated-peak"], 400, "{command}");
        // No time_us: placed by entry alone, in the phase its rule names.
        assert_eq!(
            d["peak-phase"]["allocated-peak"],
            json!({"annotation": "backward", "entry": 1}),
            "{command}"
        );
    }
}
