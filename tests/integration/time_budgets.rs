//! Budgets on the time structure (docs/figures.md#time-structure): `steady-state-peak`,
//! `leak-per-iteration` and `[target.budget.phase."NAME"]`, against limits
//! and against a baseline summary, on a loop whose figures are worked out
//! by hand.

use crate::common;

use common::Workdir;
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;

/// Four `ProfilerStep#k` iterations, each keeping `leak` bytes and making
/// a `temp` allocation inside a `forward` annotation that it frees again.
/// Live at the start of iteration k: k·leak; its peak: (k+1)·leak + temp;
/// the forward spans peak at the same; the leak fit is `leak`.
fn loop_snapshot(leak: u64, temp: u64) -> Value {
    let mut trace = Vec::new();
    let mut anns = Vec::new();
    let ann = |name: &str, stage: &str, t: u64| json!({"name": name, "stage": stage, "device": 0, "time_us": t});
    for k in 0..4u64 {
        let t = 100 * k;
        let step = format!("ProfilerStep#{k}");
        anns.push(ann(&step, "START", t));
        anns.push(ann("forward", "START", t + 15));
        anns.push(ann("forward", "END", t + 35));
        anns.push(ann(&step, "END", t + 90));
        trace.push(json!({"action": "alloc", "addr": 0x1000 + 0x100 * k, "size": leak, "time_us": t + 10, "frames": []}));
        trace.push(json!({"action": "alloc", "addr": 0x9000, "size": temp, "time_us": t + 20, "frames": []}));
        trace.push(json!({"action": "free_completed", "addr": 0x9000, "size": temp, "time_us": t + 30, "frames": []}));
    }
    json!({"segments": [], "device_traces": [trace], "external_annotations": anns})
}

/// One target over `snaps/*.json`, with `golden/` as its baseline when
/// `baseline`, judging only what `budget` names.
fn config(baseline: bool, budget: &str) -> String {
    let golden = if baseline {
        "baseline = \"golden/\""
    } else {
        ""
    };
    format!(
        r#"[defaults]
tolerance = "5%"
noise-floor = "0 B"
figures = []

[[target]]
name = "loop"
snapshots = "snaps/*.json"
{golden}

{budget}
"#
    )
}

fn write(w: &Workdir, rel: &str, v: &Value) {
    std::fs::write(w.path(rel), serde_json::to_vec(v).unwrap()).unwrap();
}

/// `memgate check --config memgate.toml --json verdict.json` in the workdir.
fn judge(w: &Workdir) -> std::process::Output {
    w.check()
        .args(["--config", "memgate.toml", "--json", "verdict.json"])
        .output()
        .unwrap()
}

fn checks(w: &Workdir) -> Vec<(String, String, u64)> {
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_string(),
                c["status"].as_str().unwrap().to_string(),
                c["current"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn steady_state_leak_and_phase_budgets_are_judged_like_other_figures() {
    let w = Workdir::new(&config(
        false,
        r#"[target.budget]
steady-state-peak = "7 MiB"
leak-per-iteration = "512 KiB"

[target.budget.phase.forward]
allocated-peak = "16 MiB"
dynamic-peak = "7 MiB"
"#,
    ));
    write(&w, "snaps/rank0.json", &loop_snapshot(MIB, 4 * MIB));
    let out = judge(&w);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Steady state: iteration 3 peaks at 4 + 4 MiB; the forward spans peak
    // at the same (allocated and dynamic agree: nothing predates the trace).
    assert_eq!(
        checks(&w),
        [
            ("steady-state-peak".into(), "fail".into(), 8 * MIB),
            ("leak-per-iteration".into(), "fail".into(), MIB),
            // Per phase, in figure order.
            ("phase.forward.dynamic-peak".into(), "fail".into(), 8 * MIB),
            (
                "phase.forward.allocated-peak".into(),
                "pass".into(),
                8 * MIB
            ),
        ]
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("phase.forward.dynamic-peak"), "{text}");
}

#[test]
fn a_leak_that_appears_against_the_baseline_fails_its_growth_check() {
    let w = Workdir::new(&config(
        true,
        r#"[target.tolerance]
leak-per-iteration = "0%"
steady-state-peak = "5%"
"#,
    ));
    write(&w, "base.json", &loop_snapshot(0, 4 * MIB));
    golden_of_base(&w, &[]);
    let golden: Value = serde_json::from_str(&w.read("golden/rank0.json")).unwrap();
    assert_eq!(
        golden["devices"][0]["time"],
        json!({"iterations": 4, "boundary": "ProfilerStep#*:START",
               "steady-state-peak": 4 * MIB, "leak-per-iteration": 0, "leak-residual": 0,
               "phases": {
                   "ProfilerStep#0": {"allocated-peak": 4 * MIB, "dynamic-peak": 4 * MIB},
                   "ProfilerStep#1": {"allocated-peak": 4 * MIB, "dynamic-peak": 4 * MIB},
                   "ProfilerStep#2": {"allocated-peak": 4 * MIB, "dynamic-peak": 4 * MIB},
                   "ProfilerStep#3": {"allocated-peak": 4 * MIB, "dynamic-peak": 4 * MIB},
                   "forward": {"allocated-peak": 4 * MIB, "dynamic-peak": 4 * MIB}}})
    );
    write(&w, "snaps/rank0.json", &loop_snapshot(MIB, 4 * MIB));
    let out = judge(&w);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        checks(&w),
        [
            ("steady-state-peak".into(), "fail".into(), 8 * MIB),
            ("leak-per-iteration".into(), "fail".into(), MIB),
        ]
    );
}

#[test]
fn a_missing_phase_or_too_few_iterations_cannot_be_judged() {
    let w = Workdir::new(&config(
        false,
        r#"[target.budget]
leak-per-iteration = "1 MiB"

[target.budget.phase."Optimizer.step"]
allocated-peak = "1 GiB"
"#,
    ));
    // No annotations at all (an NPU-shaped trace).
    write(
        &w,
        "snaps/rank0.json",
        &json!({"segments": [], "device_traces": [[
            {"action": "alloc", "addr": 16, "size": 512, "frames": []}]]}),
    );
    let out = judge(&w);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    let c = checks(&w);
    assert_eq!(c[0].0, "leak-per-iteration");
    assert_eq!(c[0].1, "error");
    assert_eq!(c[1].0, "phase.Optimizer.step.allocated-peak");
    assert_eq!(c[1].1, "error");
    assert!(
        text.contains("not measured: the trace has 0 iterations (4 needed"),
        "{text}"
    );
    assert!(
        text.contains("no phase \"Optimizer.step\" on this device (it has no annotation spans)"),
        "{text}"
    );
}

#[test]
fn an_unknown_key_in_a_phase_table_is_an_error_at_its_line() {
    let w = Workdir::new(&config(
        false,
        r#"[target.budget.phase.forward]
reserved-peak = "1 GiB"
"#,
    ));
    let out = w
        .check()
        .args(["--config", "memgate.toml", "--validate"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("memgate.toml:12:1: unknown key `reserved-peak` in [target.budget.phase.\"forward\"]; expected one of: allocated-peak, dynamic-peak"),
        "{err}"
    );
}

/// An NPU-shaped trace (no `time_us`, no annotations): five iterations,
/// each loading a 1 MiB batch (`next_batch`), keeping 2 MiB (`forward`) and
/// freeing the batch. With `[iterations] boundary = "next_batch"` an
/// iteration starts at each batch: live at its start k·2 MiB, its peak
/// k·2 + 3 MiB.
fn npu_loop() -> Value {
    let frame = |name: &str| json!([{"name": name, "filename": "train.py", "line": 1}]);
    let mut trace = Vec::new();
    for k in 0..5u64 {
        trace.push(
            json!({"action": "alloc", "addr": 0x100, "size": MIB, "frames": frame("next_batch")}),
        );
        trace.push(json!({"action": "alloc", "addr": 0x1000 + 0x100 * k, "size": 2 * MIB, "frames": frame("forward")}));
        trace.push(json!({"action": "free_completed", "addr": 0x100, "size": MIB, "frames": frame("next_batch")}));
    }
    json!({"segments": [], "device_traces": [trace]})
}

#[test]
fn iterations_from_a_stack_rule_give_npu_traces_a_steady_state_and_a_leak() {
    let w = Workdir::new(&config(
        false,
        r#"[target.budget]
steady-state-peak = "10 MiB"
leak-per-iteration = "3 MiB"
"#,
    ));
    std::fs::write(
        w.path("memgate.toml"),
        w.read("memgate.toml")
            .replace("figures = []", "figures = []\nrules = \"rules.toml\""),
    )
    .unwrap();
    std::fs::write(
        w.path("rules.toml"),
        "[iterations]\nboundary = \"^next_batch$\"\n",
    )
    .unwrap();
    write(&w, "snaps/rank0.json", &npu_loop());
    let out = judge(&w);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Iterations after the first: live 2, 4, 6, 8 MiB (slope 2 MiB); the
    // last peaks at 8 + 1 + 2 MiB.
    assert_eq!(
        checks(&w),
        [
            ("steady-state-peak".into(), "fail".into(), 11 * MIB),
            ("leak-per-iteration".into(), "pass".into(), 2 * MIB),
        ]
    );
    // `memgate phases --rules` lists the same iterations.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memgate"))
        .current_dir(w.tmp.path())
        .args([
            "phases",
            "--format",
            "json",
            "--rules",
            "rules.toml",
            "snaps/rank0.json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let it = &doc["snapshots"][0]["devices"][0]["iterations"];
    assert_eq!(it["boundary"], "stack /^next_batch$/");
    let starts: Vec<u64> = it["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["from-entry"].as_u64().unwrap())
        .collect();
    assert_eq!(starts, [0, 3, 6, 9, 12]);
    assert_eq!(
        it["leak"],
        json!({"bytes-per-iteration": 2 * MIB, "iterations": 4, "residual": 0})
    );
}

/// `memgate summarize base.json --output golden EXTRA…` in the workdir,
/// the summary renamed to the snapshot's name (`rank0`).
fn golden_of_base(w: &Workdir, extra: &[&str]) {
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_memgate"))
        .current_dir(w.tmp.path())
        .args(["summarize", "base.json", "--output", "golden"])
        .args(extra)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::rename(w.path("golden/base.json"), w.path("golden/rank0.json")).unwrap();
}

/// `memgate check` on the workdir's config: exit code and the checks.
fn run_check(w: &Workdir) -> (Option<i32>, Vec<(String, String, u64)>) {
    let out = judge(w);
    (out.status.code(), checks(w))
}

#[test]
fn a_phase_tolerance_judges_that_phases_growth_tighter_than_the_figures() {
    // The forward spans peak at 4·leak + temp: 8 MiB, then 8.5 MiB (+6.25%).
    let tolerances = |phase: &str| {
        format!(
            "[target.tolerance]\nallocated-peak = \"10%\"\n\n\
             [target.tolerance.phase.forward]\nallocated-peak = \"{phase}\"\n"
        )
    };
    let w = Workdir::new(&config(true, &tolerances("2%")));
    write(&w, "base.json", &loop_snapshot(MIB, 4 * MIB));
    golden_of_base(&w, &[]);
    write(
        &w,
        "snaps/rank0.json",
        &loop_snapshot(MIB, 4 * MIB + MIB / 2),
    );
    let (code, checks) = run_check(&w);
    assert_eq!(code, Some(1));
    assert_eq!(
        checks,
        [
            // The whole run's peak grows the same 6.25%: within its 10%.
            ("allocated-peak".into(), "pass".into(), 8 * MIB + MIB / 2),
            // A tolerance alone makes the phase check; its 2% is exceeded.
            (
                "phase.forward.allocated-peak".into(),
                "fail".into(),
                8 * MIB + MIB / 2
            ),
        ]
    );
    std::fs::write(w.path("memgate.toml"), config(true, &tolerances("10%"))).unwrap();
    assert_eq!(run_check(&w).0, Some(0));
}

#[test]
fn a_targets_iteration_boundary_cuts_its_iterations_and_its_baseline_must_match() {
    let budget = |boundary: &str| {
        format!(
            "iteration-boundary = \"{boundary}\"\n\n[target.tolerance]\n\
             steady-state-peak = \"5%\"\n"
        )
    };
    let w = Workdir::new(&config(true, &budget("forward")));
    write(&w, "base.json", &loop_snapshot(MIB, 4 * MIB));
    write(&w, "snaps/rank0.json", &loop_snapshot(MIB, 4 * MIB));
    // A golden cut at the default boundary (ProfilerStep#) is not compared.
    golden_of_base(&w, &[]);
    let (code, checks) = run_check(&w);
    assert_eq!(code, Some(2));
    assert_eq!(checks[0].0, "steady-state-peak");
    assert_eq!(checks[0].1, "error");
    let verdict = w.read("verdict.json");
    assert!(
        verdict.contains("\"kind\": \"boundary-differs\"")
            || verdict.contains("\"kind\":\"boundary-differs\""),
        "{verdict}"
    );
    assert!(verdict.contains("forward*:START"), "{verdict}");
    // Summarized with the same boundary, the run equals its golden.
    golden_of_base(&w, &["--iteration-boundary", "forward"]);
    let (code, checks) = run_check(&w);
    assert_eq!((code, &checks[0].1[..]), (Some(0), "pass"), "{checks:?}");
    // A boundary no annotation starts: no iterations, nothing to judge.
    std::fs::write(w.path("memgate.toml"), config(true, &budget("nothing#"))).unwrap();
    let (code, checks) = run_check(&w);
    assert_eq!((code, &checks[0].1[..]), (Some(2), "error"), "{checks:?}");
}

/// Six `ProfilerStep#k` iterations with a temporary each; iteration 1 also
/// allocates a 50 MiB cache once and keeps it. Live at the start of
/// iterations 1..=5: 0, 50, 50, 50, 50 MiB: a step, not a leak. The
/// least-squares line through them: slope 10 MiB, intercept 20 MiB;
/// residuals -20, 20, 10, 0, -10 MiB, so the RMS residual is √200 MiB.
fn step_change_snapshot() -> Value {
    let mut trace = Vec::new();
    let mut anns = Vec::new();
    let ann = |name: &str, stage: &str, t: u64| json!({"name": name, "stage": stage, "device": 0, "time_us": t});
    for k in 0..6u64 {
        let t = 100 * k;
        let step = format!("ProfilerStep#{k}");
        anns.push(ann(&step, "START", t));
        anns.push(ann(&step, "END", t + 90));
        if k == 1 {
            trace.push(json!({"action": "alloc", "addr": 0x5000, "size": 50 * MIB, "time_us": t + 10, "frames": []}));
        }
        trace.push(json!({"action": "alloc", "addr": 0x9000, "size": MIB, "time_us": t + 20, "frames": []}));
        trace.push(json!({"action": "free_completed", "addr": 0x9000, "size": MIB, "time_us": t + 30, "frames": []}));
    }
    json!({"segments": [], "device_traces": [trace], "external_annotations": anns})
}

/// √200 MiB, rounded to bytes (see [`step_change_snapshot`]).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "about 14.1 MiB: positive and far inside u64"
)]
fn step_change_residual() -> u64 {
    (200f64.sqrt() * MIB as f64).round() as u64
}

#[test]
fn a_one_off_step_after_warm_up_cannot_fail_a_leak_budget() {
    let w = Workdir::new(&config(
        false,
        "[target.budget]\nleak-per-iteration = \"1 MiB\"\n",
    ));
    write(&w, "snaps/rank0.json", &step_change_snapshot());
    let out = w
        .check()
        .args(["--config", "memgate.toml", "--json", "verdict.json"])
        .args(["--markdown", "report.md", "--junit", "junit.xml"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // Not a fail (exit 1), and never a pass: the check is not judged.
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert_eq!(
        checks(&w),
        [("leak-per-iteration".into(), "error".into(), 10 * MIB)]
    );
    let residual = step_change_residual();
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let findings = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"][0]["findings"];
    assert_eq!(
        findings[0],
        json!({"kind": "leak-inconclusive", "slope": 10 * MIB, "residual": residual})
    );
    let shown = "the leak fit's residual 14.14 MiB is larger than its slope 10 MiB per iteration";
    assert!(text.contains(shown), "{text}");
    let md = w.read("report.md");
    assert!(md.contains("| 10 MiB (residual 14.14 MiB) |"), "{md}");
    assert!(md.contains(shown), "{md}");
    let junit = w.read("junit.xml");
    // (XML writes the apostrophe as an entity.)
    assert!(junit.contains(&shown["the leak fit's ".len()..]), "{junit}");
}

#[test]
fn a_leak_check_shows_the_fit_residual_beside_the_figure_where_it_passes_or_fails() {
    // A steady 1 MiB leak: residual 0, so the fit supports the verdict.
    let w = Workdir::new(&config(
        false,
        "[target.budget]\nleak-per-iteration = \"512 KiB\"\n",
    ));
    write(&w, "snaps/rank0.json", &loop_snapshot(MIB, 4 * MIB));
    let out = w
        .check()
        .args(["--config", "memgate.toml", "--json", "verdict.json"])
        .args(["--markdown", "report.md"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("fit residual 0 B"), "{text}");
    assert!(w.read("report.md").contains("| 1 MiB (residual 0 B) |"));
    // The step passes a loose budget, with its residual in JUnit too.
    let w = Workdir::new(&config(
        false,
        "[target.budget]\nleak-per-iteration = \"20 MiB\"\n",
    ));
    write(&w, "snaps/rank0.json", &step_change_snapshot());
    let out = w
        .check()
        .args(["--config", "memgate.toml", "--json", "verdict.json"])
        .args(["--junit", "junit.xml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let c = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"][0];
    assert_eq!(c["status"], "pass");
    let last = c["findings"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        last,
        json!({"kind": "leak-fit", "residual": step_change_residual()})
    );
    assert!(w.read("junit.xml").contains("fit residual 14.14 MiB"));
}
