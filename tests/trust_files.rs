//! Issue 19, "Files": no report replaces a file the run reads, a killed or
//! size-limited write leaves nothing a baseline glob trips over, and a
//! repeated key in a JSON or TOML input is an error, never a silent choice.

mod common;

use assert_cmd::Command;
use common::{device, sites, summary, Workdir, CONFIG, MIB};
use predicates::str::contains;

fn memgate(w: &Workdir) -> Command {
    let mut cmd = Command::cargo_bin("memgate").unwrap();
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
