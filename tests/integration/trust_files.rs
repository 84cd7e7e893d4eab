//! Issue 19, "Files": no report replaces a file the run reads, a killed or
//! size-limited write leaves nothing a baseline glob trips over, and a
//! repeated key in a JSON or TOML input is an error, never a silent choice.

use crate::common;

use assert_cmd::Command;
use common::{device, sites, summary, Workdir, CONFIG, MIB};
use predicates::prelude::*;
use predicates::str::contains;

fn memgate(w: &Workdir) -> Command {
    let mut cmd = common::memgate();
    cmd.current_dir(w.tmp.path())
        .env("SOURCE_DATE_EPOCH", common::EPOCH)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT");
    cmd
}

/// A summary's JSON text with a second `"devices"` key, holding a device
/// at `second` bytes, after the first.
fn with_second_devices(text: &str, second: u64) -> String {
    let other = summary("rank0.pickle", vec![device(0, second, &sites(second))]);
    let devices = serde_json::to_string(&other.devices).unwrap();
    let body = text.trim_end().strip_suffix('}').unwrap();
    format!("{body},\n  \"devices\": {devices}\n}}\n")
}

// Item 10: repeated keys.

#[test]
fn a_golden_summary_with_a_second_devices_key_is_an_error_not_the_last_one_winning() {
    let w = Workdir::new(CONFIG);
    // A 100 MiB golden, then a run at 200 MiB: a regression...
    w.rank("rank0", Some(100 * MIB), 200 * MIB);
    w.check().assert().code(1);
    // ...that passed when a second "devices" said the golden was 200 MiB.
    let golden = with_second_devices(&w.read("golden/rank0.json"), 200 * MIB);
    std::fs::write(w.path("golden/rank0.json"), golden).unwrap();
    w.check()
        .assert()
        .code(2)
        .stderr(contains("golden/rank0.json"))
        .stderr(contains("duplicate key `devices`"));
}

#[test]
fn a_duplicate_key_deep_in_a_summary_or_a_json_snapshot_is_an_error_naming_it() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    let text = w.read("snaps/rank0.json");
    // The first device's first key, named twice.
    let at = text.find("\"device\":").unwrap();
    let deep = format!("{}\"device\": 7,\n{}", &text[..at], &text[at..]);
    std::fs::write(w.path("snaps/rank0.json"), deep).unwrap();
    w.check()
        .assert()
        .code(2)
        .stderr(contains("snaps/rank0.json"))
        .stderr(contains("duplicate key `device`"));
    let snapshot = std::fs::read_to_string(common::fixture("main.json")).unwrap();
    let twice = snapshot.replacen('{', "{\"segments\": [], ", 1);
    std::fs::write(w.path("twice.json"), twice).unwrap();
    memgate(&w)
        .args(["peak", "twice.json"])
        .assert()
        .code(2)
        .stderr(contains("twice.json"))
        .stderr(contains("duplicate key `segments`"));
}

#[test]
fn a_budget_or_rules_file_with_a_repeated_key_is_an_error_naming_the_key() {
    // toml refuses these itself; this keeps it so.
    let twice = CONFIG.replace(
        "tolerance = \"5%\"\n",
        "tolerance = \"5%\"\ntolerance = \"50%\"\n",
    );
    let w = Workdir::new(&twice);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check()
        .assert()
        .code(2)
        .stderr(contains("memgate.toml"))
        .stderr(contains("duplicate key `tolerance`"));
    let w = Workdir::new(&CONFIG.replace("[defaults]\n", "[defaults]\nrules = \"rules.toml\"\n"));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(
        w.path("rules.toml"),
        "[categories]\nmoe = \"expert\"\nmoe = \"router\"\n",
    )
    .unwrap();
    w.check()
        .assert()
        .code(2)
        .stderr(contains("rules"))
        .stderr(contains("duplicate key `moe`"));
}

// Item 8: no report replaces a file the run reads.

/// The standard budget with `[defaults] rules = "rules.toml"`.
fn with_rules_file() -> Workdir {
    let w = Workdir::new(&CONFIG.replace("[defaults]\n", "[defaults]\nrules = \"rules.toml\"\n"));
    std::fs::write(w.path("rules.toml"), "[categories]\nmoe = \"expert\"\n").unwrap();
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w
}

// Unix permission bits and symlinks (src/platform has the Windows side).
#[cfg(unix)]
#[test]
fn a_report_over_the_budgets_rules_file_is_refused_by_path_symlink_or_hard_link() {
    let w = with_rules_file();
    let rules = w.read("rules.toml");
    std::os::unix::fs::symlink("rules.toml", w.path("link.md")).unwrap();
    std::fs::hard_link(w.path("rules.toml"), w.path("hard.xml")).unwrap();
    for (flag, path) in [
        ("--markdown", "rules.toml"),
        ("--markdown", "./link.md"),
        ("--junit", "hard.xml"),
        ("--html", "rules.toml"),
    ] {
        w.check()
            .args([flag, path])
            .assert()
            .code(2)
            .stderr(contains(format!(
                "{flag} {path} would overwrite the input rules.toml"
            )));
        assert_eq!(w.read("rules.toml"), rules, "{flag} {path} replaced it");
    }
}

#[test]
fn a_budget_that_cannot_be_used_still_keeps_its_rules_file_from_the_reports() {
    let w = with_rules_file();
    let rules = w.read("rules.toml");
    let bad = w.read("memgate.toml").replace("tolerance", "tolerence");
    std::fs::write(w.path("memgate.toml"), bad).unwrap();
    w.check()
        .args(["--markdown", "rules.toml", "--junit", "report.xml"])
        .assert()
        .code(2)
        .stderr(contains("tolerence"));
    assert_eq!(w.read("rules.toml"), rules);
    // The reports that can go somewhere still say why.
    assert!(w.read("report.xml").contains("tolerence"));
}

#[test]
fn a_bad_report_path_does_not_let_another_report_replace_a_snapshot_or_a_golden() {
    let w = with_rules_file();
    let snapshot = w.read("snaps/rank0.json");
    let golden = w.read("golden/rank0.json");
    w.check()
        .args(["--junit", "no/such/dir/report.xml"])
        .args([
            "--markdown",
            "snaps/rank0.json",
            "--json",
            "golden/rank0.json",
        ])
        .args(["--metrics", "rules.toml"])
        .assert()
        .code(2)
        .stderr(contains("no/such/dir"));
    assert_eq!(w.read("snaps/rank0.json"), snapshot);
    assert_eq!(w.read("golden/rank0.json"), golden);
    assert!(w.read("rules.toml").contains("moe"));
}

#[test]
fn the_analysis_commands_refuse_a_page_or_metrics_over_a_file_they_read() {
    let w = Workdir::new(CONFIG);
    std::fs::copy(common::fixture("main.json"), w.path("main.json")).unwrap();
    std::fs::write(w.path("rules.toml"), "[categories]\nmoe = \"expert\"\n").unwrap();
    std::fs::hard_link(w.path("main.json"), w.path("hard.txt")).unwrap();
    let snapshot = std::fs::read(w.path("main.json")).unwrap();
    let runs: [&[&str]; 4] = [
        &["peak", "main.json", "--metrics", "hard.txt"],
        &["peak", "*.json", "--metrics", "main.json"],
        &[
            "profile",
            "main.json",
            "--rules",
            "rules.toml",
            "--html",
            "rules.toml",
        ],
        &["diff", "main.json", "hard.txt", "--html", "hard.txt"],
    ];
    for args in runs {
        memgate(&w)
            .args(args)
            .assert()
            .code(2)
            .stderr(contains("would overwrite the input"));
        assert_eq!(
            std::fs::read(w.path("main.json")).unwrap(),
            snapshot,
            "{args:?}"
        );
        assert!(w.read("rules.toml").contains("moe"), "{args:?}");
    }
}

#[test]
fn summarize_refuses_a_summary_over_a_hard_link_of_its_input_or_its_rules_file() {
    let w = Workdir::new(CONFIG);
    std::fs::copy(common::fixture("main.json"), w.path("snaps/main.json")).unwrap();
    std::fs::hard_link(w.path("snaps/main.json"), w.path("golden/main.json")).unwrap();
    let before = std::fs::read(w.path("snaps/main.json")).unwrap();
    memgate(&w)
        .args(["summarize", "snaps/main.json", "-o", "golden"])
        .assert()
        .code(2)
        .stderr(contains("would overwrite the input"));
    assert_eq!(std::fs::read(w.path("snaps/main.json")).unwrap(), before);
    std::fs::remove_file(w.path("golden/main.json")).unwrap();
    std::fs::write(w.path("golden/main.json"), "[categories]\nmoe = \"x\"\n").unwrap();
    memgate(&w)
        .args(["summarize", "snaps/main.json", "-o", "golden"])
        .args(["--rules", "golden/main.json"])
        .assert()
        .code(2)
        .stderr(contains("would overwrite the input golden/main.json"));
    assert!(w.read("golden/main.json").contains("moe"));
}

// Item 9: what a killed or size-limited write leaves.

#[test]
fn what_a_killed_run_left_beside_a_golden_is_no_baseline_of_a_glob() {
    let w = Workdir::new(&CONFIG.replace("baseline = \"golden/\"", "baseline = \"golden/*\""));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    w.check().assert().code(0);
    // A summarize killed mid-write leaves its temporary file; a checkout
    // keeps its empty directory with a .gitkeep.
    let half = &w.read("golden/rank0.json")[..40];
    std::fs::write(w.path("golden/.rank0.json.memgate-4242-0.tmp"), half).unwrap();
    std::fs::write(w.path("golden/.gitkeep"), "").unwrap();
    w.check().assert().code(0);
    // Only a pattern that asks for hidden names gets them, and never a
    // temporary file.
    w.check()
        .args(["--baseline", "golden/.*"])
        .assert()
        .code(2)
        .stderr(contains(".gitkeep"))
        .stderr(contains("memgate-4242").not());
}

#[test]
fn a_file_size_limit_is_an_error_naming_the_file_and_the_old_file_stays() {
    let w = Workdir::new(CONFIG);
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    std::fs::write(w.path("page.html"), "old page").unwrap();
    let bin = common::memgate_path();
    // `ulimit -f 8`: at most 4-8 KiB per file, the page is far larger.
    let run = std::process::Command::new("sh")
        .current_dir(w.tmp.path())
        .arg("-c")
        .arg(format!(
            "ulimit -f 8 && exec '{}' check --html page.html",
            bin.display()
        ))
        .env("SOURCE_DATE_EPOCH", common::EPOCH)
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{:?}: {stderr}", run.status);
    let line = stderr
        .lines()
        .find(|l| l.contains("page.html"))
        .unwrap_or_else(|| panic!("no error names the page: {stderr}"));
    assert!(line.contains("too large"), "{line}");
    assert_eq!(w.read("page.html"), "old page");
    let left: Vec<_> = std::fs::read_dir(w.tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[test]
fn a_target_that_cannot_be_planned_still_keeps_its_files_from_the_reports() {
    let w =
        Workdir::new(&CONFIG.replace("[target.budget]", "key = '(rank\\d+)'\n\n[target.budget]"));
    w.rank("rank0", Some(100 * MIB), 100 * MIB);
    // Two goldens capture `rank0`: the target cannot be planned.
    std::fs::copy(w.path("golden/rank0.json"), w.path("golden/rank0.json.bak")).unwrap();
    let snapshot = w.read("snaps/rank0.json");
    let golden = w.read("golden/rank0.json.bak");
    w.check()
        .args([
            "--markdown",
            "snaps/rank0.json",
            "--junit",
            "golden/rank0.json.bak",
        ])
        .assert()
        .code(2)
        .stderr(contains("all name the baseline"));
    assert_eq!(w.read("snaps/rank0.json"), snapshot);
    assert_eq!(w.read("golden/rank0.json.bak"), golden);
}
