//! Device capacity and headroom (docs/figures.md#device-capacity): a budget
//! written as a share of the device, the device's memory from the target,
//! `[defaults]` or `record()`'s environment file, and every peak check
//! saying how close the peak came to the device.

use std::path::Path;

use serde_json::Value;

use crate::common::{fixture, memgate, Workdir, MIB};

fn config(device: &str, limit: &str) -> String {
    format!(
        r#"[defaults]
{device}

[[target]]
name = "train"
snapshots = "snaps/*.json"

[target.budget]
allocated-peak = "{limit}"
"#
    )
}

#[test]
fn a_share_of_device_budget_fails_when_the_peak_crosses_it_and_says_how_close() {
    // allocated-peak = 600 MiB + 8 MiB of static memory = 608 MiB.
    let w = Workdir::new(&config("device-memory = \"1 GiB\"", "50% of device"));
    w.rank("rank0", None, 600 * MIB);
    let out = w.check().args(["--json", "v.json"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("608 MiB of 1 GiB device memory (59%)"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&w.read("v.json")).unwrap();
    let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let check = checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "allocated-peak")
        .unwrap();
    assert_eq!(check["status"], "fail");
    assert_eq!(check["budget"], 512 * MIB);
    let headroom = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "device-headroom")
        .unwrap_or_else(|| panic!("{check}"));
    assert_eq!(headroom["device"], 1u64 << 30);
    // Under the share, it passes and every report still says how close it came.
    let w = Workdir::new(&config("device-memory = \"1 GiB\"", "92% of device"));
    w.rank("rank0", None, 600 * MIB);
    let out = w
        .check()
        .args(["--markdown", "r.md", "--junit", "r.xml"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let close = "608 MiB of 1 GiB device memory (59%)";
    for (name, report) in [
        ("terminal", text),
        ("markdown", w.read("r.md")),
        ("junit", w.read("r.xml")),
    ] {
        assert!(report.contains(close), "{name}: {report}");
    }
}

#[test]
fn the_outside_allowance_comes_off_the_share() {
    // 92% of 1 GiB = 942.08 MiB, less 400 MiB outside: 542.08 MiB < 608 MiB.
    let w = Workdir::new(&config(
        "device-memory = \"1 GiB\"\noutside-allocator = \"400 MiB\"",
        "92% of device",
    ));
    w.rank("rank0", None, 600 * MIB);
    let out = w.check().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("608 MiB + 400 MiB outside the allocator of 1 GiB device memory (98%)"),
        "{text}"
    );
}

#[test]
fn without_a_known_device_memory_a_share_is_not_judged() {
    let w = Workdir::new(&config("", "92% of device"));
    w.rank("rank0", None, 600 * MIB);
    let out = w.check().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("no device memory is known"), "{text}");
}

#[test]
fn a_bad_share_is_a_budget_error_with_its_place() {
    let w = Workdir::new(&config("", "120% of device"));
    let out = w.check().output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("memgate.toml:9:18"), "{err}");
    assert!(err.contains("at most 100"), "{err}");
}

/// `DIR/run.json` (the synthetic main run) with record()'s file saying the
/// device has `total` bytes.
fn recorded(dir: &Path, total: u64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(fixture("main.json"), dir.join("run.json")).unwrap();
    let env = serde_json::json!({
        "schema_version": 1, "kind": "memgate-environment", "backend": "cuda", "rank": 0,
        "device": {"index": 0, "name": "test", "total_memory": total}
    });
    std::fs::write(dir.join(".run.env.json"), env.to_string()).unwrap();
}

#[test]
fn the_device_memory_record_wrote_is_read_by_check_and_peak() {
    let exp: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("expected.json")).unwrap()).unwrap();
    let peak = exp["main.json"]["devices"][0]["figures"]["allocated-peak"]
        .as_u64()
        .unwrap();
    // A device twice the peak: 50% of it is the peak exactly, 49% is less.
    let w = Workdir::new(&config("", "50% of device"));
    recorded(&w.path("snaps"), 2 * peak);
    w.check().assert().success();
    let w = Workdir::new(&config("", "49% of device"));
    recorded(&w.path("snaps"), 2 * peak);
    let out = w.check().output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("device memory (50%)"), "{text}");
    let out = memgate()
        .current_dir(w.path(""))
        .args(["peak", "snaps/run.json"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("device memory (recorded): "), "{text}");
    assert!(text.contains("allocated peak 50%"), "{text}");
}
