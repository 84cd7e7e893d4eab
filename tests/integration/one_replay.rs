//! `analyze_with_timelines` replays each trace once for the figures, the
//! sites, the stacks and the timeline; what it returns is what `analyze`
//! and `timeline` return separately.

use std::path::Path;

use memgate::analysis::{analyze, analyze_with_timelines, timeline, RuleSet};
use memgate::snapshot;

#[test]
fn the_combined_analysis_equals_the_separate_figures_and_timelines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/synthetic");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(snap) = snapshot::load(&path) else {
            continue;
        };
        for rules in [
            RuleSet::builtin_default(),
            RuleSet::from_spec("mosaic").unwrap(),
        ] {
            let both = analyze_with_timelines(&snap, &rules, 5, 7);
            let reports = analyze(&snap, &rules, 5);
            assert_eq!(both.len(), reports.len(), "{}", path.display());
            for ((report, t), alone) in both.iter().zip(&reports) {
                assert_eq!(report, alone, "{}", path.display());
                assert_eq!(t, &timeline(&snap, alone.device, &rules, 7));
                assert!(t.points.len() > 1 || report.figures.trace_entries == 0);
            }
            seen += 1;
        }
    }
    assert!(seen >= 10, "only {seen} fixtures analysed");
}
