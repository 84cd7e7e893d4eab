//! `memgate check` and its baselines: no silent choice, every entry
//! accounted for (issue 11). Each test fails on the gate as it was before.

use crate::common;

use common::{device, sites, summary, Workdir, CONFIG, MIB};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

fn verdict_json(w: &Workdir) -> serde_json::Value {
    serde_json::from_str(&w.read("verdict.json")).unwrap()
}

/// [`CONFIG`] without budgets on the figures, so that a figure without a
/// baseline is reported, not judged.
fn unbudgeted() -> String {
    CONFIG.replace("overall-peak = \"1 GiB\"\n", "")
}

#[test]
fn a_skip_for_want_of_a_baseline_says_which_name_was_looked_for_in_every_report() {
    let w = Workdir::new(&unbudgeted());
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.rank("rank1", Some(100 * MIB), 100 * MIB);
    w.rank("rank11", None, 100 * MIB);
    let said = "no baseline named \"rank11\" in golden/ (closest there: rank1.json, rank0.json)";
    let out = w
        .check()
        .args(["--json", "verdict.json", "--junit", "junit.xml"])
        .args(["--markdown", "report.md"])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(
        out.contains(&format!("WARN train rank11 dev0 baseline: {said}")),
        "{out}"
    );
    assert!(w.read("report.md").contains(said));
    let junit = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&junit).unwrap();
    let reported = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("system-out")
                && n.parent()
                    .and_then(|p| p.attribute("name"))
                    .is_some_and(|name| name == "dev0.dynamic-peak")
                && n.parent()
                    .and_then(|p| p.attribute("classname"))
                    .is_some_and(|class| class == "train.rank11")
        })
        .unwrap_or_else(|| panic!("no reported dynamic-peak of rank11:\n{junit}"));
    assert!(reported.text().unwrap().ends_with(said), "{junit}");
    let v = verdict_json(&w);
    assert_eq!(v["verdict"], "warn");
    let rank11 = &v["targets"][0]["snapshots"][2];
    let finding = &rank11["devices"][0]["checks"][0]["findings"][0];
    assert_eq!(finding["kind"], "no-baseline", "{rank11:#}");
    assert_eq!(finding["looked-for"], "rank11");
    assert_eq!(finding["in-dir"], "golden/");
    assert_eq!(
        finding["close"],
        serde_json::json!(["rank1.json", "rank0.json"])
    );
}

#[test]
fn two_baseline_files_that_capture_one_key_are_an_error_naming_both() {
    let w = Workdir::new(&CONFIG.replace(
        "baseline = \"golden/\"",
        "baseline = \"golden/\"\nkey = '(rank\\d+)'",
    ));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::copy(w.path("golden/rank0.json"), w.path("golden/rank0.json.bak")).unwrap();
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .code(2)
        .stderr(contains("golden/rank0.json, golden/rank0.json.bak"))
        .stderr(contains("name the baseline \"rank0\""));
    assert!(!w.path("verdict.json").exists());
}

#[test]
fn a_baseline_entry_without_a_snapshot_warns_by_name_and_fails_when_baselines_are_required() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.write_summary(
        "golden/rank7.json",
        &summary(
            "rank7.pickle",
            vec![device(0, 100 * MIB, &sites(100 * MIB))],
        ),
    );
    let said = "WARN train rank7 dev0 baseline: the baseline golden/rank7.json (\"rank7\") has \
                no snapshot of that name in this run";
    w.check()
        .assert()
        .code(0)
        .stdout(contains(said))
        .stdout(contains("memgate: warn"));
    w.check()
        .arg("--require-baseline")
        .assert()
        .code(1)
        .stdout(contains(said.replace("WARN", "FAIL")));
}

#[test]
fn hidden_files_in_the_baseline_directory_are_not_entries() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(w.path("golden/.gitkeep"), "").unwrap();
    w.check()
        .arg("--require-baseline")
        .assert()
        .code(0)
        .stdout(contains("memgate: pass"));
}

#[test]
fn devices_that_differ_between_baseline_and_run_are_reported_per_device() {
    let w = Workdir::new(CONFIG);
    w.write_summary(
        "snaps/rank0.json",
        &summary(
            "rank0.pickle",
            vec![device(0, 100 * MIB, &sites(100 * MIB))],
        ),
    );
    w.write_summary(
        "golden/rank0.json",
        &summary(
            "rank0.pickle",
            vec![device(1, 100 * MIB, &sites(100 * MIB))],
        ),
    );
    w.check()
        .assert()
        .code(0)
        .stdout(contains(
            "WARN train rank0 dev0 baseline: the baseline golden/rank0.json has no such device \
             (it holds dev1)",
        ))
        .stdout(contains(
            "WARN train rank0 dev1 baseline: the baseline golden/rank0.json has this device, \
             the snapshot does not (it holds dev0)",
        ));
    w.check().arg("--require-baseline").assert().code(1);
}

#[test]
fn a_device_listed_twice_in_the_baseline_is_an_error_not_the_first_one_found() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", None, 100 * MIB);
    w.write_summary(
        "golden/rank0.json",
        &summary(
            "rank0.pickle",
            vec![
                device(0, 10 * MIB, &sites(10 * MIB)),
                device(0, 100 * MIB, &sites(100 * MIB)),
            ],
        ),
    );
    w.check().assert().code(2).stdout(contains(
        "ERROR train rank0 dev0 baseline: golden/rank0.json lists this device more than once",
    ));
}

#[test]
fn category_checks_against_a_baseline_of_other_rules_are_errors_not_growth() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", None, 100 * MIB);
    let mut golden = device(0, 100 * MIB, &sites(100 * MIB));
    golden.categories.rules = "mosaic".into();
    golden.categories.peaks.clear();
    w.write_summary("golden/rank0.json", &summary("rank0.pickle", vec![golden]));
    w.check()
        .assert()
        .code(2)
        .stdout(contains(
            "ERROR train rank0 dev0 category.activation: the baseline's categories come from \
             the \"mosaic\" rules, this run's from \"default\"",
        ))
        .stdout(contains("grew").not());
}

// Unix permission bits and symlinks (src/platform has the Windows side).
#[cfg(unix)]
#[test]
fn an_unreadable_baseline_gets_no_torch_npu_hint_unless_we_run_as_root() {
    use std::os::unix::fs::PermissionsExt;
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let golden = w.path("golden/rank0.json");
    std::fs::set_permissions(&golden, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::File::open(&golden).is_ok() {
        eprintln!("skipped: running as root, a mode 0000 file is still readable");
        return;
    }
    w.check()
        .assert()
        .code(2)
        .stdout(contains("permission denied"))
        .stdout(contains("torch_npu").not());
}
