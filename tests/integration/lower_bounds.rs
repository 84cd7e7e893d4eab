//! A trace whose start the allocator's ring buffer dropped (`max_entries`):
//! its figures are lower bounds, which may fail a budget but never pass
//! one. The snapshot is built here from a whole run, cut where the ring
//! buffer would have wrapped; the test works out both the run's real peak
//! and what the cut trace shows, without memgate.

use crate::common;

use common::Workdir;
use predicates::str::contains;
use serde_json::{json, Value};

const MIB: u64 = 1 << 20;
const BASE: u64 = 0x7f00_0000_0000;
const SEGMENT: u64 = 256 * MIB;

/// One event of the run: `(action, address offset, size)`.
type Event = (&'static str, u64, u64);

/// Parameters (40 MiB, live to the end), a 10 MiB buffer, a 162 MiB
/// activation peak and its free, then (after the cut) the buffer's free
/// and a 59 MiB step.
const RUN: [Event; 7] = [
    ("alloc", 0, 40 * MIB),
    ("alloc", 40 * MIB, 10 * MIB),
    ("alloc", 50 * MIB, 162 * MIB),
    ("free_completed", 50 * MIB, 162 * MIB),
    ("free_completed", 40 * MIB, 10 * MIB),
    ("alloc", 50 * MIB, 59 * MIB),
    ("free_completed", 50 * MIB, 59 * MIB),
];
/// The ring buffer kept the events from here on.
const CUT: usize = 4;

/// The highest sum of live bytes over `events`, starting from `live`.
fn peak(live: u64, events: &[Event]) -> u64 {
    let (mut now, mut top) = (live, live);
    for (action, _, size) in events {
        if *action == "alloc" {
            now += size;
        } else {
            now -= size;
        }
        top = top.max(now);
    }
    top
}

/// The run's real peak, and what the cut trace can show: the bytes live
/// at the cut (allocated before it, not freed before it) carried in.
fn expected() -> (u64, u64) {
    let (before, after) = RUN.split_at(CUT);
    let live_at_cut: u64 = before
        .iter()
        .filter(|(a, addr, _)| {
            *a == "alloc"
                && !before
                    .iter()
                    .any(|(f, at, _)| *f == "free_completed" && at == addr)
        })
        .map(|(_, _, size)| size)
        .sum();
    (peak(0, &RUN), peak(live_at_cut, after))
}

/// The snapshot at dump time: one segment, the parameters still allocated,
/// and only the events after the cut in the trace.
pub(crate) fn wrapped_snapshot() -> Value {
    let frames = json!([{"name": "train_step", "filename": "/w/train.py", "line": 7}]);
    let trace: Vec<Value> = RUN[CUT..]
        .iter()
        .enumerate()
        .map(|(i, (action, off, size))| {
            json!({"action": action, "addr": BASE + off, "size": size, "stream": 0,
                   "time_us": 1_000 + i as u64, "frames": frames})
        })
        .collect();
    let block = |off: u64, size: u64, state: &str| {
        let requested = if state == "inactive" { 0 } else { size };
        json!({"address": BASE + off, "size": size, "requested_size": requested,
               "state": state, "frames": frames})
    };
    json!({
        "segments": [{
            "device": 0, "address": BASE, "total_size": SEGMENT,
            "allocated_size": 40 * MIB, "active_size": 40 * MIB,
            "requested_size": 40 * MIB, "stream": 0, "segment_type": "large",
            "segment_pool_id": [0, 0], "is_expandable": false, "frames": frames,
            "blocks": [
                block(0, 40 * MIB, "active_allocated"),
                block(40 * MIB, SEGMENT - 40 * MIB, "inactive"),
            ],
        }],
        "device_traces": [trace],
    })
}

fn workdir(target: &str) -> Workdir {
    let w = Workdir::new(&format!(
        "[[target]]\nname = \"train\"\nsnapshots = \"snaps/*.json\"\n{target}"
    ));
    std::fs::write(
        w.path("snaps/rank0.json"),
        serde_json::to_string(&wrapped_snapshot()).unwrap(),
    )
    .unwrap();
    w
}

const REPORTS: [&str; 10] = [
    "--markdown",
    "report.md",
    "--junit",
    "junit.xml",
    "--json",
    "verdict.json",
    "--html",
    "page.html",
    "--metrics",
    "metrics.txt",
];

#[test]
fn the_generator_makes_a_212_mib_run_whose_wrapped_trace_shows_99_mib() {
    assert_eq!(expected(), (212 * MIB, 99 * MIB));
}

#[test]
fn a_wrapped_trace_under_its_budget_is_not_judged_in_any_report_with_or_without_require_baseline() {
    let (real, shown) = expected();
    let w = workdir("[target.budget]\nallocated-peak = \"208 MiB\"\n");
    for require in [false, true] {
        let mut cmd = w.check();
        cmd.args(REPORTS);
        if require {
            cmd.arg("--require-baseline");
        }
        cmd.assert().code(2).stdout(contains(
            "ERROR train rank0 dev0 allocated-peak: not judged: the trace started mid-run",
        ));
        let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
        assert_eq!(v["verdict"], "error");
        let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
        let c = checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "allocated-peak")
            .unwrap();
        assert_eq!(c["status"], "error");
        assert_eq!(c["current"], shown);
        assert!(real > 208 * MIB && shown < 208 * MIB);
        assert_eq!(
            c["findings"][0],
            json!({"kind": "lower-bound", "current": true, "baseline": false, "judged": false})
        );
        // Markdown writes the sentence's code as a code span, as the others.
        for (file, fix) in [
            ("report.md", "larger `max_entries`"),
            ("junit.xml", "larger `max_entries`"),
            ("page.html", "larger `max_entries`"),
        ] {
            let text = w.read(file);
            assert!(text.contains(fix), "{file}:\n{text}");
            assert!(text.contains("accept-lower-bounds = true"), "{file}");
            assert!(
                text.contains("not judged: the trace started mid-run"),
                "{file}"
            );
        }
        let metrics = w.read("metrics.txt");
        assert!(metrics.contains("memgate_verdict{memgate_verdict=\"error\"} 1"));
        assert!(metrics.contains("max_entries"), "{metrics}");
        assert!(metrics.contains(
            "memgate_lower_bound{target=\"train\",snapshot=\"rank0\",device=\"0\",\
             figure=\"allocated-peak\"} 1"
        ));
    }
}

#[test]
fn a_wrapped_trace_over_its_budget_fails_since_the_real_peak_is_at_least_that() {
    let w = workdir("[target.budget]\nallocated-peak = \"90 MiB\"\n");
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(2)
        .stdout(contains(
            "FAIL train rank0 dev0 allocated-peak: the trace started mid-run, so the figure \
             is only a lower bound; 99 MiB of 90 MiB (110%, over by 9 MiB)",
        ));
    // Only the OOM count (a lower bound of 0) is what keeps the gate from
    // judging; asked for the peak alone, the gate fails.
    let w = workdir("[target.budget]\nallocated-peak = \"90 MiB\"\n");
    std::fs::write(
        w.path("memgate.toml"),
        "[defaults]\nfigures = [\"allocated-peak\"]\n\
         [[target]]\nname = \"train\"\nsnapshots = \"snaps/*.json\"\n\
         [target.budget]\nallocated-peak = \"90 MiB\"\n",
    )
    .unwrap();
    w.check().assert().code(1);
}

#[test]
fn accept_lower_bounds_judges_a_wrapped_trace_as_it_is_and_says_so() {
    let w = workdir("accept-lower-bounds = true\n[target.budget]\nallocated-peak = \"208 MiB\"\n");
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let judged = checks
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] != "reported");
    for c in judged {
        assert_eq!(c["status"], "pass", "{c}");
        assert_eq!(c["findings"][0]["kind"], "lower-bound", "{c}");
        assert_eq!(c["findings"][0]["judged"], true, "{c}");
    }
}

#[test]
fn the_reserved_peak_of_a_wrapped_trace_is_exact_and_judged() {
    let w = workdir("[target.budget]\nreserved-peak = \"300 MiB\"\n");
    std::fs::write(
        w.path("memgate.toml"),
        "[defaults]\nfigures = [\"reserved-peak\"]\n\
         [[target]]\nname = \"train\"\nsnapshots = \"snaps/*.json\"\n\
         [target.budget]\nreserved-peak = \"300 MiB\"\n",
    )
    .unwrap();
    w.check().assert().code(0);
}

#[test]
fn warn_only_does_not_turn_a_check_that_was_not_judged_green() {
    let w = workdir("[target.budget]\nallocated-peak = \"208 MiB\"\n");
    w.check().arg("--warn-only").assert().code(2);
}

/// What every command and report says of a trace that started mid-run.
const SAID: &str =
    "the trace started mid-run (ring buffer wrapped), so its figures are lower bounds";

#[test]
fn every_command_and_report_says_the_figures_are_lower_bounds() {
    let w = workdir("accept-lower-bounds = true\n[target.budget]\nallocated-peak = \"208 MiB\"\n");
    let out = w
        .check()
        .args(REPORTS)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(&format!("note: train rank0 dev0: {SAID}")),
        "{stdout}"
    );
    for report in ["report.md", "junit.xml", "page.html"] {
        assert!(
            w.read(report).contains(SAID),
            "{report}:\n{}",
            w.read(report)
        );
    }
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let dev = &v["targets"][0]["snapshots"][0]["devices"][0];
    assert_eq!(dev["trace-complete"], false, "the JSON carries it as data");
    let snap = w.path("snaps/rank0.json");
    for args in [vec!["peak"], vec!["profile"], vec!["phases"], vec!["diff"]] {
        let mut cmd = common::memgate();
        cmd.args(&args).arg(&snap);
        if args == ["diff"] {
            cmd.arg(&snap);
        }
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let said = if args == ["peak"] {
            "trace incomplete (started mid-run)"
        } else {
            SAID
        };
        assert!(text.contains(said), "{args:?}:\n{text}");
    }
}

#[test]
fn the_dashboards_leave_out_a_lower_bound_and_keep_the_exact_figures() {
    let w = workdir("[target.budget]\nallocated-peak = \"1 GiB\"\nreserved-peak = \"1 GiB\"\n");
    w.check()
        .args(["--json", "verdict.json", "--bencher", "bmf.json"])
        .args(["--benchmark-json", "bench.json"])
        .assert()
        .code(2);
    let verdict: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let checks = &verdict["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let bounded = |id: &str| {
        let c = checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap();
        c["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["kind"] == "lower-bound" && f["current"] == true)
    };
    assert!(bounded("allocated-peak"), "{checks}");
    assert!(!bounded("reserved-peak"), "{checks}");
    let bmf: Value = serde_json::from_str(&w.read("bmf.json")).unwrap();
    assert!(
        bmf.get("train/rank0/device0/allocated-peak").is_none(),
        "{bmf}"
    );
    assert!(
        bmf.get("train/rank0/device0/reserved-peak").is_some(),
        "{bmf}"
    );
    let bench = w.read("bench.json");
    assert!(!bench.contains("/allocated-peak\""), "{bench}");
    assert!(
        bench.contains("train/rank0/device0/reserved-peak"),
        "{bench}"
    );
}
