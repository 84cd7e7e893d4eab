//! Issue 23 item 1: `--categories` (a JSON object or a TOML inline table)
//! is the same rules as a rules file's `[categories]` on every command that
//! takes rules, in every format; a rules file may be a pipe
//! (`--rules <(printf …)`); custom categories are always listed, in rule
//! order.

use std::path::{Path, PathBuf};

use crate::common::{self, fixture, memgate};
use predicates::str::contains;
use serde_json::Value;

/// Rules that match some stacks of `rank0.pickle` (and of the real
/// files), and one that matches none.
const JSON: &str = r#"{"fwd": "forward", "init": "__init__", "never": "zzz_matches_nothing"}"#;
const TOML_INLINE: &str = r#"{fwd = "forward", init = "__init__", never = "zzz_matches_nothing"}"#;
const FILE: &str =
    "[categories]\nfwd = \"forward\"\ninit = \"__init__\"\nnever = \"zzz_matches_nothing\"\n";

fn rules_file(dir: &Path) -> PathBuf {
    let p = dir.join("rules.toml");
    std::fs::write(&p, FILE).unwrap();
    p
}

/// The output with the rule set's name (the file's path, or the inline
/// rules) replaced, in text and in JSON.
fn normalised(out: &[u8], source: &str) -> String {
    let text = String::from_utf8(out.to_vec()).unwrap();
    let quoted = serde_json::to_string(source).unwrap();
    text.replace(&quoted[1..quoted.len() - 1], "RULES")
        .replace(source, "RULES")
}

fn run(args: &[&str]) -> Vec<u8> {
    memgate()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone()
}

/// `ARGS --rules FILE`, `ARGS --categories JSON` and `ARGS --categories
/// TOML` print the same, but for the rule set's name.
fn same_three_ways(args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let file = rules_file(dir.path());
    let file = file.to_str().unwrap();
    let by_file = normalised(&run(&[args, &["--rules", file]].concat()), file);
    let json_source = format!("default + {}", serde_json::from_str::<Value>(JSON).unwrap());
    let by_json = normalised(
        &run(&[args, &["--categories", JSON]].concat()),
        &json_source,
    );
    let by_toml = normalised(
        &run(&[args, &["--categories", TOML_INLINE]].concat()),
        &json_source,
    );
    // Profile's text and peak's JSON name the rule set (diff names none).
    let named = args[0] == "profile" || (args[0] == "peak" && args.contains(&"json"));
    assert!(!named || by_file.contains("RULES"), "{by_file}");
    assert_eq!(by_json, by_file, "{args:?}");
    assert_eq!(by_toml, by_file, "{args:?}");
}

#[test]
fn profile_peak_and_diff_equal_the_rules_file_in_text_and_json() {
    let snap = fixture("rank0.pickle");
    let snap = snap.to_str().unwrap();
    let other = fixture("rank0_regressed.pickle");
    let other = other.to_str().unwrap();
    for format in ["text", "json"] {
        same_three_ways(&["profile", snap, "--format", format]);
        same_three_ways(&["peak", snap, "--format", format]);
        same_three_ways(&["diff", snap, other, "--format", format]);
    }
    // The rules decide something: forward's bytes are `fwd`'s, not
    // `activation`'s.
    let doc: Value = serde_json::from_slice(&run(&[
        "profile",
        snap,
        "--format=json",
        "--categories",
        JSON,
    ]))
    .unwrap();
    let at_peak = &doc["snapshots"][0]["devices"][0]["categories"]["at-allocated-peak"];
    assert!(at_peak["fwd"].as_u64().unwrap() > 0, "{at_peak}");
    assert!(at_peak["init"].as_u64().unwrap() > 0, "{at_peak}");
    assert_eq!(at_peak["never"], 0);
    // The custom categories in rule order (the maps are sorted by name).
    let custom = &doc["snapshots"][0]["devices"][0]["categories"]["custom"];
    assert_eq!(custom, &serde_json::json!(["fwd", "init", "never"]));
    // Over a rules file's own custom rules, --categories go first.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.toml");
    std::fs::write(&file, "[categories]\nzz = \"train_step\"\nfwd = \"x\"\n").unwrap();
    let both: Value = serde_json::from_slice(&run(&[
        "profile",
        snap,
        "--format=json",
        "--rules",
        file.to_str().unwrap(),
        "--categories",
        JSON,
    ]))
    .unwrap();
    let c = &both["snapshots"][0]["devices"][0]["categories"];
    assert_eq!(
        c["custom"],
        serde_json::json!(["fwd", "init", "never", "zz"])
    );
    assert!(c["at-allocated-peak"]["zz"].as_u64().unwrap() > 0, "{c}");
}

#[test]
fn summarize_writes_the_same_summary_with_either() {
    let snap = fixture("rank0.pickle");
    let dir = tempfile::tempdir().unwrap();
    let file = rules_file(dir.path());
    let out = |name: &str, rules: [&str; 2]| {
        let o = dir.path().join(name);
        memgate()
            .args(["summarize", "-o", o.to_str().unwrap()])
            .args(rules)
            .arg(&snap)
            .assert()
            .success();
        std::fs::read(o.join("rank0.json")).unwrap()
    };
    let by_file = out("f", ["--rules", file.to_str().unwrap()]);
    let by_json = out("j", ["--categories", JSON]);
    let source = format!("default + {}", serde_json::from_str::<Value>(JSON).unwrap());
    assert_eq!(
        normalised(&by_json, &source),
        normalised(&by_file, file.to_str().unwrap())
    );
}

#[test]
fn check_with_categories_judges_as_the_budgets_own_categories_table() {
    let dir = tempfile::tempdir().unwrap();
    let snap = fixture("rank0.pickle");
    let budget = "[defaults]\nfigures = []\n[[target]]\nname = \"t\"\nsnapshots = \"x\"\n\
                  [target.budget.category]\nfwd = \"1 MiB\"\nnever = \"1 MiB\"\n";
    let with_table = dir.path().join("table.toml");
    std::fs::write(
        &with_table,
        format!("{budget}\n[categories]\n{}", &FILE[13..]),
    )
    .unwrap();
    let without = dir.path().join("plain.toml");
    std::fs::write(&without, budget).unwrap();
    let verdict = |config: &Path, extra: &[&str], name: &str| {
        let json = dir.path().join(name);
        memgate()
            .env("SOURCE_DATE_EPOCH", common::EPOCH)
            .env_remove("GITHUB_ACTIONS")
            .args(["check", "--config", config.to_str().unwrap()])
            .args(["--json", json.to_str().unwrap()])
            .args(extra)
            .arg(&snap)
            .assert()
            .code(1);
        let mut v: Value = serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap();
        v["config"] = Value::Null;
        v
    };
    let by_table = verdict(&with_table, &[], "a.json");
    let by_flag = verdict(&without, &["--categories", JSON], "b.json");
    // Only the budget file's name (in each check's config line) differs.
    let text = |v: &Value| {
        serde_json::to_string(v)
            .unwrap()
            .replace("plain.toml", "table.toml")
    };
    assert!(text(&by_table).contains("category.fwd"));
    assert_eq!(text(&by_flag), text(&by_table));
    // Without the flag the budget names a category no rule makes.
    memgate()
        .args(["check", "--config", without.to_str().unwrap()])
        .arg(&snap)
        .assert()
        .code(2)
        .stderr(contains("unknown category `fwd`"));
}

#[test]
fn a_rules_file_may_be_a_process_substitution() {
    let snap = fixture("rank0.pickle");
    let dir = tempfile::tempdir().unwrap();
    let file = rules_file(dir.path());
    let by_file = normalised(
        &run(&[
            "profile",
            snap.to_str().unwrap(),
            "--rules",
            file.to_str().unwrap(),
        ]),
        file.to_str().unwrap(),
    );
    let script = format!(
        "exec \"$0\" profile \"$1\" --rules <(printf '{}')",
        FILE.replace('\n', "\\n")
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .arg(common::memgate_path())
        .arg(&snap)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let source = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("dev0 (rules: "))
        .and_then(|l| l.strip_suffix(')'))
        .unwrap()
        .to_string();
    assert!(source.starts_with("/dev/fd/"), "{source}");
    assert_eq!(normalised(text.as_bytes(), &source), by_file);
}

#[test]
fn a_custom_category_that_matched_nothing_is_listed_at_zero_in_rule_order() {
    let snap = fixture("rank0.pickle");
    let out = run(&[
        "profile",
        snap.to_str().unwrap(),
        "--categories",
        r#"{"never": "zzz_matches_nothing", "fwd": "forward", "also_never": "zzz_again"}"#,
    ]);
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("category"))
        .skip(1)
        .take(3)
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(rows, ["never", "fwd", "also_never"], "{text}");
    assert!(
        text.contains(
            "    never                               0 B                0 B                0 B"
        ),
        "{text}"
    );
}

#[test]
fn bad_inline_categories_are_one_clear_error_on_every_command() {
    let snap = fixture("rank0.pickle");
    let snap = snap.to_str().unwrap();
    for cmd in ["peak", "profile", "summarize", "phases"] {
        let mut c = memgate();
        c.arg(cmd).arg(snap);
        if cmd == "summarize" {
            c.args(["-o", "/nonexistent-memgate-dir"]);
        }
        c.args(["--categories", r#"{"x": "("}"#])
            .assert()
            .code(2)
            .stderr(contains("--categories: x: not a valid regex"));
    }
    memgate()
        .args(["diff", snap, snap, "--categories", "hccl"])
        .assert()
        .code(2)
        .stderr(contains("--categories: neither a JSON object"));
    memgate()
        .args([
            "check",
            "--config",
            "/nonexistent.toml",
            snap,
            "--categories",
            "[1]",
        ])
        .assert()
        .code(2)
        .stderr(contains("--categories: must be an object"));
}

#[test]
fn on_a_real_snapshot_the_flag_equals_the_rules_file() {
    let real = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    let file = real.join("cranberrii_ftcourse.pickle");
    if !file.exists() {
        eprintln!(
            "SKIPPED: {} not found: the real-snapshot --categories test did not run",
            file.display()
        );
        return;
    }
    for format in ["text", "json"] {
        same_three_ways(&["profile", file.to_str().unwrap(), "--format", format]);
    }
}
