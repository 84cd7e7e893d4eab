//! Shared helpers of the `check` CLI tests: summary files written from the
//! library's own types, and a `memgate check` command with a clean
//! environment and a fixed timestamp.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use memgate::analysis::{Categories, DeviceReport, Figures, PeakEntry, SiteBytes};
use memgate::baseline::{Provenance, Summary, SCHEMA_VERSION, SUMMARY_KIND};

pub const MIB: u64 = 1 << 20;

/// Fixed report timestamp (2023-11-14T22:13:20Z).
pub const EPOCH: &str = "1700000000";

/// A device whose figures all derive from one peak, with sites.
pub fn device(device: u32, peak: u64, sites: &[(&str, u64)]) -> DeviceReport {
    let mut categories = Categories {
        rules: "default".into(),
        ..Categories::default()
    };
    categories
        .at_allocated_peak
        .insert("activation".into(), peak / 2);
    categories
        .at_allocated_peak
        .insert("optimizer-state".into(), peak - peak / 2);
    categories.at_dynamic_peak = categories.at_allocated_peak.clone();
    categories.peaks = categories.at_allocated_peak.clone();
    DeviceReport {
        device: memgate::Device::new(device),
        figures: Figures {
            dynamic_peak: peak,
            static_memory: 8 * MIB,
            overall_peak: peak + 8 * MIB,
            allocated_peak: peak + 8 * MIB,
            reserved_peak: peak + 64 * MIB,
            oom_events: 0,
            alloc_events: 1000,
            trace_entries: 3000,
            ..Figures::default()
        },
        categories,
        peak_entry: PeakEntry::default(),
        peak_time_us: None,
        trace_complete: true,
        stacks_at_peak: Vec::new(),
        sites_at_peak: sites
            .iter()
            .map(|(s, b)| SiteBytes {
                site: s.to_string(),
                bytes: *b,
                count: 1,
                recorded: None,
            })
            .collect(),
        time: None,
        peak_phase: None,
        stacks_at_moment: None,
        oom: Vec::new(),
        warnings: Vec::new(),
        dump: None,
        window: None,
        environment: None,
        pools: Vec::new(),
        spreads: Default::default(),
        host: None,
    }
}

pub fn summary(file: &str, devices: Vec<DeviceReport>) -> Summary {
    Summary {
        schema_version: SCHEMA_VERSION,
        kind: SUMMARY_KIND.into(),
        provenance: Provenance {
            file: file.into(),
            size: 1,
            sha256: "0".repeat(64),
            format: "pickle".into(),
            pickle_protocol: Some(4),
            shape: "dict".into(),
            generation: "2.5".into(),
            allocator_settings: None,
            memgate_version: "0.1.0".into(),
        },
        site_names: Some("portable".into()),
        devices,
    }
}

/// The usual sites of a peak of `peak` bytes.
pub fn sites(peak: u64) -> Vec<(&'static str, u64)> {
    vec![
        ("forward (model.py)", peak / 2),
        ("_init_group (adam.py)", peak - peak / 2),
    ]
}

/// A scratch directory with `memgate.toml`, `snaps/` and `golden/`.
pub struct Workdir {
    pub tmp: tempfile::TempDir,
}

impl Workdir {
    pub fn new(config: &str) -> Workdir {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("snaps")).unwrap();
        std::fs::create_dir(tmp.path().join("golden")).unwrap();
        std::fs::write(tmp.path().join("memgate.toml"), config).unwrap();
        Workdir { tmp }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    pub fn write_summary(&self, rel: &str, s: &Summary) {
        let text = serde_json::to_string_pretty(s).unwrap();
        std::fs::write(self.path(rel), text).unwrap();
    }

    /// `snaps/<name>.json` at `peak` and `golden/<name>.json` at `base`.
    pub fn rank(&self, name: &str, base: Option<u64>, peak: u64) {
        let file = format!("{name}.pickle");
        self.write_summary(
            &format!("snaps/{name}.json"),
            &summary(&file, vec![device(0, peak, &sites(peak))]),
        );
        if let Some(b) = base {
            self.write_summary(
                &format!("golden/{name}.json"),
                &summary(&file, vec![device(0, b, &sites(b))]),
            );
        }
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// `memgate check …` in this directory, outside of GitHub Actions.
    pub fn check(&self) -> Command {
        let mut cmd = memgate();
        cmd.current_dir(self.tmp.path())
            .arg("check")
            .env("SOURCE_DATE_EPOCH", EPOCH)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_OUTPUT")
            .env_remove("NO_COLOR");
        cmd
    }
}

/// The standard budget: one target over `snaps/*.json` against `golden/`.
pub const CONFIG: &str = r#"[defaults]
tolerance = "5%"
noise-floor = "4 MiB"

[[target]]
name = "train"
snapshots = "snaps/*.json"
baseline = "golden/"

[target.budget]
overall-peak = "1 GiB"
reserved-peak = { limit = "2 GiB", level = "warn" }

[target.budget.category]
activation = "512 MiB"
"#;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/synthetic")
        .join(name)
}

/// A named pipe at `path` (for the tests that must not block on one).
pub fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

/// The JSON block of a page written by `--html`.
pub fn page_data(html: &str) -> serde_json::Value {
    let open = "<script type=\"application/json\" id=\"memgate-data\">";
    let json = &html[html.find(open).unwrap() + open.len()..];
    serde_json::from_str(&json[..json.find("</script>").unwrap()]).unwrap()
}

/// The `memgate` binary these tests run, with the environment inherited.
pub fn memgate() -> Command {
    Command::cargo_bin("memgate").unwrap()
}

/// `memgate` run from the repository root, outside any CI environment
/// (no GitHub step summary, output or annotations; no colour).
pub fn memgate_at_root() -> Command {
    let mut cmd = memgate();
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_ACTIONS")
        .env("NO_COLOR", "1");
    cmd
}

/// What `check --config examples/memgate-regressed.toml` prints (it fails:
/// exit 1), run at the repository's root.
pub fn regressed_example_stdout() -> String {
    let out = memgate_at_root()
        .args(["check", "--config", "examples/memgate-regressed.toml"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

/// The path of the `memgate` binary, for running it under another program.
pub fn memgate_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("memgate")
}

/// The JSON `memgate ARGS` prints, the command asserted to succeed.
pub fn json_of(args: &[&str]) -> serde_json::Value {
    let out = memgate()
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).unwrap()
}

/// `../shared/fixtures/real/NAME`, or `None` after saying loudly that the
/// test (`what`) did not run: the real snapshots stay out of the repository.
pub fn real_fixture(name: &str, what: &str) -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/real")
        .join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} not found (../shared absent): {what} did not run",
            p.display()
        );
        None
    }
}

/// The first device of `memgate peak --format json --top 100000 PATH`:
/// every stack group live at the allocated peak.
pub fn peak_device(path: &Path) -> serde_json::Value {
    let p = path.to_str().unwrap();
    let v = json_of(&["peak", "--format", "json", "--top", "100000", p]);
    v["snapshots"][0]["devices"][0].clone()
}
