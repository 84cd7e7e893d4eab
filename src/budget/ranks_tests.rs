//! `[target.ranks]` validation: the table read into a `RankBudget`, every
//! problem collected with its place, and the same table given as data.

use std::path::Path;

use serde_json::json;

use super::super::{budget_from_data, parse, validate_data, Level};
use super::*;
use crate::units::Percent;

fn errors(text: &str) -> Vec<String> {
    match parse(text, "memgate.toml", Path::new(""), false) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn a_ranks_table_becomes_figures_limits_and_stages() {
    let text = r#"[[target]]
name = "job"
snapshots = "s/*.json"

[target.ranks]
figures = ["reserved-peak"]
imbalance = { limit = "15%", level = "warn" }
heaviest = "40 GiB"
stage-imbalance = "5%"
stages = { first = '^rank[0-3]$', last = ["rank6", "rank7"] }
"#;
    let b = parse(text, "memgate.toml", Path::new(""), false).unwrap();
    let r = b.targets[0].ranks.as_ref().unwrap();
    assert_eq!(r.figures, [Figure::ReservedPeak]);
    let imbalance = r.imbalance.as_ref().unwrap();
    assert_eq!(
        (imbalance.pct, imbalance.level),
        (Percent(15.0), Level::Warn)
    );
    assert_eq!(r.heaviest.as_ref().unwrap().value.raw(), 40 << 30);
    assert_eq!(r.stage_imbalance.as_ref().unwrap().pct, Percent(5.0));
    assert_eq!(r.loc.line, 5);
    let names: Vec<&str> = r.stages.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["first", "last"]);
    assert!(r.stages[0].claims("rank3") && !r.stages[0].claims("rank4"));
    assert!(r.stages[1].claims("rank7") && !r.stages[1].claims("rank77"));
}

#[test]
fn without_figures_the_peaks_are_compared() {
    let text = "[[target]]\nname = \"j\"\nsnapshots = \"s\"\n[target.ranks]\n";
    let b = parse(text, "memgate.toml", Path::new(""), false).unwrap();
    let r = b.targets[0].ranks.as_ref().unwrap();
    assert_eq!(r.figures, DEFAULT_RANK_FIGURES);
    assert!(r.imbalance.is_none() && r.heaviest.is_none() && r.stages.is_empty());
}

#[test]
fn every_problem_of_a_ranks_table_is_reported_with_its_place() {
    let text = r#"[[target]]
name = "job"
snapshots = "s/*.json"

[target.ranks]
figures = ["steady-state-peak", "oom-events"]
imbalance = 15
heaviest = "lots"
stages = { a = 3, b = "(", c = [] }
imbalanse = "5%"
"#;
    let got = errors(text);
    let want = [
        "memgate.toml:10:1: unknown key `imbalanse` in [target.ranks]",
        "memgate.toml:6:11: `target.ranks.figures`: `steady-state-peak` is not measured on every snapshot",
        "memgate.toml:7:13: `target.ranks.imbalance`: 15 is not a percentage",
        "memgate.toml:8:12: `target.ranks.heaviest`:",
        "memgate.toml:9:16: `target.ranks.stages.\"a\"`: must be a regex string or a non-empty list of rank names, not integer",
        "memgate.toml:9:23: `target.ranks.stages.\"b\"`: not a valid regex",
        "memgate.toml:9:32: `target.ranks.stages.\"c\"`: must be a regex string or a non-empty list of rank names, not an empty list",
    ];
    for w in want {
        assert!(
            got.iter().any(|g| g.starts_with(w)),
            "{w}\nnot in\n{got:#?}"
        );
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
}

#[test]
fn heaviest_takes_only_size_figures() {
    let text = "[[target]]\nname = \"j\"\nsnapshots = \"s\"\n[target.ranks]\n\
                figures = [\"oom-events\"]\nheaviest = \"1 GiB\"\n";
    let got = errors(text);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0].contains("`oom-events` in `figures` is a count"),
        "{got:#?}"
    );
}

#[test]
fn stage_imbalance_without_stages_is_refused() {
    let text = "[[target]]\nname = \"j\"\nsnapshots = \"s\"\n[target.ranks]\n\
                stage-imbalance = \"5%\"\n";
    let got = errors(text);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(got[0].contains("add `stages`"), "{got:#?}");
}

/// The Python API's and the pytest marker's mappings go through
/// `budget_from_data`: `ranks` is read there as in the file.
#[test]
fn a_ranks_mapping_given_as_data_is_read_as_the_file_would_be() {
    let doc = json!({"target": [{"name": "job", "snapshots": "s/*.json", "ranks": {
        "imbalance": "15%",
        "stages": {"last": ["rank6", "rank7"], "first": "^rank[0-3]$"},
    }}]});
    let v = budget_from_data(&doc, "marker", Path::new("/d"), false);
    assert!(v.errors.is_empty(), "{:?}", v.errors);
    let b = v.budget.unwrap();
    let r = b.targets[0].ranks.as_ref().unwrap();
    assert_eq!(r.imbalance.as_ref().unwrap().pct, Percent(15.0));
    assert_eq!(r.stages.len(), 2);
    let bad = json!({"target": [{"name": "job", "snapshots": "s", "ranks": {"imbalance": 15}}]});
    let errors = validate_data(&bad, "marker", Path::new("/d")).unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].key, "target.ranks.imbalance");
}
