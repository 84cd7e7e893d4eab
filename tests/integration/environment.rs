//! The environment fingerprint (docs/figures.md#environment): what the
//! snapshot and `record()`'s `.NAME.env.json` say, kept in summaries, and a
//! baseline recorded with another `expandable_segments` setting named in
//! every report: a warning, or a failure with `same-environment = true`.

use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, memgate, Workdir};

const CONFIG: &str = r#"[[target]]
name = "train"
snapshots = "snaps/*.json"
baseline = "golden/"
SAME

[target.budget]
allocated-peak = "10 GiB"
"#;

/// `DIR/run.json` (the synthetic main run, its `allocator_settings` saying
/// `expandable`) and the `.run.env.json` record() would write beside it.
fn recorded(dir: &Path, expandable: bool) {
    std::fs::create_dir_all(dir).unwrap();
    let text = std::fs::read_to_string(fixture("main.json")).unwrap();
    let mut snap: Value = serde_json::from_str(&text).unwrap();
    snap["allocator_settings"]["expandable_segments"] = Value::Bool(expandable);
    std::fs::write(dir.join("run.json"), snap.to_string()).unwrap();
    let conf = if expandable { "True" } else { "False" };
    let env = serde_json::json!({
        "schema_version": 1, "kind": "memgate-environment", "backend": "cuda", "rank": 0,
        "world_size": 8, "torch": "2.5.1", "cuda": "12.4", "cann": null,
        "device": {"index": 0, "name": "NVIDIA H100 80GB HBM3", "total_memory": 85029158912u64},
        "allocator": {"PYTORCH_CUDA_ALLOC_CONF": format!("expandable_segments:{conf}")}
    });
    std::fs::write(dir.join(".run.env.json"), env.to_string()).unwrap();
}

/// A workdir whose baseline was recorded with expandable segments and
/// whose run without.
fn workdir(same: bool) -> Workdir {
    let line = if same { "same-environment = true" } else { "" };
    let w = Workdir::new(&CONFIG.replace("SAME", line));
    recorded(&w.path("base"), true);
    recorded(&w.path("snaps"), false);
    memgate()
        .current_dir(w.path(""))
        .args(["summarize", "base/run.json", "-o", "golden"])
        .assert()
        .success();
    w
}

const SETTING: &str = "allocator-settings.expandable_segments true → false";
const CONF: &str =
    "allocator-conf.PYTORCH_CUDA_ALLOC_CONF expandable_segments:True → expandable_segments:False";

#[test]
fn the_summary_keeps_what_record_wrote_and_what_the_snapshot_says() {
    let w = workdir(false);
    let s: Value = serde_json::from_str(&w.read("golden/run.json")).unwrap();
    let env = &s["devices"][0]["environment"];
    assert_eq!(env["device-memory"], 85029158912u64);
    assert_eq!(env["device-name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(env["world-size"], 8);
    assert_eq!(env["torch"], "2.5.1");
    assert_eq!(env["device-kind"], "cuda");
    assert_eq!(env["allocator-settings"]["expandable_segments"], "true");
    assert_eq!(
        env["allocator-conf"]["PYTORCH_CUDA_ALLOC_CONF"],
        "expandable_segments:True"
    );
}

#[test]
fn another_expandable_segments_setting_warns_in_every_report() {
    let w = workdir(false);
    let out = w
        .check()
        .args(["--markdown", "r.md", "--junit", "r.xml", "--json", "r.json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "a warning passes: {text}");
    for (name, report) in [
        ("terminal", text.clone()),
        // Markdown escapes the underscores.
        ("markdown", w.read("r.md").replace('\\', "")),
        ("junit", w.read("r.xml")),
    ] {
        assert!(report.contains(SETTING), "{name}: {report}");
        assert!(report.contains(CONF), "{name}: {report}");
    }
    let v: Value = serde_json::from_str(&w.read("r.json")).unwrap();
    let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let env = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "environment")
        .unwrap_or_else(|| panic!("no environment check: {checks}"));
    assert_eq!(env["status"], "warn");
    // JSON holds the finding as data: each difference, both values.
    let finding = &env["findings"][0];
    assert_eq!(finding["kind"], "environment-differs");
    assert_eq!(finding["required"], false);
    let d = &finding["differences"];
    assert_eq!(d[0]["key"], "allocator-settings.expandable_segments");
    assert_eq!(
        (&d[0]["baseline"], &d[0]["current"]),
        (&"true".into(), &"false".into())
    );
    assert_eq!(d[1]["key"], "allocator-conf.PYTORCH_CUDA_ALLOC_CONF");
    assert_eq!(d[1]["current"], "expandable_segments:False");
}

#[test]
fn a_target_requiring_the_same_environment_fails() {
    let w = workdir(true);
    let out = w.check().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(SETTING), "{text}");
    assert!(text.contains("requires the same environment"), "{text}");
}

#[test]
fn the_same_environment_says_nothing() {
    let w = workdir(true);
    recorded(&w.path("snaps"), true);
    let out = w.check().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(!text.contains("another environment"), "{text}");
}

#[test]
fn a_malformed_environment_file_is_an_error_naming_it() {
    let w = workdir(false);
    std::fs::write(w.path("snaps/.run.env.json"), "{\"kind\": 3").unwrap();
    let out = w.check().output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(".run.env.json"), "{err}");
}

/// The environment file of `snaps/run.json` replaced by a link to `target`
/// (relative to `snaps/`, or absolute when it starts with the workdir's
/// path), `outside/env.json` holding a marker that must not reach any
/// report.
#[cfg(unix)]
fn linked_environment(target: impl Fn(&Workdir) -> std::path::PathBuf) -> Workdir {
    let w = workdir(false);
    std::fs::create_dir_all(w.path("outside")).unwrap();
    let secret = serde_json::json!({
        "schema_version": 1, "kind": "memgate-environment", "backend": "cuda",
        "torch": "SECRET-TORCH-9", "world_size": 8
    });
    std::fs::write(w.path("outside/env.json"), secret.to_string()).unwrap();
    std::fs::write(w.path("snaps/env.json"), secret.to_string()).unwrap();
    std::fs::remove_file(w.path("snaps/.run.env.json")).unwrap();
    std::os::unix::fs::symlink(target(&w), w.path("snaps/.run.env.json")).unwrap();
    w
}

#[cfg(unix)] // symlinks
#[test]
fn an_environment_file_linked_out_of_the_snapshots_directory_is_refused() {
    let relative = |_: &Workdir| "../outside/env.json".into();
    let absolute = |w: &Workdir| w.path("outside/env.json");
    let targets: [&dyn Fn(&Workdir) -> std::path::PathBuf; 2] = [&relative, &absolute];
    for (target, link) in ["relative", "absolute"].into_iter().zip(targets) {
        let w = linked_environment(link);
        let out = w.check().args(["--json", "-"]).output().unwrap();
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(2), "{target}: {stdout}\n{err}");
        assert!(err.contains(".run.env.json"), "{target}: {err}");
        assert!(err.contains("link out of its directory"), "{target}: {err}");
        assert!(
            !stdout.contains("SECRET") && !err.contains("SECRET"),
            "{target}: {stdout}\n{err}"
        );
        // `peak` reads it the same way.
        let out = memgate()
            .current_dir(w.path(""))
            .args(["peak", "snaps/run.json", "--format", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{target}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains("SECRET"));
    }
}

#[cfg(unix)] // symlinks
#[test]
fn an_environment_file_linked_within_the_snapshots_directory_is_read() {
    let w = linked_environment(|_| "env.json".into());
    let out = memgate()
        .current_dir(w.path(""))
        .args(["peak", "snaps/run.json", "--format", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("SECRET-TORCH-9"), "{text}");
}
