//! `memgate init`: a budget file and golden summaries from the snapshots
//! one has, on which `check` then passes, and fails on the regressed twin.
//! The budgets expected are recomputed here from the committed golden
//! summaries of the bundled example, by other arithmetic than memgate's.

use std::path::Path;

use crate::common;

/// The largest `figure` over the devices of the committed golden summaries.
fn committed_max(figure: &str) -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/golden");
    let mut max = 0;
    for r in ["rank0.json", "rank1.json"] {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(r)).unwrap()).unwrap();
        for d in v["devices"].as_array().unwrap() {
            max = max.max(d["figures"][figure].as_u64().unwrap());
        }
    }
    max
}

/// `bytes × (1 + margin%)`, rounded up to two significant digits of its
/// binary unit: the smallest of the candidates 1.0, 1.1, … 9.9, 10, 11, …
/// 99, 100, 110, … 990, 1000, 1100 … of that unit that is not below it.
fn expected_budget(bytes: u64, margin: f64) -> String {
    let want = (bytes as f64 * (100.0 + margin) / 100.0).ceil();
    let (unit, name) = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")]
        .into_iter()
        .find(|(u, _)| want >= *u as f64)
        .unwrap();
    let x = want / unit as f64;
    let mut candidates = Vec::new();
    for scale in [0.1, 1.0, 10.0, 100.0] {
        for k in 10..100 {
            candidates.push(f64::from(k) * scale);
        }
    }
    let pick = candidates
        .into_iter()
        .find(|c| c * unit as f64 >= want - 0.5 && *c >= x - 1e-9)
        .unwrap();
    let shown = format!("{pick:.1}");
    let shown = shown.strip_suffix(".0").unwrap_or(&shown);
    format!("{shown} {name}")
}

fn init_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::memgate()
        .current_dir(dir)
        .arg("init")
        .args(args)
        .output()
        .unwrap()
}

fn copy_examples(dir: &Path) {
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    for sub in ["snapshots", "snapshots-regressed"] {
        std::fs::create_dir(dir.join(sub)).unwrap();
        for r in ["rank0.pickle", "rank1.pickle"] {
            std::fs::copy(ex.join(sub).join(r), dir.join(sub).join(r)).unwrap();
        }
    }
}

#[test]
fn init_then_check_is_green_on_those_snapshots_and_red_on_the_regressed_twin() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_examples(dir);
    let out = init_in(dir, &["snapshots/rank*.pickle"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("wrote golden/rank0.json"), "{said}");
    assert!(
        said.contains("memgate check --config memgate.toml"),
        "{said}"
    );

    let toml = std::fs::read_to_string(dir.join("memgate.toml")).unwrap();
    let allocated = expected_budget(committed_max("allocated-peak"), 10.0);
    assert_eq!(allocated, "230 MiB", "the bundled example's figure moved");
    assert!(
        toml.contains(&format!("allocated-peak = \"{allocated}\"")),
        "{toml}"
    );
    let reserved = expected_budget(committed_max("reserved-peak"), 10.0);
    assert!(
        toml.contains(&format!(
            "reserved-peak = {{ limit = \"{reserved}\", level = \"warn\" }}"
        )),
        "{toml}"
    );
    assert!(toml.contains("oom-events = 0"), "{toml}");
    // The golden summaries are those `summarize` writes.
    for r in ["rank0", "rank1"] {
        let g: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("golden/{r}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(g["kind"], "memgate-summary");
    }

    let check = |extra: &[&str]| {
        common::memgate()
            .current_dir(dir)
            .arg("check")
            .args(extra)
            .env_remove("GITHUB_ACTIONS")
            .output()
            .unwrap()
    };
    let green = check(&[]);
    assert_eq!(
        green.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&green.stdout)
    );
    let red = check(&["snapshots-regressed/rank*.pickle"]);
    let text = String::from_utf8_lossy(&red.stdout);
    assert_eq!(red.status.code(), Some(1), "{text}");
    assert!(
        text.contains("FAIL main rank0 dev0 allocated-, dynamic-, overall-peak +12 MiB: 212.10 MiB of 230 MiB"),
        "{text}"
    );

    // A wider margin gives a wider budget, and an existing file is kept.
    let again = init_in(dir, &["snapshots/rank*.pickle", "--margin", "25%"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("memgate.toml exists"));
    assert_eq!(
        std::fs::read_to_string(dir.join("memgate.toml")).unwrap(),
        toml
    );
    let forced = init_in(
        dir,
        &["snapshots/rank*.pickle", "--margin", "25%", "--force"],
    );
    assert!(forced.status.success());
    let toml = std::fs::read_to_string(dir.join("memgate.toml")).unwrap();
    let wider = expected_budget(committed_max("allocated-peak"), 25.0);
    assert!(
        toml.contains(&format!("allocated-peak = \"{wider}\"")),
        "{toml}"
    );
}

#[test]
fn a_budget_file_written_elsewhere_finds_the_snapshots_and_golden_summaries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    copy_examples(dir);
    let out = init_in(
        dir,
        &[
            "--config",
            "ci/memgate.toml",
            "--golden",
            "ci/golden",
            "snapshots/rank*.pickle",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let green = common::memgate()
        .current_dir(dir)
        .args(["check", "--config", "ci/memgate.toml"])
        .output()
        .unwrap();
    assert_eq!(
        green.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&green.stdout)
    );
}
