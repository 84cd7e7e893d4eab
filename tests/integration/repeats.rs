//! Repeated runs of one rank (docs/gate.md#repeated-runs): several
//! snapshots with one key folded into one value per figure, judged at the
//! target's statistic, with the spread printed beside the tolerance; and
//! the reserved peak only warning by default (docs/gate.md#noise). The
//! expected figures are the generator's own: each run's peak below.

use crate::common::{self, Workdir, MIB};

/// Judges the dynamic peak only: its value is each run's peak as written.
const REPEATS: &str = r#"[defaults]
tolerance = "5%"
noise-floor = "1 MiB"
figures = ["dynamic-peak"]

[[target]]
name = "train"
snapshots = "snaps/*.json"
baseline = "golden/"
key = '(rank\d+)'
"#;

/// `snaps/rank0.runN.json` at each of `peaks` MiB, `golden/rank0.json` at
/// `base` MiB.
fn runs(config: &str, base: u64, peaks: &[u64]) -> Workdir {
    let w = Workdir::new(config);
    for (i, p) in peaks.iter().enumerate() {
        let peak = p * MIB;
        let s = common::summary(
            "rank0.pickle",
            vec![common::device(0, peak, &common::sites(peak))],
        );
        w.write_summary(&format!("snaps/rank0.run{i}.json"), &s);
    }
    let b = base * MIB;
    let s = common::summary(
        "rank0.pickle",
        vec![common::device(0, b, &common::sites(b))],
    );
    w.write_summary("golden/rank0.json", &s);
    w
}

fn stdout(w: &Workdir, code: i32, args: &[&str]) -> String {
    let out = w
        .check()
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).unwrap()
}

fn dynamic_check(v: &serde_json::Value) -> &serde_json::Value {
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap();
    checks.iter().find(|c| c["id"] == "dynamic-peak").unwrap()
}

fn repeats_finding(c: &serde_json::Value) -> &serde_json::Value {
    let findings = c["findings"].as_array().unwrap();
    findings.iter().find(|f| f["kind"] == "repeats").unwrap()
}

#[test]
fn five_repeats_of_a_rank_with_a_three_percent_spread_pass_under_five_percent_and_print_it() {
    // Spread (1015 - 985) / 1000 = 3.0%; the median equals the baseline.
    let w = runs(REPEATS, 1000, &[1000, 985, 1015, 990, 1005]);
    let out = stdout(&w, 0, &["--json", "v.json"]);
    assert!(
        out.contains("5 runs, widest spread 3.0% (dynamic-peak, tolerance 5%)"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(v["verdict"], "pass");
    // One name judged, not five.
    assert_eq!(v["targets"][0]["snapshots"].as_array().unwrap().len(), 1);
    let c = dynamic_check(&v);
    assert_eq!(c["status"], "pass");
    assert_eq!(c["current"], 1000 * MIB);
    let r = repeats_finding(c);
    assert_eq!(r["runs"], 5);
    assert_eq!(r["min"], 985 * MIB);
    assert_eq!(r["median"], 1000 * MIB);
    assert_eq!(r["max"], 1015 * MIB);
    assert_eq!(r["statistic"], "median");
    assert_eq!(r["spread"], 3.0);
    assert_eq!(r["tolerance"], 5.0);
    assert_eq!(r["wider"], false);
}

#[test]
fn a_repeat_set_whose_median_grew_eight_percent_fails() {
    // Median 1080 MiB against 1000: +8% past the 5% tolerance.
    let w = runs(REPEATS, 1000, &[1090, 1070, 1080, 1075, 1085]);
    let out = stdout(&w, 1, &["--json", "v.json"]);
    let line = out.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(line.contains("dynamic-peak"), "{line}");
    assert!(line.contains("(8.0%)"), "{line}");
    assert!(
        line.contains("5 runs, median judged: min 1.04 GiB, median 1.05 GiB, max 1.06 GiB; spread 1.9% (tolerance 5%)"),
        "{line}"
    );
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(dynamic_check(&v)["current"], 1080 * MIB);
}

#[test]
fn one_outlier_run_moves_the_max_not_the_median_and_its_spread_warns() {
    let peaks = [1000, 1000, 1000, 1000, 1200];
    let w = runs(REPEATS, 1000, &peaks);
    let out = stdout(&w, 0, &[]);
    let line = out.lines().find(|l| l.starts_with("WARN")).unwrap();
    assert!(line.contains("spread 20.0% (tolerance 5%)"), "{line}");
    assert!(line.contains("differ by more than the tolerance"), "{line}");
    // The target that judges the worst run fails on it.
    let max = REPEATS.replace(
        "key = '(rank\\d+)'",
        "key = '(rank\\d+)'\nstatistic = \"max\"",
    );
    assert!(max.contains("statistic = \"max\""));
    let w = runs(&max, 1000, &peaks);
    let out = stdout(&w, 1, &[]);
    let line = out.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(line.contains("(20.0%)"), "{line}");
}

#[test]
fn repeats_that_hold_other_devices_are_not_judged_and_name_both_files() {
    let w = runs(REPEATS, 1000, &[1000, 1000]);
    let two = common::summary(
        "rank0.pickle",
        vec![
            common::device(0, 1000 * MIB, &common::sites(1000 * MIB)),
            common::device(1, 1000 * MIB, &common::sites(1000 * MIB)),
        ],
    );
    w.write_summary("snaps/rank0.run1.json", &two);
    let out = w.check().assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("the repeated runs of this name hold different devices"),
        "{err}"
    );
    assert!(err.contains("rank0.run0.json holds dev0"), "{err}");
    assert!(err.contains("rank0.run1.json holds dev0, dev1"), "{err}");
}

#[test]
fn an_unknown_statistic_is_an_error_naming_the_choices() {
    let bad = REPEATS.replace(
        "key = '(rank\\d+)'",
        "key = '(rank\\d+)'\nstatistic = \"mean\"",
    );
    let w = runs(&bad, 1000, &[1000]);
    let out = w.check().assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("`target.statistic`: must be one of median, min, max, not \"mean\""),
        "{err}"
    );
}

#[test]
fn reserved_peak_growth_only_warns_by_default_and_fails_when_the_target_sets_its_tolerance() {
    // Every figure derives from the peak: +10% moves the reserved peak too.
    let only_reserved = REPEATS.replace("[\"dynamic-peak\"]", "[\"reserved-peak\"]");
    let w = runs(&only_reserved, 1000, &[1100]);
    let out = stdout(&w, 0, &[]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("WARN") && l.contains("reserved-peak")),
        "{out}"
    );
    let set = format!("{only_reserved}\n[target.tolerance]\nreserved-peak = \"5%\"\n");
    let w = runs(&set, 1000, &[1100]);
    stdout(&w, 1, &[]);
}

/// The fixture generator's own figure for a synthetic snapshot's device 0.
fn expected(file: &str, figure: &str) -> u64 {
    let text = std::fs::read_to_string(common::fixture("expected.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v[file]["devices"][0]["figures"][figure].as_u64().unwrap()
}

#[test]
fn a_summary_of_repeated_runs_keeps_each_figures_spread_and_check_prints_it() {
    let w = Workdir::new(REPEATS);
    // Three runs of rank0: one as recorded, two regressed.
    for (dir, file) in [
        ("a", "rank0"),
        ("b", "rank0_regressed"),
        ("c", "rank0_regressed"),
    ] {
        std::fs::create_dir(w.path(dir)).unwrap();
        let from = common::fixture(&format!("{file}.pickle"));
        std::fs::copy(from, w.path(&format!("{dir}/rank0.pickle"))).unwrap();
    }
    let runs = ["a/rank0.pickle", "b/rank0.pickle", "c/rank0.pickle"];
    let out = common::memgate()
        .current_dir(w.tmp.path())
        .args(["summarize", "-o", "sum"])
        .args(runs)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("or pass --repeats if they are repeated runs"),
        "{err}"
    );
    common::memgate()
        .current_dir(w.tmp.path())
        .args(["summarize", "--repeats", "-o", "sum"])
        .args(runs)
        .assert()
        .code(0);
    let s: serde_json::Value = serde_json::from_str(&w.read("sum/rank0.json")).unwrap();
    let d = &s["devices"][0];
    let (low, high) = (
        expected("rank0.pickle", "allocated-peak"),
        expected("rank0_regressed.pickle", "allocated-peak"),
    );
    assert!(low < high);
    assert_eq!(d["figures"]["allocated-peak"], high);
    let spread = &d["spreads"]["allocated-peak"];
    assert_eq!(spread["runs"], 3);
    assert_eq!(spread["min"], low);
    assert_eq!(spread["median"], high);
    assert_eq!(spread["max"], high);
    assert_eq!(spread["statistic"], "median");
    // Judged as the current run, the summary says its runs.
    let config = "[defaults]\nfigures = [\"allocated-peak\"]\n[[target]]\nname = \"train\"\n\
                  snapshots = \"sum/*.json\"\n[target.budget]\nallocated-peak = \"1 GiB\"\n";
    std::fs::write(w.path("memgate.toml"), config).unwrap();
    let out = stdout(&w, 0, &["--json", "v.json"]);
    assert!(out.contains("3 runs, widest spread"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    let checks = v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap();
    let c = checks.iter().find(|c| c["id"] == "allocated-peak").unwrap();
    assert_eq!(repeats_finding(c)["min"], low);
}
