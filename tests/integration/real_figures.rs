//! The real snapshots of `../shared/fixtures/real/` against the numbers in
//! `../shared/fixtures/README.md`. Skipped, loudly, when `../shared` is absent
//! (the snapshots' licences keep them out of the repository).

use std::path::PathBuf;

use memgate::analysis::{analyze, DeviceReport, RuleSet};
use memgate::snapshot;

fn real_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED: ../shared not found at {}: the real-snapshot conformance tests did not run",
            dir.display()
        );
        None
    }
}

const FILES: [&str; 7] = [
    "select_n_04d383c.pickle",
    "select_n_1f2f548.pickle",
    "select_n_dec166a.pickle",
    "wedsonlin_medium_1024_training.pickle",
    "cranberrii_ftcourse.pickle",
    "muduard_layoutediting_list.pkl",
    "zidongliu_decomfl.pickle",
];

fn analyse(dir: &std::path::Path, file: &str, rules: &RuleSet) -> Vec<DeviceReport> {
    let snap = snapshot::load(&dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
    analyze(&snap, rules, 10)
}

/// (file, device, dynamic, static, overall, allocated, reserved, allocs, entries)
type Row = (&'static str, u32, u64, u64, u64, u64, u64, u64, u64);

const FIGURES: [Row; 7] = [
    (
        "select_n_04d383c.pickle",
        0,
        6767697152,
        14034690048,
        20802387200,
        20802383104,
        22519218176,
        3058,
        10327,
    ),
    (
        "select_n_1f2f548.pickle",
        0,
        1068339968,
        1341517312,
        2409857280,
        2409045992,
        2776629248,
        1497,
        4496,
    ),
    (
        "select_n_dec166a.pickle",
        1,
        0,
        545266688,
        545266688,
        544460336,
        5559549952,
        0,
        0,
    ),
    (
        "wedsonlin_medium_1024_training.pickle",
        0,
        19111272456,
        1712394240,
        20823666696,
        24207167496,
        25178406912,
        7591,
        22331,
    ),
    (
        "cranberrii_ftcourse.pickle",
        0,
        4780407592,
        1103667200,
        5884074792,
        5876132840,
        6471811072,
        3505,
        10307,
    ),
    (
        "muduard_layoutediting_list.pkl",
        1,
        0,
        3353639424,
        3353639424,
        3308174782,
        3649044480,
        0,
        0,
    ),
    (
        "zidongliu_decomfl.pickle",
        0,
        1783664516,
        0,
        1783664516,
        1783664516,
        1897922560,
        7946,
        23105,
    ),
];

#[test]
fn every_row_of_the_readme_figures_table_is_reproduced_to_the_byte() {
    let Some(dir) = real_dir() else { return };
    for (file, dev, dynamic, stat, overall, allocated, reserved, allocs, entries) in FIGURES {
        let reports = analyse(&dir, file, &RuleSet::builtin_default());
        let devices: Vec<u32> = reports.iter().map(|d| d.device.get()).collect();
        assert_eq!(devices, vec![dev], "{file}: devices");
        let f = &reports[0].figures;
        assert_eq!(f.dynamic_peak, dynamic, "{file}: dynamic-peak");
        assert_eq!(f.static_memory, stat, "{file}: static-memory");
        assert_eq!(f.overall_peak, overall, "{file}: overall-peak");
        assert_eq!(f.allocated_peak, allocated, "{file}: allocated-peak");
        assert_eq!(f.reserved_peak, reserved, "{file}: reserved-peak");
        assert_eq!(f.alloc_events, allocs, "{file}: alloc-events");
        assert_eq!(f.trace_entries, entries, "{file}: trace-entries");
        assert_eq!(f.oom_events, 0, "{file}: oom-events");
    }
}

#[test]
fn mosaic_rules_reproduce_the_readme_categories_at_the_dynamic_peak() {
    let Some(dir) = real_dir() else { return };
    let expected: [(&str, &[(&str, u64)]); 5] = [
        (
            "select_n_04d383c.pickle",
            &[("UNKNOWN", 150528), ("ACTIVATION", 6767546624)],
        ),
        (
            "select_n_1f2f548.pickle",
            &[("UNKNOWN", 37632), ("ACTIVATION", 1068302336)],
        ),
        (
            "wedsonlin_medium_1024_training.pickle",
            &[
                ("ACTIVATION", 17648435200),
                ("UNKNOWN", 103882756),
                ("BACKWARD", 1358954500),
            ],
        ),
        (
            "cranberrii_ftcourse.pickle",
            &[("ACTIVATION", 4524663588), ("BACKWARD", 255744004)],
        ),
        (
            "zidongliu_decomfl.pickle",
            &[
                ("UNKNOWN", 1001918340),
                ("ACTIVATION", 9568256),
                ("PARAMETER", 772177920),
            ],
        ),
    ];
    for (file, cats) in expected {
        let d = &analyse(&dir, file, &RuleSet::mosaic())[0];
        let got: Vec<(&str, u64)> = d
            .categories
            .at_dynamic_peak
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        let mut want = cats.to_vec();
        want.sort();
        assert_eq!(got, want, "{file}");
    }
}

#[test]
fn the_dynamic_peak_is_first_reached_at_the_readme_entry_index() {
    let Some(dir) = real_dir() else { return };
    let expected = [
        ("select_n_04d383c.pickle", Some(5317)),
        ("select_n_1f2f548.pickle", Some(4487)),
        ("select_n_dec166a.pickle", None),
        ("wedsonlin_medium_1024_training.pickle", Some(3737)),
        ("cranberrii_ftcourse.pickle", Some(3697)),
        ("muduard_layoutediting_list.pkl", None),
        ("zidongliu_decomfl.pickle", Some(11205)),
    ];
    for (file, idx) in expected {
        let d = &analyse(&dir, file, &RuleSet::mosaic())[0];
        assert_eq!(d.peak_entry.dynamic_peak, idx, "{file}");
    }
}

#[test]
fn the_other_peak_entries_follow_the_reference_convention() {
    let Some(dir) = real_dir() else { return };
    // From reference.py (shared notes): allocated-peak and reserved-peak indices.
    let expected = [
        (FILES[0], Some(5317), Some(5553)),
        (FILES[1], Some(4487), Some(4485)),
        (FILES[2], None, None),
        (FILES[3], Some(3737), Some(0)),
        (FILES[4], Some(3697), Some(3705)),
        (FILES[5], None, None),
        (FILES[6], Some(11205), Some(11204)),
    ];
    for (file, alloc, res) in expected {
        let d = &analyse(&dir, file, &RuleSet::builtin_default())[0];
        assert_eq!(d.peak_entry.allocated_peak, alloc, "{file}: allocated");
        assert_eq!(d.peak_entry.reserved_peak, res, "{file}: reserved");
    }
}

#[test]
fn only_the_wedsonlin_trace_started_mid_run() {
    let Some(dir) = real_dir() else { return };
    for file in FILES {
        let d = &analyse(&dir, file, &RuleSet::builtin_default())[0];
        assert_eq!(
            d.trace_complete,
            !file.starts_with("wedsonlin"),
            "{file}: trace-complete"
        );
    }
}

#[test]
fn default_categories_sum_to_the_allocated_and_dynamic_peaks_on_every_real_file() {
    let Some(dir) = real_dir() else { return };
    for rules in [RuleSet::builtin_default(), RuleSet::mosaic()] {
        for file in FILES {
            for d in analyse(&dir, file, &rules) {
                let at_alloc: u64 = d.categories.at_allocated_peak.values().sum();
                let at_dyn: u64 = d.categories.at_dynamic_peak.values().sum();
                assert_eq!(
                    at_alloc,
                    d.figures.allocated_peak,
                    "{file} ({})",
                    rules.source()
                );
                assert_eq!(
                    at_dyn,
                    d.figures.dynamic_peak,
                    "{file} ({})",
                    rules.source()
                );
                let sites: u64 = d.sites_at_peak.iter().map(|s| s.bytes).sum();
                assert!(sites <= d.figures.allocated_peak, "{file}: sites");
            }
        }
    }
}

#[test]
fn unique_frames_and_stacks_match_the_readme() {
    let Some(dir) = real_dir() else { return };
    let expected = [
        (FILES[3], 538, 189),
        (FILES[4], 551, 153),
        (FILES[5], 34, 12),
        (FILES[6], 137, 206),
        (FILES[0], 415, 116),
        (FILES[1], 348, 97),
        (FILES[2], 0, 1),
    ];
    for (file, frames, stacks) in expected {
        let snap = snapshot::load(&dir.join(file)).unwrap();
        assert_eq!(snap.unique_frames_and_stacks(), (frames, stacks), "{file}");
    }
}

#[test]
fn format_edge_cases_give_the_reference_figures() {
    let Some(dir) = real_dir() else { return };
    let format = dir.join("../format");
    let rules = RuleSet::builtin_default();
    let dec166a = FIGURES[2];
    for name in [
        "dec166a_proto2.pickle",
        "dec166a_proto3.pickle",
        "dec166a_proto4.pickle",
        "dec166a_proto5.pickle",
        "trailing_garbage.pickle",
    ] {
        let d = &analyse(&format, name, &rules)[0];
        assert_eq!(d.device, dec166a.1, "{name}");
        assert_eq!(
            (
                d.figures.static_memory,
                d.figures.allocated_peak,
                d.figures.reserved_peak
            ),
            (dec166a.3, dec166a.5, dec166a.6),
            "{name}"
        );
    }
    let v113 = &analyse(&format, "synthetic_v1_13_list_toplevel.pickle", &rules)[0];
    assert_eq!(v113.device, 0);
    assert_eq!(
        (
            v113.figures.static_memory,
            v113.figures.allocated_peak,
            v113.figures.reserved_peak
        ),
        (1048576, 1000000, 2097152)
    );
    let v20 = &analyse(&format, "synthetic_v2_0_history.pickle", &RuleSet::mosaic())[0];
    let f = v20.figures;
    assert_eq!(
        (
            f.dynamic_peak,
            f.static_memory,
            f.allocated_peak,
            f.reserved_peak
        ),
        (4, 0, 4, 2097152)
    );
    assert_eq!((f.oom_events, f.alloc_events, f.trace_entries), (1, 1, 3));
    assert_eq!(v20.peak_entry.dynamic_peak, Some(0));
    assert_eq!(v20.categories.at_dynamic_peak["ACTIVATION"], 4);
    let v23 = analyse(&format, "synthetic_v2_3_settings_bigints.pickle", &rules);
    assert_eq!(v23.len(), 1);
    let f = v23[0].figures;
    assert_eq!(v23[0].device, 1);
    assert_eq!(
        (
            f.oom_events,
            f.trace_entries,
            f.allocated_peak,
            f.reserved_peak
        ),
        (1, 1, 0, 0)
    );
}

#[test]
fn pre_trace_memory_of_a_file_without_history_is_every_allocated_byte() {
    // select_n_dec166a recorded no history: every active block was allocated
    // before recording. The README's `_memory_viz.py stats` allocated sum
    // (Σ requested_size of active blocks) is 544460336.
    let Some(dir) = real_dir() else { return };
    let d = analyse(&dir, "select_n_dec166a.pickle", &RuleSet::builtin_default());
    let c = &d[0].categories;
    assert_eq!(c.at_allocated_peak.get("pre-trace"), Some(&544_460_336));
    assert_eq!(c.at_allocated_peak.get("frameless"), Some(&0));
    assert!(!c.at_allocated_peak.contains_key("unknown"));
    // Mosaic's rules keep their own categories (no pre-trace).
    let m = analyse(&dir, "select_n_dec166a.pickle", &RuleSet::mosaic());
    assert!(!m[0].categories.at_allocated_peak.contains_key("pre-trace"));
}
