//! The analysis commands as CI sees them: exit codes, stdout, stderr, files.

use crate::common;
use crate::common::json_of as json_out;
use crate::common::memgate;

use std::path::{Path, PathBuf};

use common::page_data;
use memgate::analysis::Figure;
use predicates::prelude::*;
use serde_json::Value;

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/synthetic")
        .join(name)
        .display()
        .to_string()
}

fn expected(name: &str) -> Value {
    let text = std::fs::read_to_string(fixture("expected.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v[name].clone()
}

#[test]
fn peak_prints_the_three_mosaic_lines_then_allocated_and_reserved_peak() {
    let exp = expected("main_proto4.pickle");
    let dynamic = exp["devices"][0]["figures"]["dynamic-peak"]
        .as_u64()
        .unwrap();
    memgate()
        .args(["peak", &fixture("main_proto4.pickle")])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "Total Peak Dynamic Memory Usage (Relative to Start): 176.08 MiB ({dynamic} bytes)"
        )))
        .stdout(predicate::str::contains("Total Static Memory Usage"))
        .stdout(predicate::str::contains(
            "Total Overall Peak Memory Usage (Dynamic + Static)",
        ))
        .stdout(predicate::str::contains(
            "allocated peak (MemoryViz active memory)",
        ))
        .stdout(predicate::str::contains("reserved peak (segments)"))
        .stdout(predicate::str::contains("Num of Calls: 9"));
}

#[test]
fn peak_json_has_schema_version_first_and_the_figures_in_bytes() {
    let path = fixture("v2_1_multidevice.pickle");
    let out = memgate()
        .args(["peak", "--format", "json", &path])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.trim_start().starts_with("{\n  \"schema_version\": 1"));
    let v: Value = serde_json::from_str(&text).unwrap();
    let exp = expected("v2_1_multidevice.pickle");
    let devices = v["snapshots"][0]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2, "both devices are reported");
    for (d, e) in devices.iter().zip(exp["devices"].as_array().unwrap()) {
        // The fragmentation figures come from fragmentation.py, checked in
        // tests/integration/fragmentation.rs; the rest from reference.py.
        let mut figures = d["figures"].as_object().unwrap().clone();
        figures.retain(|k, _| !Figure::from_id(k).is_some_and(Figure::is_fragmentation));
        assert_eq!(Value::Object(figures), e["figures"]);
        assert_eq!(d["peak-entry"], e["peak-entry"]);
        assert_eq!(d["trace-complete"], e["trace-complete"]);
    }
}

#[test]
fn an_unreadable_file_exits_2_and_the_other_files_are_still_printed() {
    memgate()
        .args(["peak", &fixture("rank0.pickle"), "no-such-file.pickle"])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("rank0.pickle"))
        .stdout(predicate::str::contains("Total Peak Dynamic"))
        .stderr(predicate::str::contains(
            "no-such-file.pickle: no such file",
        ));
}

#[test]
fn quoted_globs_are_expanded_by_memgate() {
    let pattern = fixture("rank*.pickle");
    let v = json_out(&["peak", "--format", "json", &pattern]);
    assert_eq!(v["snapshots"].as_array().unwrap().len(), 4);
}

#[test]
fn profile_with_mosaic_rules_reports_mosaic_category_names() {
    let v = json_out(&[
        "profile",
        "--rules",
        "mosaic",
        "--format",
        "json",
        &fixture("main_proto5.pickle"),
    ]);
    let d = &v["snapshots"][0]["devices"][0];
    let exp = expected("main_proto5.pickle");
    for (k, val) in exp["devices"][0]["mosaic-categories-at-dynamic-peak"]
        .as_object()
        .unwrap()
    {
        assert_eq!(&d["categories"]["at-dynamic-peak"][k], val, "{k}");
    }
    assert_eq!(d["categories"]["rules"], "mosaic");
}

#[test]
fn profile_text_lists_categories_in_binary_units_with_a_total() {
    memgate()
        .args(["profile", &fixture("rank0.pickle")])
        .assert()
        .success()
        .stdout(predicate::str::contains("rules: default"))
        .stdout(predicate::str::contains("optimizer-state"))
        .stdout(predicate::str::contains("MiB"))
        .stdout(predicate::str::contains("total"));
}

#[test]
fn print_rules_shows_the_default_table_without_needing_a_snapshot() {
    memgate()
        .args(["profile", "--print-rules"])
        .assert()
        .success()
        .stdout(predicate::str::contains("optimizer-state"))
        .stdout(predicate::str::contains("_init_group"))
        .stdout(predicate::str::contains("(skip)"));
}

#[test]
fn custom_rules_from_toml_are_tried_first_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    // `zz-adam` comes first in the file although it sorts last.
    std::fs::write(
        &rules,
        "[categories]\nzz-adam = \"adam\\\\.py\"\naa-optim = \"optim\"\n",
    )
    .unwrap();
    let v = json_out(&[
        "profile",
        "--format",
        "json",
        "--rules",
        rules.to_str().unwrap(),
        &fixture("main_proto4.pickle"),
    ]);
    let cats = &v["snapshots"][0]["devices"][0]["categories"];
    assert!(cats["peaks"]["zz-adam"].as_u64().unwrap() > 0);
    assert_eq!(cats["rules"], rules.to_str().unwrap());
    let sum: u64 = cats["at-allocated-peak"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        sum,
        v["snapshots"][0]["devices"][0]["figures"]["allocated-peak"]
            .as_u64()
            .unwrap()
    );
}

#[test]
fn a_bad_rules_file_exits_2_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "[categories]\nbroken = \"(unclosed\"\n").unwrap();
    memgate()
        .args([
            "profile",
            "--rules",
            rules.to_str().unwrap(),
            &fixture("rank0.pickle"),
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "categories.broken: not a valid regex",
        ));
}

#[test]
fn profile_html_is_one_self_contained_page_under_a_strict_policy_with_its_data_inline() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("profile.html");
    memgate()
        .args([
            "profile",
            "--html",
            page.to_str().unwrap(),
            &fixture("main_proto4.pickle"),
        ])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-"
    ));
    // The data block and the page's own script, nothing loaded from anywhere.
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert!(
        !html.contains(" src=") && !html.contains(" href="),
        "{html}"
    );
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(
        !without_ns.contains("http://") && !without_ns.contains("https://"),
        "nothing fetched"
    );
    let open = "<script type=\"application/json\" id=\"memgate-data\">";
    let json = &html[html.find(open).unwrap() + open.len()..];
    let json = &json[..json.find("</script>").unwrap()];
    let data: Value = serde_json::from_str(json).unwrap();
    let device = &data["devices"][0];
    assert_eq!(device["snapshot"], fixture("main_proto4.pickle").as_str());
    let doc = memgate()
        .args([
            "profile",
            "--format",
            "json",
            &fixture("main_proto4.pickle"),
        ])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&doc.stdout).unwrap();
    let figures = &doc["snapshots"][0]["devices"][0]["figures"];
    let marks = device["marks"].as_array().unwrap();
    for id in ["allocated-peak", "dynamic-peak", "reserved-peak"] {
        let mark = marks.iter().find(|m| m["figure"] == id);
        let mark = mark.unwrap_or_else(|| panic!("no {id} marker in {marks:?}"));
        assert_eq!(mark["bytes"], figures[id].to_string(), "{id}");
    }
    // The allocated peak's sample is in the series, at the figure.
    let moment = &marks
        .iter()
        .find(|m| m["figure"] == "allocated-peak")
        .unwrap()["moment"];
    let at = &device["moments"][usize::try_from(moment.as_u64().unwrap()).unwrap()]["entry"];
    let i = device["entry"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e == at)
        .unwrap();
    let total: u64 = device["cats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["bytes"][i].as_u64().unwrap())
        .sum();
    assert_eq!(total, figures["allocated-peak"].as_u64().unwrap());
}

/// The JSON block of a page written by `--html`.
#[test]
fn profile_html_marks_the_window_and_its_peaks_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("w.html");
    let snap = fixture("rank0.pickle");
    memgate()
        .args([
            "profile",
            "--window",
            "#100..#300",
            "--html",
            page.to_str().unwrap(),
            &snap,
        ])
        .assert()
        .success();
    let data = page_data(&std::fs::read_to_string(&page).unwrap());
    let d = &data["devices"][0];
    let (x0, x1) = (
        d["window"]["x0"].as_i64().unwrap(),
        d["window"]["x1"].as_i64().unwrap(),
    );
    assert!(x0 < x1, "{}", d["window"]);
    for m in d["marks"].as_array().unwrap() {
        let x = m["x"].as_i64().unwrap();
        assert!(x0 <= x && x <= x1, "a window's peak outside it: {m}");
    }
}

#[test]
fn diff_html_draws_the_baselines_iteration_k_over_the_new_runs_iteration_k() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("diff.html");
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
    let (base, new) = (
        format!("{ex}/snapshots/rank0.pickle"),
        format!("{ex}/snapshots-regressed/rank0.pickle"),
    );
    memgate()
        .args(["diff", "--html", page.to_str().unwrap(), &base, &new])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    let device = &page_data(&html)["devices"][0];
    let overlay = &device["baseline"];
    assert_eq!(overlay["aligned"], "iteration and phase");
    assert!(
        html.contains("the n-th span of a phase over the n-th"),
        "{html}"
    );
    assert!(html.contains("iteration k over iteration k"), "{html}");
    let xs: Vec<i64> = overlay["x"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    assert!(xs.windows(2).all(|w| w[0] <= w[1]), "still in time order");
    // BASE's peak (iteration 1) lands inside NEW's iteration 1.
    let at = overlay["allocated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap());
    let peak_at = at
        .enumerate()
        .max_by_key(|(i, v)| (*v, std::cmp::Reverse(*i)))
        .unwrap()
        .0;
    let it1 = device["bands"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["iteration"] == true && b["name"] == "1")
        .unwrap();
    let x = xs[peak_at];
    assert!(
        it1["x0"].as_i64().unwrap() <= x && x <= it1["x1"].as_i64().unwrap(),
        "{x} not in {it1}"
    );
}

#[test]
fn diff_html_draws_the_new_run_with_the_baseline_over_it_and_the_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("diff.html");
    let (base, new) = (fixture("rank0.pickle"), fixture("rank0_regressed.pickle"));
    memgate()
        .args(["diff", "--html", page.to_str().unwrap(), &base, &new])
        .assert()
        .success()
        .stdout(predicate::str::contains("activation"));
    let html = std::fs::read_to_string(&page).unwrap();
    let data = page_data(&html);
    let device = &data["devices"][0];
    assert_eq!(device["snapshot"], new.as_str());
    let overlay = &device["baseline"];
    assert_eq!(overlay["snapshot"], base.as_str());
    // No iterations to align by: its own extent stretched onto NEW's.
    assert_eq!(overlay["aligned"], "extent");
    assert_eq!(overlay["aligned_entries"], "extent");
    let n = overlay["x"].as_array().unwrap().len();
    assert!(n > 1 && overlay["allocated"].as_array().unwrap().len() == n);
    // The baseline's highest sample is its allocated peak.
    let peak = |p: &str| {
        let out = memgate()
            .args(["peak", "--format", "json", p])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["snapshots"][0]["devices"][0]["figures"]["allocated-peak"]
            .as_u64()
            .unwrap()
    };
    let highest = overlay["allocated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .max();
    assert_eq!(highest, Some(peak(&base)));
    assert!(html.contains("<caption>Figures</caption>"), "{html}");
    assert!(html.contains("grew"), "the site that grew: {html}");

    // A summary baseline: the deltas, and no line it cannot draw.
    memgate()
        .args(["summarize", "-o", dir.path().to_str().unwrap(), &base])
        .assert()
        .success();
    let summary = dir.path().join("rank0.json");
    memgate()
        .args(["diff", "--html", page.to_str().unwrap()])
        .arg(&summary)
        .arg(&new)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(page_data(&html)["devices"][0].get("baseline").is_none());
    assert!(html.contains("it is a summary"), "{html}");
}

#[test]
fn diff_shows_the_regressed_category_and_the_site_that_grew() {
    memgate()
        .args([
            "diff",
            &fixture("rank0.pickle"),
            &fixture("rank0_regressed.pickle"),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("allocated-peak"))
        .stdout(predicate::str::contains("+12 MiB"))
        .stdout(predicate::str::is_match(r"activation .*\+19\.0%").unwrap())
        .stdout(predicate::str::contains("grew     forward (model.py)"));
}

#[test]
fn summarize_writes_one_summary_per_snapshot_that_diff_and_read_summary_accept() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("golden");
    memgate()
        .args([
            "summarize",
            &fixture("rank0.pickle"),
            &fixture("rank1.pickle"),
            "-o",
        ])
        .arg(&out)
        .assert()
        .success();
    let file: PathBuf = out.join("rank0.json");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("{\n  \"schema_version\": 1,\n  \"kind\": \"memgate-summary\""));
    assert!(text.len() < 16 * 1024, "a small file: {} bytes", text.len());
    let s = memgate::baseline::read_summary(&file).unwrap();
    assert!(
        s.devices[0].stacks_at_peak.is_empty(),
        "no stack groups in summaries"
    );
    assert!(!s.devices[0].sites_at_peak.is_empty());
    assert_eq!(s.provenance.file, "rank0.pickle");
    assert_eq!(s.provenance.sha256.len(), 64);
    assert_eq!(s.provenance.format, "pickle");
    assert_eq!(
        s.devices[0].figures.allocated_peak,
        expected("rank0.pickle")["devices"][0]["figures"]["allocated-peak"]
            .as_u64()
            .unwrap()
    );
    assert!(out.join("rank1.json").is_file());
    memgate()
        .args([
            "diff",
            file.to_str().unwrap(),
            &fixture("rank0_regressed.pickle"),
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("+12 MiB"));
}

#[test]
fn read_summary_refuses_other_json_and_other_schema_versions() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(
        &other,
        r#"{"schema_version": 1, "kind": "memgate-verdict"}"#,
    )
    .unwrap();
    let e = memgate::baseline::read_summary(&other)
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a memgate summary"), "{e}");
    let future = dir.path().join("future.json");
    std::fs::write(
        &future,
        r#"{"schema_version": 9, "kind": "memgate-summary"}"#,
    )
    .unwrap();
    let e = memgate::baseline::read_summary(&future)
        .unwrap_err()
        .to_string();
    assert!(e.contains("schema_version 9"), "{e}");
    let snapshot = dir.path().join("snap.json");
    std::fs::write(&snapshot, r#"{"segments": [], "device_traces": []}"#).unwrap();
    assert!(memgate::baseline::read_summary(&snapshot).is_err());
}

#[test]
fn the_sha256_in_the_provenance_is_the_files_digest() {
    let s = memgate::commands::summarize::summarize_file(
        Path::new(&fixture("npu.pickle")),
        &memgate::analysis::RuleSet::builtin_default(),
        5,
    )
    .unwrap();
    let out = std::process::Command::new("sha256sum")
        .arg(fixture("npu.pickle"))
        .output();
    if let Ok(out) = out {
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            text.split_whitespace().next(),
            Some(s.provenance.sha256.as_str())
        );
    }
    assert!(s.devices[0].sites_at_peak.len() <= 5);
}

#[test]
fn an_inconsistent_snapshot_is_analysed_with_warnings_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("odd.json");
    // A free of an address never allocated, a block that does not tile its
    // segment, and time_us going backwards.
    std::fs::write(
        &path,
        r#"{"segments": [{"device": 0, "address": 0, "total_size": 1000, "stream": 0,
              "segment_type": "large", "frames": [],
              "blocks": [{"size": 600, "state": "active_allocated", "requested_size": 500,
                          "frames": []}]}],
            "device_traces": [[
              {"action": "alloc", "addr": 1000000, "size": 100, "stream": 0, "time_us": 10, "frames": []},
              {"action": "free_completed", "addr": 5000, "size": 50, "stream": 0, "time_us": 5, "frames": []}]]}"#,
    )
    .unwrap();
    let out = memgate()
        .args(["peak", "--format", "json", path.to_str().unwrap()])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let d = &v["snapshots"][0]["devices"][0];
    assert_eq!(d["figures"]["dynamic-peak"], 100);
    assert_eq!(d["figures"]["static-memory"], 600);
    assert_eq!(
        d["figures"]["allocated-peak"], 650,
        "500 requested + 50 freed + 100"
    );
    assert_eq!(d["figures"]["reserved-peak"], 1000);
    assert_eq!(d["trace-complete"], false);
    assert_eq!(d["peak-time-us"]["allocated-peak"], 10);
    let warnings = d["warnings"].to_string();
    assert!(
        warnings.contains("1 free of addresses not allocated"),
        "{warnings}"
    );
    assert!(
        warnings.contains("do not add up to the segment size"),
        "{warnings}"
    );
    assert!(warnings.contains("time_us decreases 1 time;"), "{warnings}");
    memgate()
        .args(["peak", path.to_str().unwrap()])
        .assert()
        .success()
        .stdout(predicate::str::contains("warning: "));
}
