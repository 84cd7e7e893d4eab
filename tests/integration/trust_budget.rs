//! Issue 11, the budget side of a verdict people can trust: report-only
//! figures, one failure per regression, snapshots without a trace, and
//! budget or rules files that would hang or hide where they are wrong.

use crate::common;

use std::time::{Duration, Instant};

use common::{Workdir, MIB};
use predicates::str::contains;

/// One target over `snaps/*.json` against `golden/`, with `budget` as its
/// `[target.budget]` lines and `defaults` as its `[defaults]` lines.
fn config(defaults: &str, target: &str, budget: &str) -> String {
    format!(
        "[defaults]\n{defaults}\n[[target]]\nname = \"train\"\nsnapshots = \"snaps/*.json\"\n\
         baseline = \"golden/\"\n{target}\n[target.budget]\n{budget}\n"
    )
}

fn verdict(w: &Workdir) -> serde_json::Value {
    serde_json::from_str(&w.read("verdict.json")).unwrap()
}

#[test]
fn a_warn_level_budget_makes_the_figure_report_only_growth_included() {
    let warn = |f: &str| format!("{f} = {{ limit = \"4 GiB\", level = \"warn\" }}\n");
    let budget: String = [
        "dynamic-peak",
        "overall-peak",
        "allocated-peak",
        "reserved-peak",
    ]
    .iter()
    .map(|f| warn(f))
    .collect();
    let w = Workdir::new(&config("", "", &budget));
    // Doubled over the golden, far within every budget.
    w.rank("rank0", Some(100 * MIB), 200 * MIB);
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(0)
        .stdout(contains(
            "WARN train rank0 dev0 dynamic-, overall-, allocated-, reserved-peak +100 MiB: \
             200 MiB of 4 GiB (5%, 3.80 GiB left); grew +100 MiB",
        ));
    let v = verdict(&w);
    assert_eq!(v["verdict"], "warn");
    assert_eq!(v["counts"]["fail"], 0);
}

#[test]
fn defaults_figures_has_one_regression_fail_once_per_rank() {
    let w = Workdir::new(&config("figures = [\"allocated-peak\"]", "", ""));
    w.rank("rank0", Some(100 * MIB), 200 * MIB);
    w.rank("rank1", Some(100 * MIB), 200 * MIB);
    w.check().args(["--json", "verdict.json"]).assert().code(1);
    let v = verdict(&w);
    assert_eq!(v["counts"]["fail"], 2, "one failure per rank");
    let ids: Vec<&str> = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["allocated-peak"]);
}

#[test]
fn an_unknown_figure_in_defaults_figures_is_an_error_at_its_position() {
    let w = Workdir::new(&config("figures = [\"allocated-peak\", \"peak\"]", "", ""));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check().assert().code(2).stderr(contains(
        "memgate.toml:2:30: `defaults.figures`: unknown figure `peak`",
    ));
}

/// A snapshot with one segment and an active block but no trace entry:
/// what a dump with history recording off holds.
const NO_TRACE: &str = r#"{"segments": [{"device": 0, "address": 0, "total_size": 4194304,
  "stream": 0, "segment_type": "large", "frames": [],
  "blocks": [{"size": 2097152, "state": "active_allocated", "requested_size": 2097152,
              "frames": []},
             {"size": 2097152, "state": "inactive", "frames": []}]}],
 "device_traces": [[]]}"#;

#[test]
fn a_snapshot_without_a_trace_fails_its_trace_based_checks_by_default() {
    let w = Workdir::new(&config(
        "",
        "",
        "allocated-peak = \"1 GiB\"\nreserved-peak = \"1 GiB\"",
    ));
    std::fs::write(w.path("snaps/rank0.json"), NO_TRACE).unwrap();
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(1)
        .stdout(contains(
        "FAIL train rank0 dev0 allocated-peak: no allocation trace: figures are the state at dump time",
    ));
    let v = verdict(&w);
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap()
        .clone();
    let status = |id: &str| {
        let c = checks.iter().find(|c| c["id"] == id).unwrap();
        (
            c["status"].as_str().unwrap().to_string(),
            c["findings"].to_string(),
        )
    };
    let (s, findings) = status("allocated-peak");
    assert_eq!(s, "fail");
    assert!(findings.contains(r#""kind":"no-trace""#), "{findings}");
    // A dump-time fact of the segments is judged as usual.
    assert_eq!(status("reserved-peak").0, "pass");
}

#[test]
fn require_trace_false_judges_a_snapshot_without_a_trace_on_its_dump_time_numbers() {
    let w = Workdir::new(&config(
        "figures = [\"allocated-peak\", \"reserved-peak\"]",
        "require-trace = false",
        "allocated-peak = \"1 GiB\"\nreserved-peak = \"1 GiB\"",
    ));
    std::fs::write(w.path("snaps/rank0.json"), NO_TRACE).unwrap();
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let v = verdict(&w);
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap();
    let check = checks.iter().find(|c| c["id"] == "allocated-peak").unwrap();
    assert_eq!(check["status"], "pass");
    assert_eq!(check["current"], 2 * MIB);
    assert_eq!(check["findings"][1]["kind"], "no-trace");
    assert_eq!(check["findings"][1]["judged"], true);
}

#[test]
fn a_fifo_as_the_budget_file_is_refused_within_a_second() {
    let w = Workdir::new("");
    common::mkfifo(&w.path("pipe.toml"));
    let start = Instant::now();
    w.check()
        .args(["--config", "pipe.toml"])
        .timeout(Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains(
            "pipe.toml: is a FIFO (named pipe), not a regular file",
        ));
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn dev_zero_as_the_budget_file_is_refused_unread() {
    let w = Workdir::new("");
    w.check()
        .args(["--config", "/dev/zero"])
        .timeout(Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains(
            "/dev/zero: is a character device, not a regular file",
        ));
}

#[test]
fn a_fifo_nobody_writes_as_the_rules_file_is_refused_at_once() {
    let w = Workdir::new(&config("rules = \"rules.toml\"", "", ""));
    common::mkfifo(&w.path("rules.toml"));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check()
        .timeout(Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains("`defaults.rules`"));
    let snapshot = common::fixture("rank0.pickle");
    let mut peak = common::memgate();
    peak.current_dir(w.tmp.path())
        .args(["peak", "--rules", "rules.toml"])
        .arg(&snapshot)
        .timeout(Duration::from_secs(5))
        .assert()
        .code(2)
        .stderr(contains(
            "rules.toml: cannot read the rules file: is a pipe that gave no bytes",
        ));
}

#[test]
fn a_budget_file_that_is_not_utf8_names_the_line_and_column_of_the_bad_byte() {
    let w = Workdir::new("");
    std::fs::write(w.path("memgate.toml"), b"[[target]]\nname = \"tr\xe9in\"\n").unwrap();
    w.check()
        .assert()
        .code(2)
        .stderr(contains("memgate.toml:2:11: not UTF-8: byte 0xe9"));
}

#[test]
fn a_device_index_past_the_largest_says_the_real_limit() {
    let w = Workdir::new(&config("", "device = 99999999999", ""));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check()
        .assert()
        .code(2)
        .stderr(contains("an integer from 0 to 4294967295"));
}
