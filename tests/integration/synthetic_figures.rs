//! Every figure, peak entry, Mosaic category, stack group and default
//! category of the synthetic fixtures against `expected.json` (written by
//! `tests/fixtures/gen/generate.py` from the independent `reference.py`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memgate::analysis::{analyze, DeviceReport, Figure, RuleSet};
use memgate::snapshot;
use serde_json::Value;

fn synthetic_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/synthetic")
}

fn expected() -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(synthetic_dir().join("expected.json")).unwrap();
    let v: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    v.into_iter().collect()
}

fn analyse(name: &str, rules: &RuleSet) -> Vec<DeviceReport> {
    let snap = snapshot::load(&synthetic_dir().join(name))
        .unwrap_or_else(|e| panic!("{name} does not load: {e}"));
    analyze(&snap, rules, usize::MAX)
}

fn nonzero(m: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    m.iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

fn as_map(v: &Value) -> BTreeMap<String, u64> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
        .collect()
}

fn opt(v: &Value) -> Option<u64> {
    v.as_u64()
}

#[test]
fn every_figure_peak_entry_and_completeness_matches_the_reference() {
    let mosaic = RuleSet::mosaic();
    for (name, exp) in expected() {
        let got = analyse(&name, &mosaic);
        let devs = exp["devices"].as_array().unwrap();
        let ids: Vec<u64> = devs.iter().map(|d| d["device"].as_u64().unwrap()).collect();
        let got_ids: Vec<u64> = got.iter().map(|d| u64::from(d.device.get())).collect();
        assert_eq!(got_ids, ids, "{name}: devices");
        for (d, e) in got.iter().zip(devs) {
            // The time-structure figures are checked in tests/integration/time_structure.rs,
            // the fragmentation ones in tests/integration/fragmentation.rs, the host
            // ones in tests/integration/metadata_host.rs.
            let elsewhere =
                |f: &Figure| f.needs_iterations() || f.is_fragmentation() || f.is_host();
            for f in Figure::ALL.into_iter().filter(|f| !elsewhere(f)) {
                assert_eq!(
                    f.of(&d.figures),
                    e["figures"][f.id()].as_u64().unwrap(),
                    "{name} dev{}: {}",
                    d.device,
                    f.id()
                );
            }
            let pe = &e["peak-entry"];
            assert_eq!(
                d.peak_entry.dynamic_peak,
                opt(&pe["dynamic-peak"]),
                "{name}: dyn idx"
            );
            assert_eq!(
                d.peak_entry.allocated_peak,
                opt(&pe["allocated-peak"]),
                "{name}: alloc idx"
            );
            assert_eq!(
                d.peak_entry.reserved_peak,
                opt(&pe["reserved-peak"]),
                "{name}: res idx"
            );
            assert_eq!(
                d.trace_complete,
                e["trace-complete"].as_bool().unwrap(),
                "{name}: complete"
            );
        }
    }
}

#[test]
fn mosaic_categories_and_stack_groups_at_the_dynamic_peak_match_the_reference() {
    let mosaic = RuleSet::mosaic();
    for (name, exp) in expected() {
        let got = analyse(&name, &mosaic);
        for (d, e) in got.iter().zip(exp["devices"].as_array().unwrap()) {
            assert_eq!(
                nonzero(&d.categories.at_dynamic_peak),
                as_map(&e["mosaic-categories-at-dynamic-peak"]),
                "{name} dev{}",
                d.device
            );
            let stacks: Vec<(u64, u64, Vec<String>)> = e["stacks-at-dynamic-peak"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| {
                    let frames = g["frames"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|f| f.as_str().unwrap().to_string())
                        .collect();
                    (
                        g["bytes"].as_u64().unwrap(),
                        g["count"].as_u64().unwrap(),
                        frames,
                    )
                })
                .collect();
            let got_stacks: Vec<(u64, u64, Vec<String>)> = d
                .stacks_at_peak
                .iter()
                .map(|g| {
                    (
                        g.bytes,
                        g.count,
                        g.frames.iter().map(|f| f.to_string()).collect(),
                    )
                })
                .collect();
            assert_eq!(got_stacks, stacks, "{name} dev{}: stack groups", d.device);
        }
    }
}

#[test]
fn unique_frame_and_stack_counts_match_the_reference() {
    for (name, exp) in expected() {
        let snap = snapshot::load(&synthetic_dir().join(&name)).unwrap();
        let (frames, stacks) = snap.unique_frames_and_stacks();
        assert_eq!(
            frames as u64,
            exp["unique-frames"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            stacks as u64,
            exp["unique-stacks"].as_u64().unwrap(),
            "{name}"
        );
    }
}

#[test]
fn default_categories_at_the_allocated_peak_agree_with_the_construction_labels() {
    let rules = RuleSet::builtin_default();
    let mut failures = Vec::new();
    for (name, exp) in expected() {
        let got = analyse(&name, &rules);
        for d in &got {
            let e = &exp["default-categories"][d.device.to_string()];
            let at = nonzero(&d.categories.at_allocated_peak);
            if at != as_map(&e["at-allocated-peak"]) {
                failures.push(format!(
                    "{name} dev{} at-allocated-peak: got {at:?}, labels {}",
                    d.device, e["at-allocated-peak"]
                ));
            }
            let peaks = nonzero(&d.categories.peaks);
            if peaks != as_map(&e["peaks"]) {
                failures.push(format!(
                    "{name} dev{} peaks: got {peaks:?}, labels {}",
                    d.device, e["peaks"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn default_categories_sum_to_the_allocated_and_dynamic_peaks() {
    let rules = RuleSet::builtin_default();
    for (name, _) in expected() {
        for d in analyse(&name, &rules) {
            let at_alloc: u64 = d.categories.at_allocated_peak.values().sum();
            let at_dyn: u64 = d.categories.at_dynamic_peak.values().sum();
            assert_eq!(at_alloc, d.figures.allocated_peak, "{name} dev{}", d.device);
            assert_eq!(at_dyn, d.figures.dynamic_peak, "{name} dev{}", d.device);
        }
    }
}

#[test]
fn the_downsampled_timeline_keeps_the_allocated_peak_and_its_point_budget() {
    let rules = RuleSet::builtin_default();
    for (name, _) in expected() {
        let snap = snapshot::load(&synthetic_dir().join(&name)).unwrap();
        for d in analyze(&snap, &rules, 5) {
            let t = memgate::analysis::timeline(&snap, d.device, &rules, 10);
            // 10 buckets, each its low and its high, and the three peaks.
            assert!(t.points.len() <= 24, "{name}: {} points", t.points.len());
            let highest = t.points.iter().map(|p| p.bytes.iter().sum::<u64>()).max();
            assert_eq!(
                highest,
                Some(d.figures.allocated_peak),
                "{name} dev{}",
                d.device
            );
        }
    }
}
