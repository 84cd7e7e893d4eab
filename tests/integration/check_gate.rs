//! `memgate check`: the exit code CI sees and what it is based on.

use crate::common;

use common::{device, sites, summary, Workdir, CONFIG, MIB};
use predicates::str::contains;

fn verdict_json(w: &Workdir) -> serde_json::Value {
    serde_json::from_str(&w.read("verdict.json")).unwrap()
}

#[test]
fn snapshots_within_budget_and_tolerance_pass_with_exit_0() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 102 * MIB);
    w.rank("rank1", Some(100 * MIB), 100 * MIB);
    w.check().assert().code(0).stdout(contains("memgate: pass"));
}

#[test]
fn a_figure_over_its_budget_fails_the_gate_with_exit_1() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", None, 1200 * MIB);
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(1)
        .stdout(contains(
            "FAIL train rank0 dev0 overall-peak: 1.18 GiB of 1 GiB (118%, over by 184 MiB)",
        ));
    assert_eq!(verdict_json(&w)["verdict"], "fail");
}

#[test]
fn a_figure_that_grows_more_than_the_tolerance_over_its_baseline_exits_1() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 120 * MIB);
    w.check().assert().code(1).stdout(contains(
        "overall-, dynamic-, allocated-peak +20 MiB: 128 MiB of 1 GiB (12%, 896 MiB left); \
         grew +20 MiB (18.5%) over the baseline",
    ));
}

#[test]
fn growth_over_the_tolerance_but_under_the_noise_floor_passes() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(10 * MIB), 13 * MIB);
    w.check().assert().code(0);
}

#[test]
fn shrinking_is_reported_as_good_news() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(200 * MIB), 100 * MIB);
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let v = verdict_json(&w);
    let check = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"][0];
    assert_eq!(check["id"], "dynamic-peak");
    assert_eq!(check["status"], "pass");
    assert_eq!(
        check["findings"],
        serde_json::json!([{
            "kind": "shrank",
            "baseline": 200 * MIB,
            "current": 100 * MIB,
            "shrank": 100 * MIB,
            "percent": 50.0
        }])
    );
}

#[test]
fn warn_only_reports_the_failures_but_exits_0() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 300 * MIB);
    w.check()
        .args(["--warn-only", "--json", "verdict.json"])
        .assert()
        .code(0)
        .stdout(contains(
            "FAIL train rank0 dev0 overall-, dynamic-, allocated-peak",
        ));
    assert_eq!(verdict_json(&w)["verdict"], "fail");
}

#[test]
fn a_warn_level_budget_is_reported_without_failing_the_gate() {
    let w = Workdir::new(CONFIG);
    // reserved-peak = peak + 64 MiB is over its 2 GiB warn-level budget.
    w.rank("rank0", Some(2000 * MIB), 2000 * MIB);
    let w2 = CONFIG
        .replace("overall-peak = \"1 GiB\"", "overall-peak = \"4 GiB\"")
        .replace("activation = \"512 MiB\"", "activation = \"4 GiB\"");
    std::fs::write(w.path("memgate.toml"), w2).unwrap();
    w.check()
        .assert()
        .code(0)
        .stdout(contains("WARN train rank0 dev0 reserved-peak"))
        .stdout(contains("memgate: warn"));
}

#[test]
fn a_snapshot_without_baseline_is_reported_with_a_warning_unless_a_baseline_is_required() {
    let w = Workdir::new(&CONFIG.replace("overall-peak = \"1 GiB\"\n", ""));
    w.rank("rank0", None, 100 * MIB);
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let v = verdict_json(&w);
    assert_eq!(v["counts"]["reported"], 4, "{v:#}");
    assert_eq!(v["counts"]["skipped"], 0, "{v:#}");
    assert_eq!(v["verdict"], "warn", "{v:#}");
    w.check()
        .arg("--require-baseline")
        .assert()
        .code(1)
        .stdout(contains(
            "FAIL train rank0 dev0 baseline: no baseline named \"rank0\" in",
        ));
}

#[test]
fn oom_events_fail_without_a_baseline_because_the_default_budget_is_0() {
    let w = Workdir::new(CONFIG);
    let mut d = device(0, 100 * MIB, &sites(100 * MIB));
    d.figures.oom_events = 2;
    w.write_summary("snaps/rank0.json", &summary("rank0.pickle", vec![d]));
    w.check().assert().code(1).stdout(contains(
        "oom-events: 2 OOM events, more than the 0 allowed by the default budget",
    ));
}

#[test]
fn an_unknown_config_key_exits_2_and_names_file_line_and_column() {
    let w = Workdir::new(&CONFIG.replace("noise-floor", "noise-flor"));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check()
        .args(["--junit", "junit.xml"])
        .assert()
        .code(2)
        .stderr(contains(
            "error: memgate.toml:3:1: unknown key `noise-flor` in [defaults]",
        ));
    // No verdict, but the JUnit report says why the gate could not judge.
    let junit = w.read("junit.xml");
    assert!(junit.contains("could-not-judge"), "{junit}");
    assert!(junit.contains("unknown key `noise-flor`"), "{junit}");
}

#[test]
fn validate_checks_the_budget_file_alone_and_reports_every_problem() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", None, 100 * MIB);
    w.check().arg("--validate").assert().code(0);
    let bad = CONFIG
        .replace("\"5%\"", "5")
        .replace("\"1 GiB\"", "\"1 G\"")
        .replace("activation", "activations");
    std::fs::write(w.path("memgate.toml"), bad).unwrap();
    w.check()
        .arg("--validate")
        .assert()
        .code(2)
        .stderr(contains("memgate.toml:2:13: `defaults.tolerance`: 5 is not a percentage"))
        .stderr(contains("memgate.toml:11:16: `target.budget.overall-peak`: \"1 G\" is ambiguous: write \"1 GiB\" (binary, 1024-based) or \"1 GB\" (SI, 1000-based)"))
        .stderr(contains("memgate.toml:15:1: `target.budget.category.activations`: unknown category"));
}

#[test]
fn a_target_whose_pattern_matches_nothing_is_a_config_error() {
    let w = Workdir::new(CONFIG);
    w.check().assert().code(2).stderr(contains(
        "memgate.toml:7:13: `target.snapshots`: snaps/*.json: the pattern matches no file",
    ));
}

#[test]
fn a_missing_budget_file_exits_2() {
    let w = Workdir::new(CONFIG);
    w.check()
        .args(["--config", "nope.toml"])
        .assert()
        .code(2)
        .stderr(contains("nope.toml"));
}

#[test]
fn snapshots_on_the_command_line_override_the_targets_patterns() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.rank("rank1", Some(100 * MIB), 300 * MIB);
    w.check().arg("snaps/rank0.json").assert().code(0);
    w.check().arg("snaps/rank*.json").assert().code(1);
}

#[test]
fn the_baseline_option_overrides_the_targets_baseline() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 150 * MIB);
    w.check().assert().code(1);
    w.check()
        .args(["--baseline", "snaps/rank0.json"])
        .assert()
        .code(0);
}

#[test]
fn a_key_pattern_matches_snapshots_to_baselines_by_capture() {
    let config = CONFIG.replace(
        "baseline = \"golden/\"",
        "baseline = \"golden/\"\nkey = 'rank_(\\d+)'",
    );
    let w = Workdir::new(&config);
    let s = |p| summary("x", vec![device(0, p, &sites(p))]);
    w.write_summary("snaps/job42_rank_3.json", &s(300 * MIB));
    w.write_summary("golden/rank_3.json", &s(100 * MIB));
    w.check().assert().code(1).stdout(contains(
        "FAIL train 3 dev0 overall-, dynamic-, allocated-peak",
    ));
}

#[test]
fn output_paths_are_checked_before_any_snapshot_is_read() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(w.path("missing"), "").unwrap();
    w.check()
        .args([
            "--junit",
            "missing/junit.xml",
            "--markdown",
            "-",
            "--json",
            "-",
        ])
        .assert()
        .code(2)
        .stderr(contains("only one report can go to stdout"))
        .stderr(contains(
            "--junit missing/junit.xml: its directory cannot be created: missing is not a directory",
        ));
}

#[test]
fn a_truncated_snapshot_is_an_error_while_good_snapshots_get_full_reports() {
    let w = Workdir::new(&CONFIG.replace("snaps/*.json", "snaps/*"));
    w.rank("rank0", Some(100 * MIB), 300 * MIB);
    let pickle = std::fs::read(common::fixture("rank1.pickle")).unwrap();
    std::fs::write(w.path("snaps/rank1.pickle"), &pickle[..pickle.len() / 2]).unwrap();
    w.check()
        .args([
            "--junit",
            "junit.xml",
            "--json",
            "verdict.json",
            "--markdown",
            "report.md",
        ])
        .assert()
        .code(2)
        .stderr(contains("error: target train: "))
        .stderr(contains("rank1.pickle"));
    let junit = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let errors: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("error"))
        .collect();
    assert_eq!(errors.len(), 1);
    assert!(errors[0]
        .attribute("message")
        .unwrap()
        .contains("rank1.pickle"));
    let failures = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    // The three peaks that moved together fail once, the category once.
    assert_eq!(failures, 2, "rank0 is still judged in full:\n{junit}");
    let v = verdict_json(&w);
    assert_eq!(v["verdict"], "error");
    assert_eq!(
        v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    assert!(w.read("report.md").contains("| rank1 | — |"));
}

#[test]
fn eight_ranks_are_all_read_and_judged() {
    let w = Workdir::new(CONFIG);
    for r in 0..8 {
        w.rank(
            &format!("rank{r}"),
            Some(100 * MIB),
            (100 + 10 * (r % 2)) * MIB,
        );
    }
    w.check().args(["--json", "verdict.json"]).assert().code(1);
    let v = verdict_json(&w);
    let snaps = v["targets"][0]["snapshots"].as_array().unwrap();
    let names: Vec<&str> = snaps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["rank0", "rank1", "rank2", "rank3", "rank4", "rank5", "rank6", "rank7"]
    );
    let failed: Vec<&str> = snaps
        .iter()
        .filter(|s| s["status"] == "fail")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["rank1", "rank3", "rank5", "rank7"]);
}

#[test]
fn check_help_documents_the_options_environment_and_exit_codes() {
    let out = common::memgate()
        .args(["check", "--help"])
        .env("COLUMNS", "100")
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    insta::assert_snapshot!("check_help", String::from_utf8(out).unwrap());
}
