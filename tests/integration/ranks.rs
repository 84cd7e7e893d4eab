//! Figures across a target's ranks (docs/ranks.md): the 8-rank job of
//! `tests/fixtures/ranks/` (`generate.py --ranks`: rank6 20% heavier than
//! rank0), judged from snapshots and from summaries alone, against the
//! figures the generator computed from `reference.py` (`expected.json`).

use std::path::{Path, PathBuf};

use crate::common::{fixture, memgate, Workdir};
use serde_json::Value;

pub(crate) fn ranks_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ranks")
}

pub(crate) fn expected() -> Value {
    let text = std::fs::read_to_string(ranks_dir().join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// One target over `snaps`, against `golden` (both relative to the
/// work directory), with `ranks` as its `[target.ranks]` table. Growth over
/// the baseline is tolerated, so only the rank checks can fail.
pub(crate) fn config(snaps: &str, golden: &str, ranks: &str) -> String {
    format!(
        r#"[defaults]
tolerance = "100%"

[[target]]
name = "job"
snapshots = "{snaps}"
baseline = "{golden}"

[target.ranks]
{ranks}
"#
    )
}

pub(crate) const STAGED: &str = r#"imbalance = "15%"
stage-imbalance = "15%"
stages = { first = ["rank0", "rank1", "rank2", "rank3"], last = "^rank[4-7]$" }
"#;

/// `memgate summarize` of `from/*.pickle` into `to`.
pub(crate) fn summarize(w: &Workdir, from: &Path, to: &str) {
    let files: Vec<PathBuf> = (0..8)
        .map(|k| from.join(format!("rank{k}.pickle")))
        .collect();
    memgate()
        .arg("summarize")
        .arg("-o")
        .arg(w.path(to))
        .args(&files)
        .assert()
        .success();
}

/// Runs `check` with every report; returns (exit code, terminal, JSON,
/// JUnit, Markdown).
fn run(w: &Workdir) -> (i32, String, Value, String, String) {
    let out = w
        .check()
        .args(["--json", "v.json", "--junit", "v.xml", "--markdown", "v.md"])
        .args(["--metrics", "v.txt"])
        .output()
        .unwrap();
    let json = serde_json::from_str(&w.read("v.json")).unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        json,
        w.read("v.xml"),
        w.read("v.md"),
    )
}

fn rank_check<'a>(v: &'a Value, id: &str) -> &'a Value {
    let checks = v["targets"][0]["ranks"]["checks"].as_array().unwrap();
    checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {checks:#?}"))
}

fn group<'a>(v: &'a Value, stage: Option<&str>, figure: &str) -> &'a Value {
    let groups = v["targets"][0]["ranks"]["groups"].as_array().unwrap();
    groups
        .iter()
        .find(|g| g["figure"] == figure && g["stage"].as_str() == stage)
        .unwrap_or_else(|| panic!("no group {stage:?} {figure}"))
}

/// Every figure of a group equals the generator's: integers exactly, the
/// mean and imbalance to a relative 1e-12.
fn assert_group(got: &Value, want: &Value) {
    for k in ["ranks", "max", "min", "spread", "heaviest", "lightest"] {
        assert_eq!(got[k], want[k], "{k}: {got} vs {want}");
    }
    for k in ["mean", "imbalance"] {
        let (g, w) = (got[k].as_f64().unwrap(), want[k].as_f64().unwrap());
        assert!((g - w).abs() <= 1e-12 * w.abs().max(1.0), "{k}: {g} vs {w}");
    }
}

/// The verdict of the staged budget: rank6 fails the 15% limit by name,
/// every group's figures are the generator's, every report says so.
fn assert_rank6_fails(code: i32, term: &str, v: &Value, junit: &str, md: &str) {
    let e = expected();
    assert_eq!(code, 1, "{term}");
    for f in ["allocated-peak", "reserved-peak"] {
        assert_group(group(v, None, f), &e["run"]["all"][f]);
        for stage in ["first", "last"] {
            assert_group(group(v, Some(stage), f), &e["run"]["stage"][stage][f]);
        }
    }
    let c = rank_check(v, "ranks.allocated-peak.imbalance");
    assert_eq!(c["status"], "fail");
    assert_eq!(c["findings"][0]["kind"], "rank-imbalance");
    assert_eq!(c["findings"][0]["heaviest"], "rank6");
    assert_eq!(c["current"], e["run"]["all"]["allocated-peak"]["max"]);
    // Within its stage, rank6 is 13.2% over the mean: under 15%.
    let last = rank_check(v, "ranks.stage.last.allocated-peak.imbalance");
    assert_eq!(last["status"], "pass");
    assert!(
        e["run"]["stage"]["last"]["allocated-peak"]["imbalance"]
            .as_f64()
            .unwrap()
            < 15.0
    );
    assert_eq!(v["targets"][0]["ranks"]["status"], "fail");
    assert_eq!(v["verdict"], "fail");
    assert!(
        term.contains("FAIL job ranks ranks.allocated-peak.imbalance: heaviest rank rank6 at 1.41 GiB is 16.1% above the mean of 8 ranks"),
        "{term}"
    );
    assert!(junit.contains("ranks.allocated-peak.imbalance"), "{junit}");
    assert!(junit.contains("memory-imbalance"), "{junit}");
    assert!(
        md.contains("| ranks | `ranks.allocated-peak.imbalance` |"),
        "{md}"
    );
    assert!(
        md.contains("| rank6 | last | 1.41 GiB | 1.41 GiB | +16.1% ████████████████████ |"),
        "{md}"
    );
    assert!(
        md.contains("| all | allocated-peak | 8 | 1.41 GiB | rank6 |"),
        "{md}"
    );
}

#[test]
fn rank6_fails_the_imbalance_limit_by_name_from_snapshots() {
    let dir = ranks_dir();
    let snaps = format!("{}/*.pickle", dir.join("run").display());
    let golden = format!("{}/", dir.join("baseline").display());
    let w = Workdir::new(&config(&snaps, &golden, STAGED));
    let (code, term, v, junit, md) = run(&w);
    assert_rank6_fails(code, &term, &v, &junit, &md);
    assert_metrics(&w);
    let present = rank_check(&v, "ranks.present");
    assert_eq!(present["status"], "pass");
}

#[test]
fn rank6_fails_the_imbalance_limit_by_name_from_summaries_alone() {
    let w = Workdir::new(&config("sums/*.json", "golden/", STAGED));
    summarize(&w, &ranks_dir().join("run"), "sums");
    summarize(&w, &ranks_dir().join("baseline"), "golden");
    let (code, term, v, junit, md) = run(&w);
    assert_rank6_fails(code, &term, &v, &junit, &md);
}

#[test]
fn a_rank_of_the_baseline_missing_from_the_run_fails_by_name() {
    let w = Workdir::new(&config("sums/*.json", "golden/", "imbalance = \"20%\"\n"));
    summarize(&w, &ranks_dir().join("run"), "sums");
    summarize(&w, &ranks_dir().join("baseline"), "golden");
    std::fs::remove_file(w.path("sums/rank7.json")).unwrap();
    let (code, term, v, junit, md) = run(&w);
    assert_eq!(code, 1, "{term}");
    let present = rank_check(&v, "ranks.present");
    assert_eq!(present["status"], "fail");
    assert_eq!(present["findings"][0]["kind"], "rank-missing");
    assert_eq!(present["findings"][0]["rank"], "rank7");
    assert!(
        term.contains("FAIL job ranks ranks.present: rank rank7 is in the baseline"),
        "{term}"
    );
    assert!(junit.contains("rank rank7 is in the baseline"), "{junit}");
    assert!(md.contains("rank rank7 is in the baseline"), "{md}");
    // The seven ranks left are within 20%: that check passes, on seven.
    let c = rank_check(&v, "ranks.allocated-peak.imbalance");
    assert_eq!(c["status"], "pass");
    assert_eq!(c["findings"][0]["ranks"], 7);
}

#[test]
fn a_limit_the_heaviest_rank_stays_under_passes_and_one_it_crosses_fails() {
    let e = expected();
    let max = e["run"]["all"]["reserved-peak"]["max"].as_u64().unwrap();
    for (limit, status, code) in [(max, "pass", 0), (max - 1, "fail", 1)] {
        let ranks = format!("figures = [\"reserved-peak\"]\nheaviest = \"{limit} B\"\n");
        let w = Workdir::new(&config("sums/*.json", "golden/", &ranks));
        summarize(&w, &ranks_dir().join("run"), "sums");
        summarize(&w, &ranks_dir().join("baseline"), "golden");
        let (got, term, v, _, _) = run(&w);
        assert_eq!(got, code, "{term}");
        let c = rank_check(&v, "ranks.reserved-peak.heaviest");
        assert_eq!(c["status"], status);
        assert_eq!(c["findings"][0]["rank"], "rank6");
        assert!(v["targets"][0]["ranks"]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["id"] != "ranks.allocated-peak.imbalance"));
    }
}

/// The bundled two ranks (the synthetic `rank0`/`rank1` fixtures): their
/// figures across ranks from the generator's `expected.json`.
#[test]
fn the_bundled_two_ranks_match_the_generators_figures() {
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    let e: Value = serde_json::from_str(&text).unwrap();
    let peak = |n: &str| {
        e[n]["devices"][0]["figures"]["allocated-peak"]
            .as_u64()
            .unwrap()
    };
    let (a, b) = (peak("rank0.pickle"), peak("rank1.pickle"));
    let w = Workdir::new(&config(
        &format!("{}/rank[01].pickle", fixture("").display()),
        "golden/",
        "imbalance = \"50%\"",
    ));
    let (code, term, v, _, _) = run(&w);
    assert_eq!(code, 0, "{term}");
    let g = group(&v, None, "allocated-peak");
    let mean = (a + b) as f64 / 2.0;
    assert_eq!(g["max"], a.max(b));
    assert_eq!(g["min"], a.min(b));
    assert_eq!(g["spread"], a.abs_diff(b));
    assert_eq!(g["heaviest"], if b > a { "rank1" } else { "rank0" });
    let imb = (a.max(b) as f64 - mean) * 100.0 / mean;
    assert!((g["imbalance"].as_f64().unwrap() - imb).abs() < 1e-9);
}

#[test]
fn rank_names_are_escaped_in_the_markdown_table() {
    let w = Workdir::new(&config("sums/*.json", "golden/", "imbalance = \"50%\""));
    summarize(&w, &ranks_dir().join("run"), "sums");
    summarize(&w, &ranks_dir().join("baseline"), "golden");
    std::fs::rename(w.path("sums/rank7.json"), w.path("sums/r|<b>x.json")).unwrap();
    let (_, _, v, _, md) = run(&w);
    let names: Vec<&str> = v["targets"][0]["ranks"]["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rank"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"r|<b>x"), "{names:?}");
    assert!(!md.contains("r|<b>x"), "{md}");
    assert!(!md.contains("<b>x"), "{md}");
}

/// The metrics report has the rank checks' values under `snapshot="ranks"`.
fn assert_metrics(w: &Workdir) {
    let max = expected()["run"]["all"]["allocated-peak"]["max"].clone();
    let line = format!(
        "memgate_figure_bytes{{target=\"job\",snapshot=\"ranks\",device=\"all\",figure=\"ranks.allocated-peak.imbalance\"}} {max}"
    );
    let text = w.read("v.txt");
    assert!(text.contains(&line), "{line}\nnot in\n{text}");
}
