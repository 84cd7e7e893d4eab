//! `memgate check` on real (synthetic) pickle snapshots: analysed on the
//! fly, against snapshot baselines and against `summarize` goldens.

use crate::common;

use common::{fixture, Workdir};
use predicates::str::contains;

const CONFIG: &str = r#"[defaults]
tolerance = "5%"
noise-floor = "1 MiB"

[[target]]
name = "gpt"
baseline = "golden/"
key = '(rank\d+)'

[target.budget]
allocated-peak = "1 GiB"
"#;

fn copy(w: &Workdir, name: &str, to: &str) {
    std::fs::copy(fixture(name), w.path(to)).unwrap();
}

#[test]
fn regressed_pickles_fail_against_snapshot_baselines_and_pass_against_themselves() {
    let w = Workdir::new(CONFIG);
    copy(&w, "rank0.pickle", "golden/rank0.pickle");
    copy(&w, "rank1.pickle", "golden/rank1.pickle");
    copy(&w, "rank0_regressed.pickle", "snaps/rank0_regressed.pickle");
    copy(&w, "rank1_regressed.pickle", "snaps/rank1_regressed.pickle");
    w.check()
        .args([
            "snaps/rank0_regressed.pickle",
            "snaps/rank1_regressed.pickle",
        ])
        .args(["--markdown", "report.md", "--junit", "junit.xml"])
        .assert()
        .code(1)
        .stdout(contains(
            "FAIL gpt rank0 dev0 allocated-, dynamic-, overall-peak +12 MiB: 212.10 MiB of 1 GiB \
             (21%, 811.90 MiB left); grew +12 MiB (6.0%)",
        ))
        .stdout(contains(
            "FAIL gpt rank1 dev1 allocated-, dynamic-, overall-peak +12 MiB",
        ));
    roxmltree::Document::parse(&w.read("junit.xml")).unwrap();
    insta::assert_snapshot!("pickles_markdown", w.read("report.md"));
    w.check()
        .args(["golden/rank0.pickle", "golden/rank1.pickle"])
        .assert()
        .code(0);
}

#[test]
fn summaries_written_by_summarize_are_baselines_for_pickles() {
    let w = Workdir::new(CONFIG);
    copy(&w, "rank0.pickle", "rank0.pickle");
    copy(&w, "rank0_regressed.pickle", "snaps/rank0_regressed.pickle");
    common::memgate()
        .current_dir(w.path(""))
        .args(["summarize", "rank0.pickle", "-o", "golden"])
        .assert()
        .code(0);
    w.check()
        .arg("snaps/rank0_regressed.pickle")
        .assert()
        .code(1)
        .stdout(contains(
            "FAIL gpt rank0 dev0 allocated-, dynamic-, overall-peak +12 MiB: 212.10 MiB of 1 GiB \
             (21%, 811.90 MiB left); grew +12 MiB (6.0%)",
        ));
}

#[test]
fn a_truncated_pickle_is_an_error_and_the_good_pickle_is_still_judged_in_full() {
    let w = Workdir::new(CONFIG);
    copy(&w, "rank0.pickle", "golden/rank0.pickle");
    copy(&w, "rank0_regressed.pickle", "snaps/rank0_regressed.pickle");
    let bytes = std::fs::read(fixture("rank1_regressed.pickle")).unwrap();
    std::fs::write(
        w.path("snaps/rank1_regressed.pickle"),
        &bytes[..bytes.len() - 100],
    )
    .unwrap();
    w.check()
        .arg("snaps/*.pickle")
        .args(["--junit", "junit.xml", "--json", "verdict.json"])
        .assert()
        .code(2)
        .stderr(contains("rank1_regressed.pickle"));
    let xml = w.read("junit.xml");
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let errors: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("error"))
        .collect();
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].parent().unwrap().attribute("classname"),
        Some("gpt.rank1")
    );
    let rank0 = doc
        .descendants()
        .filter(|n| n.attribute("classname") == Some("gpt.rank0"))
        .count();
    assert_eq!(rank0, 6, "every gated figure of rank0 is a case:\n{xml}");
}

#[test]
fn an_oom_snapshot_fails_and_a_wrapped_trace_is_flagged_as_lower_bounds() {
    let w = Workdir::new("[[target]]\nname = \"w\"\n");
    copy(&w, "ring_wrapped.pickle", "snaps/ring_wrapped.pickle");
    copy(&w, "oom_snapshot.pickle", "snaps/oom_snapshot.pickle");
    w.check()
        .arg("snaps/*.pickle")
        .args(["--markdown", "report.md", "--json", "verdict.json"])
        .assert()
        // The wrapped trace's OOM count is a lower bound: 0 is not judged.
        .code(2)
        .stdout(contains(
            "FAIL w oom_snapshot dev0 oom-events: 2 OOM events, more than the 0 allowed by the default budget",
        ))
        .stdout(contains(
            "ERROR w ring_wrapped dev0 oom-events: not judged: the trace started mid-run",
        ));
    let md = w.read("report.md");
    // The `_` in the name is escaped: it would end the italics.
    assert!(md.contains(r"_ring\_wrapped dev0: the trace started mid-run (ring buffer wrapped), so its figures are lower bounds._"));
    let v: serde_json::Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    let wrapped = &v["targets"][0]["snapshots"][1]["devices"][0];
    assert_eq!(wrapped["trace-complete"], false);
    assert!(wrapped["warnings"][0]
        .as_str()
        .unwrap()
        .contains("lower bounds"));
}
