//! `memgate check --bencher / --benchmark-json / --codequality`: the
//! dashboards' files and GitLab's Code Quality report of the regressed
//! example, each parsed in its own format and held against the JSON report
//! of the same run (the independent source of every value and line).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::memgate_at_root as memgate;

/// The regressed example's reports, one run: (json, bencher, benchmark, codequality).
fn regressed_reports() -> (Value, Value, Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    memgate()
        .args(["check", "--config", "examples/memgate-regressed.toml"])
        .arg("--json")
        .arg(p("r.json"))
        .arg("--bencher")
        .arg(p("b.json"))
        .arg("--benchmark-json")
        .arg(p("g.json"))
        .arg("--codequality")
        .arg(p("cq.json"))
        .assert()
        .code(1);
    let read = |n: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(p(n)).unwrap()).unwrap()
    };
    (
        read("r.json"),
        read("b.json"),
        read("g.json"),
        read("cq.json"),
    )
}

/// `TARGET/SNAPSHOT/deviceN/CHECK` → (current, unit) for every check of the
/// JSON report that measures something.
fn expected(report: &Value) -> BTreeMap<String, (u64, String)> {
    let mut want = BTreeMap::new();
    for t in report["targets"].as_array().unwrap() {
        for s in t["snapshots"].as_array().unwrap() {
            for d in s["devices"].as_array().unwrap() {
                for c in d["checks"].as_array().unwrap() {
                    let id = c["id"].as_str().unwrap();
                    if id == "baseline" || id == "window" {
                        continue;
                    }
                    let name = format!(
                        "{}/{}/device{}/{id}",
                        t["name"].as_str().unwrap(),
                        s["name"].as_str().unwrap(),
                        d["device"]
                    );
                    let unit = c["unit"].as_str().unwrap().to_string();
                    let old = want.insert(name, (c["current"].as_u64().unwrap(), unit));
                    assert!(old.is_none(), "two checks under one name");
                }
            }
        }
    }
    want
}

#[test]
fn the_bencher_file_is_bmf_with_one_value_per_check_equal_to_the_json_reports() {
    let (report, bmf, _, _) = regressed_reports();
    let want = expected(&report);
    assert!(want.len() >= 20, "{want:?}");
    let mut got = BTreeMap::new();
    // BMF: { benchmark: { measure: { value: number, lower_value?, upper_value? } } }.
    for (benchmark, measures) in bmf.as_object().unwrap() {
        let measures = measures.as_object().unwrap();
        assert_eq!(measures.len(), 1, "{benchmark}");
        let (measure, metric) = measures.iter().next().unwrap();
        let metric = metric.as_object().unwrap();
        assert!(metric.keys().all(|k| k == "value"), "{metric:?}");
        let value = metric["value"].as_u64().unwrap();
        got.insert(benchmark.clone(), (value, measure.clone()));
    }
    assert_eq!(got, want);
}

#[test]
fn the_benchmark_json_is_custom_smaller_is_better_with_the_json_reports_values() {
    let (report, _, entries, _) = regressed_reports();
    let want = expected(&report);
    let mut got = BTreeMap::new();
    for e in entries.as_array().unwrap() {
        let e = e.as_object().unwrap();
        assert!(
            e.keys()
                .all(|k| ["name", "unit", "value", "range", "extra"].contains(&k.as_str())),
            "{e:?}"
        );
        let name = e["name"].as_str().unwrap().to_string();
        let value = e["value"].as_u64().unwrap();
        let old = got.insert(name, (value, e["unit"].as_str().unwrap().to_string()));
        assert!(old.is_none(), "a name twice");
    }
    assert_eq!(got, want);
    // The budgeted figure names its limit in the tooltip.
    let allocated = entries
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "toy-gpt-2rank/rank0/device0/allocated-peak")
        .unwrap();
    let limit = 208u64 << 20;
    assert!(
        allocated["extra"]
            .as_str()
            .unwrap()
            .contains(&format!("limit: {limit}")),
        "{allocated}"
    );
}

#[test]
fn the_code_quality_report_has_one_issue_per_failed_or_warned_check_at_its_budget_line() {
    let (report, _, _, issues) = regressed_reports();
    let budget = std::fs::read_to_string("examples/memgate-regressed.toml").unwrap();
    let issues = issues.as_array().unwrap();
    let mut fingerprints = std::collections::HashSet::new();
    let mut want = 0;
    for t in report["targets"].as_array().unwrap() {
        for s in t["snapshots"].as_array().unwrap() {
            for d in s["devices"].as_array().unwrap() {
                for c in d["checks"].as_array().unwrap() {
                    let status = c["status"].as_str().unwrap();
                    if status != "warn" && status != "fail" {
                        continue;
                    }
                    want += 1;
                    let check = format!("memgate/{}", c["id"].as_str().unwrap());
                    let prefix = format!(
                        "{} {} dev{} {}:",
                        t["name"].as_str().unwrap(),
                        s["name"].as_str().unwrap(),
                        d["device"],
                        c["id"].as_str().unwrap()
                    );
                    let issue = issues
                        .iter()
                        .find(|i| i["description"].as_str().unwrap().starts_with(&prefix))
                        .unwrap_or_else(|| panic!("no issue for {prefix}"));
                    assert_eq!(issue["check_name"], check.as_str());
                    let severity = if status == "fail" {
                        "critical"
                    } else {
                        "minor"
                    };
                    assert_eq!(issue["severity"], severity, "{issue}");
                    let loc = &c["config-line"];
                    assert_eq!(issue["location"]["path"], loc["file"], "{issue}");
                    assert_eq!(issue["location"]["lines"]["begin"], loc["line"], "{issue}");
                    // The line is the key the verdict comes from.
                    let line = usize::try_from(loc["line"].as_u64().unwrap()).unwrap();
                    assert!(
                        budget.lines().nth(line - 1).unwrap().contains('='),
                        "{line}"
                    );
                    assert!(fingerprints.insert(issue["fingerprint"].clone()));
                }
            }
        }
    }
    assert!(want > 0);
    assert_eq!(issues.len(), want);
}

#[test]
fn the_code_quality_report_of_a_broken_budget_points_at_the_broken_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("m.toml");
    std::fs::write(&config, "[[target]]\nname = \"t\"\nsnapshots = \"*.pickle\"\n[target.budget]\noveral-peak = \"1 GiB\"\n").unwrap();
    let cq = dir.path().join("cq.json");
    memgate()
        .args(["check", "--config"])
        .arg(&config)
        .arg("--codequality")
        .arg(&cq)
        .assert()
        .code(2);
    let issues: Value = serde_json::from_str(&std::fs::read_to_string(&cq).unwrap()).unwrap();
    let issues = issues.as_array().unwrap();
    let key = issues
        .iter()
        .find(|i| i["description"].as_str().unwrap().contains("overal-peak"))
        .unwrap_or_else(|| panic!("{issues:?}"));
    assert_eq!(key["severity"], "blocker");
    assert_eq!(key["location"]["lines"]["begin"], 5, "{key}");
    assert_eq!(key["location"]["path"], config.display().to_string());
    assert!(issues.iter().all(|i| i["severity"] == "blocker"));
}
