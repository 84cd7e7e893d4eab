//! Issue 22: a budget given as data (`check --budget-json`, what the Python
//! API and the pytest marker pass) is read by the budget file's own reader
//! and validation: the same budget judges the same as a file, whatever
//! keys it uses, and its mistakes are named by dotted key.

use std::path::Path;

use crate::common::memgate;
use predicates::str::contains;
use serde_json::Value;

/// The TOML budget as the JSON document of the same structure.
fn as_json(toml_text: &str) -> String {
    let v: toml::Value = toml::from_str(toml_text).unwrap();
    serde_json::to_string(&v).unwrap()
}

/// The verdict of `check` in `dir` with `how` naming the budget, the
/// exit code asserted; the budget's name and config lines left out.
fn verdict(dir: &Path, how: &[&str], snapshots: &[&str], code: i32) -> Value {
    let out = dir.join("verdict.json");
    memgate()
        .current_dir(dir)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .arg("check")
        .args(how)
        .arg(format!("--json={}", out.display()))
        .arg("--")
        .args(snapshots)
        .assert()
        .code(code);
    let mut v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("config-line");
            m.remove("config");
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

fn same_verdict(dir: &Path, budget: &str, snapshots: &[&str], code: i32) {
    std::fs::write(dir.join("b.toml"), budget).unwrap();
    let by_file = verdict(dir, &["--config=b.toml"], snapshots, code);
    let json = as_json(budget);
    let by_data = verdict(dir, &[&format!("--budget-json={json}")], snapshots, code);
    assert_eq!(by_data, by_file);
}

#[test]
fn the_examples_budgets_judge_the_same_as_data() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for (file, snaps, code) in [
        ("memgate.toml", "snapshots", 0),
        ("memgate-regressed.toml", "snapshots-regressed", 1),
    ] {
        let text = std::fs::read_to_string(examples.join(file)).unwrap();
        let dir = tempfile::tempdir().unwrap();
        // Relative paths: the data's are relative to the current directory.
        for sub in ["golden", snaps] {
            let to = dir.path().join(sub);
            std::fs::create_dir(&to).unwrap();
            for e in std::fs::read_dir(examples.join(sub)).unwrap() {
                let e = e.unwrap();
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
        same_verdict(dir.path(), &text, &[], code);
    }
}

/// Every key the budget file takes, once.
const EVERY_KEY: &str = r###"
[defaults]
tolerance = "4%"
noise-floor = "1 MiB"
rules = "rules.toml"
figures = ["allocated-peak", "trace-entries"]

[categories]
"fwd.x" = "forward"

[[target]]
name = "every key"
snapshots = "snaps/rank0.pickle"
baseline = "base/"
device = 0
key = '(rank\d+)'
require-trace = false
accept-lower-bounds = true
window = "#0.."
iteration-boundary = "ProfilerStep#"

[target.budget]
allocated-peak = { limit = "150 MiB", level = "warn" }
oom-events = 0
[target.budget.category]
"fwd.x" = "10 MiB"
init = "1 GiB"
[target.budget.phase."## forward ##"]
allocated-peak = "1 MiB"

[target.tolerance]
trace-entries = "1%"
[target.tolerance.phase."## forward ##"]
dynamic-peak = "3%"
"###;

#[test]
fn a_budget_with_every_key_judges_the_same_as_data() {
    let dir = tempfile::tempdir().unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for sub in ["base", "snaps"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    for r in ["rank0", "rank1"] {
        let from = examples.join(format!("snapshots-regressed/{r}.pickle"));
        std::fs::copy(from, dir.path().join(format!("snaps/{r}.pickle"))).unwrap();
        let base = examples.join(format!("snapshots/{r}.pickle"));
        std::fs::copy(base, dir.path().join(format!("base/{r}.pickle"))).unwrap();
    }
    std::fs::write(
        dir.path().join("rules.toml"),
        "[categories]\ninit = \"__init__\"\n",
    )
    .unwrap();
    let v = {
        same_verdict(dir.path(), EVERY_KEY, &[], 1);
        verdict(dir.path(), &["--config=b.toml"], &[], 1)
    };
    // Each key took effect: the category of the budget's table, the one of
    // the rules file, the phase, the warn level, the listed figures only.
    let text = v.to_string();
    for id in [
        "category.fwd.x",
        "category.init",
        "phase.## forward ##.allocated-peak",
        "trace-entries",
    ] {
        assert!(
            text.contains(&format!("\"id\":\"{id}\"")),
            "{id} not judged: {text}"
        );
    }
    assert!(!text.contains("\"id\":\"dynamic-peak\""), "{text}");
}

#[test]
fn a_mistake_in_data_is_named_by_its_dotted_key() {
    let dir = tempfile::tempdir().unwrap();
    let json = r#"{"target": [{"name": "t", "snapshots": "x", "budget": {"allocated-peak": "3 furlongs"}}]}"#;
    memgate()
        .current_dir(dir.path())
        .args(["check", &format!("--budget-json={json}"), "--", "x.pickle"])
        .assert()
        .code(2)
        .stderr(contains("budget: `target.budget.allocated-peak`: "));
    memgate()
        .current_dir(dir.path())
        .args(["check", "--budget-json={", "--", "x.pickle"])
        .assert()
        .code(2)
        .stderr(contains("budget: not a JSON budget"));
}
