//! Figures across ranks and their checks, on ranks whose values are
//! written by hand.

use super::*;
use crate::compare::tests::{budget, dev, MIB};

fn target(ranks: &str) -> Target {
    let text = format!("[[target]]\nname = \"j\"\nsnapshots = \"s\"\n[target.ranks]\n{ranks}");
    budget(&text).targets.remove(0)
}

fn judged(ranks: &str, peaks: &[(&str, Option<DeviceReport>)]) -> RanksVerdict {
    let t = target(ranks);
    let owned: Vec<(String, Option<Vec<DeviceReport>>)> = peaks
        .iter()
        .map(|(n, d)| (n.to_string(), d.clone().map(|d| vec![d])))
        .collect();
    let inputs: Vec<RankInput> = owned
        .iter()
        .map(|(n, d)| RankInput {
            name: n.clone(),
            devices: d.as_deref(),
        })
        .collect();
    judge_ranks(&t, t.ranks.as_ref().unwrap(), &inputs, &[], false)
}

fn status(v: &RanksVerdict, id: &str) -> Status {
    let c = v.checks.iter().find(|c| c.id.to_string() == id);
    c.unwrap_or_else(|| panic!("no {id}")).status
}

#[test]
fn natural_order_reads_digit_runs_as_numbers() {
    let mut v = vec!["rank10", "rank2", "rank1", "rank02", "a"];
    v.sort_by(|a, b| natural(a, b));
    assert_eq!(v, ["a", "rank1", "rank02", "rank2", "rank10"]);
}

/// 100, 100, 100, 140 MiB: mean 110, imbalance 27.27…%, spread 40 MiB.
#[test]
fn the_figures_of_a_group_are_its_max_min_mean_spread_and_imbalance() {
    let v = judged(
        "imbalance = \"27.28%\"\nfigures = [\"allocated-peak\"]",
        &[
            ("rank10", Some(dev(10, 100 * MIB))),
            ("rank2", Some(dev(2, 140 * MIB))),
            ("rank0", Some(dev(0, 100 * MIB))),
            ("rank1", Some(dev(1, 100 * MIB))),
        ],
    );
    let g = &v.groups[0];
    assert_eq!(
        (g.max, g.min, g.spread, g.ranks),
        (140 * MIB, 100 * MIB, 40 * MIB, 4)
    );
    assert_eq!(
        (g.heaviest.as_str(), g.lightest.as_str()),
        ("rank2", "rank0")
    );
    assert!((g.mean - 110.0 * MIB as f64).abs() < 1e-6);
    assert!((g.imbalance - 300.0 / 11.0).abs() < 1e-9);
    assert_eq!(status(&v, "ranks.allocated-peak.imbalance"), Status::Pass);
    let ranks: Vec<&str> = v.ranks.iter().map(|r| r.rank.as_str()).collect();
    assert_eq!(ranks, ["rank0", "rank1", "rank2", "rank10"]);
    let v = judged(
        "imbalance = \"27.27%\"\nfigures = [\"allocated-peak\"]",
        &[
            ("rank0", Some(dev(0, 100 * MIB))),
            ("rank1", Some(dev(1, 100 * MIB))),
            ("rank2", Some(dev(2, 140 * MIB))),
            ("rank3", Some(dev(3, 100 * MIB))),
        ],
    );
    assert_eq!(status(&v, "ranks.allocated-peak.imbalance"), Status::Fail);
}

#[test]
fn all_ranks_at_zero_are_balanced() {
    let v = judged(
        "imbalance = \"0%\"",
        &[("a", Some(dev(0, 0))), ("b", Some(dev(1, 0)))],
    );
    assert_eq!(v.groups[0].imbalance, 0.0);
    assert_eq!(status(&v, "ranks.allocated-peak.imbalance"), Status::Pass);
}

/// An unreadable rank leaves the imbalance unknown (error), a lower
/// bound too; a heaviest rank over its limit fails whatever the others.
#[test]
fn an_unread_rank_or_a_lower_bound_is_never_a_pass() {
    let v = judged(
        "imbalance = \"50%\"\nheaviest = \"120 MiB\"\nfigures = [\"allocated-peak\"]",
        &[("rank0", Some(dev(0, 100 * MIB))), ("rank1", None)],
    );
    assert_eq!(status(&v, "ranks.allocated-peak.imbalance"), Status::Error);
    assert_eq!(status(&v, "ranks.allocated-peak.heaviest"), Status::Error);
    let mut partial = dev(1, 130 * MIB);
    partial.trace_complete = false;
    let v = judged(
        "imbalance = \"50%\"\nheaviest = \"120 MiB\"\nfigures = [\"allocated-peak\", \"reserved-peak\"]",
        &[("rank0", Some(dev(0, 100 * MIB))), ("rank1", Some(partial))],
    );
    assert_eq!(status(&v, "ranks.allocated-peak.imbalance"), Status::Error);
    assert_eq!(status(&v, "ranks.allocated-peak.heaviest"), Status::Fail);
    // The reserved peak is a dump-time fact: judged as it is.
    assert_eq!(status(&v, "ranks.reserved-peak.imbalance"), Status::Pass);
    assert_eq!(status(&v, "ranks.reserved-peak.heaviest"), Status::Fail);
    assert!(v.ranks[1].lower_bound);
}

#[test]
fn a_stage_that_claims_no_rank_is_an_error_and_overlapping_stages_share_ranks() {
    let v = judged(
        "stage-imbalance = \"10%\"\nfigures = [\"allocated-peak\"]\n\
         stages = { all = \"rank\", odd = [\"rank1\"], none = \"^x\" }",
        &[
            ("rank0", Some(dev(0, 100 * MIB))),
            ("rank1", Some(dev(1, 150 * MIB))),
        ],
    );
    assert_eq!(
        status(&v, "ranks.stage.all.allocated-peak.imbalance"),
        Status::Fail
    );
    assert_eq!(
        status(&v, "ranks.stage.odd.allocated-peak.imbalance"),
        Status::Pass
    );
    assert_eq!(
        status(&v, "ranks.stage.none.allocated-peak.imbalance"),
        Status::Error
    );
    assert_eq!(v.ranks[1].stages, ["all", "odd"]);
    assert_eq!(v.status, Status::Error);
}

#[test]
fn a_missing_rank_fails_naming_it() {
    let t = target("");
    let d = [dev(0, MIB)];
    let inputs = [RankInput {
        name: "rank0".into(),
        devices: Some(&d),
    }];
    let missing = [("rank1".to_string(), "golden/rank1.json".to_string())];
    let v = judge_ranks(&t, t.ranks.as_ref().unwrap(), &inputs, &missing, true);
    let c = v
        .checks
        .iter()
        .find(|c| c.id.to_string() == "ranks.present")
        .unwrap();
    assert_eq!(c.status, Status::Fail);
    assert_eq!(
        c.findings,
        [Finding::RankMissing {
            rank: "rank1".into(),
            baseline: "golden/rank1.json".into()
        }]
    );
}
