//! Memory pools (docs/figures.md#pools): each pool's figures against the
//! generator's own (`tests/fixtures/gen/pools.py`, from the simulator's
//! state, not a replay), pool budgets and baselines in `check`, and the
//! pool tables of the Markdown report and the pages.

use std::path::PathBuf;

use crate::common;

use common::{json_of, memgate, Workdir};
use serde_json::{json, Value};

fn pools_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/pools")
        .join(name)
}

fn expected() -> Value {
    let text = std::fs::read_to_string(pools_fixture("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Device 0 of `memgate peak --format json FILE`.
fn device(file: &str) -> Value {
    let path = pools_fixture(file);
    let v = json_of(&["peak", "--format", "json", path.to_str().unwrap()]);
    v["snapshots"][0]["devices"][0].clone()
}

/// The pool named `name` in a device's report.
fn pool<'a>(d: &'a Value, name: &str) -> &'a Value {
    let pools = d["pools"].as_array().expect("the device has pools");
    (pools.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no pool {name}: {pools:?}"))
}

#[test]
fn each_pools_figures_equal_the_generators_with_and_without_pool_ids_on_entries() {
    let all = expected();
    for file in [
        "pools.pickle",
        "pools_graph_regressed.pickle",
        "pools_segments_only.pickle",
    ] {
        let want = &all[file];
        let d = device(file);
        assert_eq!(
            d["figures"]["allocated-peak"], want["allocated-peak"],
            "{file}"
        );
        assert_eq!(
            d["figures"]["reserved-peak"], want["reserved-peak"],
            "{file}"
        );
        let wanted = want["pools"].as_object().unwrap();
        assert_eq!(
            d["pools"].as_array().unwrap().len(),
            wanted.len(),
            "{file}: {}",
            d["pools"]
        );
        for (name, figures) in wanted {
            let got = pool(&d, name);
            for (figure, value) in figures.as_object().unwrap() {
                assert_eq!(&got[figure], value, "{file}: pool {name} {figure}");
            }
        }
    }
}

#[test]
fn pools_are_named_by_kind_from_the_id_and_the_allocating_stacks() {
    let d = device("pools.pickle");
    let kinds: Vec<(String, String)> = (d["pools"].as_array().unwrap().iter())
        .map(|p| {
            (
                p["name"].as_str().unwrap().into(),
                p["kind"].as_str().unwrap().into(),
            )
        })
        .collect();
    let pair = |n: &str, k: &str| (n.to_string(), k.to_string());
    assert_eq!(
        kinds,
        [
            pair("default", "default"),
            pair("mempool-1", "mempool"),
            pair("cudagraph-tree-2", "cudagraph-tree"),
            pair("cuda-graph-1", "cuda-graph"),
        ]
    );
}

#[test]
fn the_pools_at_the_device_peaks_add_up_to_the_device_figures() {
    for file in [
        "pools.pickle",
        "pools_segments_only.pickle",
        "pools_unplaced.pickle",
    ] {
        let d = device(file);
        let sum = |key: &str| -> u64 {
            (d["pools"].as_array().unwrap().iter())
                .map(|p| p[key].as_u64().unwrap())
                .sum()
        };
        assert_eq!(
            sum("at-allocated-peak"),
            d["figures"]["allocated-peak"].as_u64().unwrap(),
            "{file}"
        );
        assert_eq!(
            sum("at-reserved-peak"),
            d["figures"]["reserved-peak"].as_u64().unwrap(),
            "{file}"
        );
    }
}

#[test]
fn memory_no_entry_or_segment_places_is_an_unknown_pool_and_the_others_are_at_most_the_truth() {
    let d = device("pools_unplaced.pickle");
    let truth = &expected()["pools_unplaced.pickle"]["pools"];
    let unknown = pool(&d, "unknown");
    assert_eq!(unknown["kind"], "unknown");
    assert_eq!(unknown["id"], Value::Null);
    assert!(unknown["reserved-peak"].as_u64().unwrap() > 0);
    for (name, figures) in truth.as_object().unwrap() {
        let got = pool(&d, name);
        for figure in ["allocated-peak", "reserved-peak"] {
            assert!(
                got[figure].as_u64() <= figures[figure].as_u64(),
                "{name} {figure}"
            );
        }
    }
}

/// One target over `snaps/run.pickle`, with `golden/` as baseline when
/// `baseline`, and `budget` appended.
fn config(baseline: bool, budget: &str) -> String {
    let golden = if baseline {
        "baseline = \"golden/\"\n"
    } else {
        ""
    };
    format!(
        "[defaults]\ntolerance = \"5%\"\nnoise-floor = \"1 MiB\"\n\n[[target]]\nname = \"graphs\"\n\
         snapshots = \"snaps/run.pickle\"\n{golden}\n{budget}"
    )
}

/// The checks of the verdict's first device, by id.
fn checks(w: &Workdir) -> Vec<Value> {
    let v: Value = serde_json::from_str(&w.read("verdict.json")).unwrap();
    v["targets"][0]["snapshots"][0]["devices"][0]["checks"]
        .as_array()
        .unwrap()
        .clone()
}

fn check_of<'a>(checks: &'a [Value], id: &str) -> &'a Value {
    (checks.iter().find(|c| c["id"] == id)).unwrap_or_else(|| panic!("no check {id}: {checks:?}"))
}

const GRAPH_BUDGET: &str = r#"[target.budget]
allocated-peak = "64 MiB"
reserved-peak = "256 MiB"

[target.budget.pool."cuda-graph-1"]
allocated-peak = "18 MiB"
"#;

#[test]
fn a_regression_confined_to_the_graph_pool_fails_its_pool_budget_by_name_while_the_device_totals_pass(
) {
    let w = Workdir::new(&config(false, GRAPH_BUDGET));
    std::fs::copy(pools_fixture("pools.pickle"), w.path("snaps/run.pickle")).unwrap();
    w.check().args(["--json", "verdict.json"]).assert().code(0);
    let graph = expected()["pools_graph_regressed.pickle"]["pools"]["cuda-graph-1"]
        ["allocated-peak"]
        .clone();
    std::fs::copy(
        pools_fixture("pools_graph_regressed.pickle"),
        w.path("snaps/run.pickle"),
    )
    .unwrap();
    let out = w
        .check()
        .args(["--json", "verdict.json", "--junit", "junit.xml"])
        .assert()
        .code(1);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
    assert!(
        stdout.contains("FAIL graphs run dev0 pool.cuda-graph-1.allocated-peak"),
        "{stdout}"
    );
    let checks = checks(&w);
    let failed = check_of(&checks, "pool.cuda-graph-1.allocated-peak");
    assert_eq!(failed["status"], "fail");
    assert_eq!(failed["current"], graph);
    for id in ["allocated-peak", "reserved-peak"] {
        assert_eq!(check_of(&checks, id)["status"], "pass", "{id}");
    }
    assert!(w
        .read("junit.xml")
        .contains("pool.cuda-graph-1.allocated-peak"));
}

#[test]
fn a_pool_budget_never_passes_while_memory_lies_in_no_known_pool() {
    let budget = "[target.budget.pool.\"cuda-graph-1\"]\nallocated-peak = \"1 GiB\"\n";
    let w = Workdir::new(&config(false, budget));
    std::fs::copy(
        pools_fixture("pools_unplaced.pickle"),
        w.path("snaps/run.pickle"),
    )
    .unwrap();
    w.check()
        .args(["--json", "verdict.json"])
        .assert()
        .failure();
    let checks = checks(&w);
    let c = check_of(&checks, "pool.cuda-graph-1.allocated-peak");
    assert_ne!(c["status"], "pass", "{c}");
    let kinds: Vec<&str> = (c["findings"].as_array().unwrap().iter())
        .filter_map(|f| f["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"pool-unplaced"), "{kinds:?}");
}

#[test]
fn a_budget_naming_a_pool_the_device_lacks_is_an_error_listing_its_pools() {
    let budget = "[target.budget.pool.\"cuda-graph-7\"]\nreserved-peak = \"1 GiB\"\n";
    let w = Workdir::new(&config(false, budget));
    std::fs::copy(pools_fixture("pools.pickle"), w.path("snaps/run.pickle")).unwrap();
    w.check().args(["--json", "verdict.json"]).assert().code(2);
    let checks = checks(&w);
    let c = check_of(&checks, "pool.cuda-graph-7.reserved-peak");
    assert_eq!(c["status"], "error");
    assert_eq!(c["findings"][0]["kind"], "no-such-pool");
    assert_eq!(
        c["findings"][0]["pools"],
        json!(["default", "mempool-1", "cudagraph-tree-2", "cuda-graph-1"])
    );
}

#[test]
fn a_pool_that_appears_or_vanishes_since_the_baseline_is_reported_as_such() {
    let plain = common::fixture("main_proto4.pickle");
    let pools = pools_fixture("pools.pickle");
    for (run, golden, kind) in [
        (&pools, &plain, "pool-appeared"),
        (&plain, &pools, "pool-vanished"),
    ] {
        let w = Workdir::new(&config(true, ""));
        std::fs::copy(run, w.path("snaps/run.pickle")).unwrap();
        std::fs::copy(golden, w.path("golden/run.pickle")).unwrap();
        // The device figures differ too; only the pool checks matter here.
        let _ = w.check().args(["--json", "verdict.json"]).assert();
        let checks = checks(&w);
        let c = check_of(&checks, "pool.cuda-graph-1.allocated-peak");
        let kinds: Vec<&str> = (c["findings"].as_array().unwrap().iter())
            .filter_map(|f| f["kind"].as_str())
            .collect();
        assert!(kinds.contains(&kind), "{kind}: {c}");
        assert_eq!(c["status"], "reported", "{c}");
    }
}

#[test]
fn the_markdown_report_and_both_pages_show_the_pool_split() {
    let w = Workdir::new(&config(false, GRAPH_BUDGET));
    std::fs::copy(pools_fixture("pools.pickle"), w.path("snaps/run.pickle")).unwrap();
    let args = ["--markdown", "report.md", "--html", "check.html"];
    w.check().args(args).assert().code(0);
    let md = w.read("report.md");
    assert!(md.contains("Memory pools: graphs"), "{md}");
    for row in [
        "| run dev0 | cuda-graph-1 | cuda-graph |",
        "| run dev0 | mempool-1 | mempool |",
        "| run dev0 | cudagraph-tree-2 | cudagraph-tree |",
        "| run dev0 | default | default |",
    ] {
        assert!(md.contains(row), "{row}\n{md}");
    }
    let page = w.read("check.html");
    assert!(page.contains("<caption>By memory pool</caption>"));
    assert!(page.contains("<td>cuda-graph-1</td><td>cuda-graph</td>"));
    let profile = w.path("profile.html");
    memgate()
        .args(["profile", "--html", profile.to_str().unwrap()])
        .arg(pools_fixture("pools.pickle"))
        .assert()
        .success();
    let html = std::fs::read_to_string(&profile).unwrap();
    assert!(html.contains("<td>mempool-1</td><td>mempool</td>"));
    // A snapshot with only the default pool has no pool table (and the
    // budget's pool is not there to judge: an error).
    std::fs::copy(
        common::fixture("main_proto4.pickle"),
        w.path("snaps/run.pickle"),
    )
    .unwrap();
    w.check().args(args).assert().code(2);
    assert!(!w.read("report.md").contains("Memory pools"));
    assert!(!w.read("check.html").contains("By memory pool"));
}

/// What `memgate peak FILE` prints.
fn peak_text(file: PathBuf) -> String {
    let out = memgate().arg("peak").arg(file).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

#[test]
fn peak_text_lists_each_pool_under_the_device() {
    let text = peak_text(pools_fixture("pools.pickle"));
    assert!(text.contains("    memory pools:\n"), "{text}");
    assert!(
        text.contains(
            "      cuda-graph-1 (cuda-graph): allocated peak 15.68 MiB, reserved peak 34 MiB;"
        ),
        "{text}"
    );
    let plain = peak_text(common::fixture("main_proto4.pickle"));
    assert!(!plain.contains("memory pools"));
}

/// `memgate peak NAME` on `snapshot` written as NAME: refused (exit 2)
/// within 5 s with one error line naming the file and saying `what`.
fn refused(name: &str, snapshot: &Value, what: &str) {
    let w = Workdir::new("");
    std::fs::write(w.path(name), snapshot.to_string()).unwrap();
    let started = std::time::Instant::now();
    let out = memgate()
        .current_dir(w.path("."))
        .args(["peak", name])
        .assert()
        .code(2);
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains(name) && err.contains(what), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn a_trace_entry_whose_pool_id_is_not_a_pair_is_refused_naming_the_file() {
    let entry = json!({"action": "alloc", "addr": 4096, "size": 512, "pool_id": "graph"});
    let bad = json!({"segments": [], "device_traces": [[entry]]});
    refused("bad.json", &bad, "`pool_id` is not a pair");
}

#[test]
fn a_trace_of_too_many_distinct_pools_is_refused_quickly() {
    let trace: Vec<Value> = (0..5000u64)
        .map(|k| json!({"action": "alloc", "addr": 4096 * (k + 1), "size": 512, "pool_id": [0, k + 1]}))
        .collect();
    let bad = json!({"segments": [], "device_traces": [trace]});
    refused("many.json", &bad, "distinct trace entry `pool_id`s");
}

#[test]
fn a_dump_of_too_many_distinct_segment_pools_is_refused_quickly() {
    let segments: Vec<Value> = (0..5000u64)
        .map(|k| {
            json!({"device": 0, "address": (k + 1) << 21, "total_size": 2 << 20,
                   "segment_pool_id": [k + 1, 0], "blocks": []})
        })
        .collect();
    let bad = json!({"segments": segments, "device_traces": [[]]});
    refused("pools.json", &bad, "distinct segment `segment_pool_id`s");
}

#[test]
fn a_summary_baseline_judges_each_pools_growth_without_a_pool_budget() {
    let w = Workdir::new(&config(true, ""));
    // The baseline is the summary of the run before the regression.
    std::fs::copy(pools_fixture("pools.pickle"), w.path("golden/run.pickle")).unwrap();
    memgate()
        .current_dir(w.path("."))
        .args(["summarize", "-o", "golden", "golden/run.pickle"])
        .assert()
        .success();
    std::fs::remove_file(w.path("golden/run.pickle")).unwrap();
    let summary = w.read("golden/run.json");
    assert!(summary.contains("\"cuda-graph-1\""), "{summary}");
    std::fs::copy(
        pools_fixture("pools_graph_regressed.pickle"),
        w.path("snaps/run.pickle"),
    )
    .unwrap();
    let _ = w.check().args(["--json", "verdict.json"]).assert().code(1);
    let checks = checks(&w);
    let graph = check_of(&checks, "pool.cuda-graph-1.allocated-peak");
    assert_eq!(graph["status"], "fail", "{graph}");
    assert_eq!(graph["findings"][0]["kind"], "grew", "{graph}");
    let want = &expected()["pools.pickle"]["pools"];
    assert_eq!(graph["baseline"], want["cuda-graph-1"]["allocated-peak"]);
    for other in ["default", "mempool-1", "cudagraph-tree-2"] {
        let c = check_of(&checks, &format!("pool.{other}.allocated-peak"));
        assert_eq!(c["status"], "pass", "{c}");
    }
}
