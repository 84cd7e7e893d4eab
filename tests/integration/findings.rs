//! One finding per regression and its cause (issue 21 items 1-3): the
//! bundled regressed example prints one FAIL line per rank, and the
//! generated eager-vs-compiled pair (tests/fixtures/gen/cause_pair.py)
//! shows its vanished compiled kernel in JUnit with the bytes the
//! generator put there.

use std::path::{Path, PathBuf};

use crate::common::{memgate_at_root, regressed_example_stdout, Workdir};

fn cause_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cause")
}

/// `-120 MiB`: a whole number of MiB as the reports write it.
fn mib(bytes: i64) -> String {
    assert_eq!(bytes % (1 << 20), 0, "the generator allocates whole MiB");
    format!("{:+} MiB", bytes >> 20)
}

#[test]
fn the_regressed_example_prints_one_fail_line_per_rank_naming_figures_bytes_headroom_and_site() {
    let out = regressed_example_stdout();
    let fails: Vec<&str> = out.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert_eq!(fails.len(), 2, "{out}");
    for (rank, line) in fails.iter().enumerate() {
        assert!(
            line.starts_with(&format!(
                "FAIL toy-gpt-2rank rank{rank} dev{rank} allocated-, dynamic-, overall-, \
                 steady-state-peak, phase.## forward ##.allocated-peak +12 MiB: \
                 212.10 MiB of 208 MiB (102%, over by 4.10 MiB); grew +12 MiB"
            )),
            "{line}"
        );
        assert!(line.contains("; top site: +12 MiB forward ("), "{line}");
    }
    assert!(out.contains("10 failed (2 regressions)"), "{out}");
}

#[test]
fn the_json_keeps_every_check_marks_the_echoes_and_counts_regressions() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("v.json");
    memgate_at_root()
        .args([
            "check",
            "--config",
            "examples/memgate-regressed.toml",
            "--json",
        ])
        .arg(&json)
        .assert()
        .code(1);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["counts"]["fail"], 10);
    assert_eq!(v["counts"]["regressions"], 2);
    let checks = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"];
    let by_id = |id: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no {id}"))
            .clone()
    };
    let lead = by_id("allocated-peak");
    assert_eq!(lead["regression"]["figures"].as_array().unwrap().len(), 5);
    assert_eq!(lead["regression"]["change"], 12 << 20);
    assert_eq!(lead["budget-written"], "208 MiB");
    assert_eq!(
        lead["headroom"]["left"],
        (208i64 << 20) - lead["current"].as_i64().unwrap()
    );
    for echo in ["dynamic-peak", "overall-peak", "steady-state-peak"] {
        assert_eq!(by_id(echo)["echo-of"], "allocated-peak", "{echo}");
        assert_eq!(by_id(echo)["status"], "fail", "{echo}");
    }
    let used = by_id("reserved-peak")["headroom"]["fraction-used"]
        .as_f64()
        .unwrap();
    assert!((used - 238.0 / 256.0).abs() < 1e-9, "{used}");
}

#[test]
fn the_vanished_compiled_kernel_of_an_eager_run_is_in_junit_with_the_generators_bytes() {
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cause_dir().join("expected.json")).unwrap())
            .unwrap();
    let config = format!(
        "[[target]]\nname = \"train\"\nsnapshots = {:?}\nbaseline = {:?}\n\n\
         [target.budget]\nallocated-peak = \"0.3 GB\"\n",
        cause_dir().join("eager.pickle").display().to_string(),
        cause_dir().join("compiled.pickle").display().to_string(),
    );
    let w = Workdir::new(&config);
    w.check().args(["--junit", "j.xml"]).assert().code(1);
    let xml = w.read("j.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failure = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("failure")
                && n.parent().unwrap().attribute("name") == Some("dev0.allocated-peak")
        })
        .unwrap_or_else(|| panic!("no allocated-peak failure:\n{xml}"));
    let body = failure.text().unwrap();
    let change = expected["change"].as_i64().unwrap();
    assert!(
        body.contains(&format!("(the rows add up to {})", mib(change))),
        "{body}"
    );
    let vanished = &expected["vanished"];
    let row = format!(
        "{} vanished {}",
        mib(vanished["change"].as_i64().unwrap()),
        vanished["site"].as_str().unwrap()
    );
    assert!(
        body.lines().any(|l| l.trim() == row),
        "{row} not in:\n{body}"
    );
    // Every row the generator changed is listed, and nothing is left over.
    for (site, bytes) in expected["rows"].as_object().unwrap() {
        let bytes = mib(bytes.as_i64().unwrap());
        assert!(
            body.lines()
                .any(|l| l.trim().starts_with(&bytes) && l.ends_with(site.as_str())),
            "{site} {bytes} not in:\n{body}"
        );
    }
    assert!(
        body.lines().any(|l| l.trim() == "+0 B other sites"),
        "{body}"
    );
    // The budget as written, in binary units, and the share used.
    let message = failure.attribute("message").unwrap();
    assert!(
        message.contains("of \"0.3 GB\" = 286.10 MiB ("),
        "{message}"
    );
}

#[test]
fn the_real_nightly_pair_lists_sites_that_shrank_or_vanished_in_junit() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    let (new, old) = (
        dir.join("select_n_04d383c.pickle"),
        dir.join("select_n_1f2f548.pickle"),
    );
    if !new.is_file() || !old.is_file() {
        eprintln!(
            "SKIPPED: ../shared not found at {}: the real-pair cause test did not run",
            dir.display()
        );
        return;
    }
    let config = format!(
        "[[target]]\nname = \"nightly\"\nsnapshots = {:?}\nbaseline = {:?}\n",
        new.display().to_string(),
        old.display().to_string()
    );
    let w = Workdir::new(&config);
    w.check().args(["--junit", "j.xml"]).assert().code(1);
    let xml = w.read("j.xml");
    // The bert model's forward of the baseline is gone from the llama run.
    assert!(
        xml.contains("vanished forward (lib/transformers/models/bert/modeling_bert.py)"),
        "{xml}"
    );
    assert!(xml.contains("other sites"), "{xml}");
}
