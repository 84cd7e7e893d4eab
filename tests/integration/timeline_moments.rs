//! What `profile --html` draws comes from the same replay as the figures:
//! every peak's exact moment is a sample, the reserved line reaches the
//! reserved peak, and each moment's live stacks are what `peak --at` lists
//! at that peak, on every synthetic fixture (OOMs, ring-wrapped traces,
//! memory from before recording, NPU and annotated traces among them).

use std::path::Path;

use memgate::analysis::{
    analyze_request, analyze_with_timelines, Figure, MomentKind, PeakAt, Request, RuleSet,
};
use memgate::snapshot;

#[test]
fn each_peak_is_a_sample_and_a_moment_whose_stacks_are_those_peak_lists() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/synthetic");
    let rules = RuleSet::builtin_default();
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Ok(snap) = snapshot::load(&path) else {
            continue;
        };
        let both = analyze_with_timelines(&snap, &rules, 8, 50);
        for (at, figure) in [
            (PeakAt::AllocatedPeak, Figure::AllocatedPeak),
            (PeakAt::DynamicPeak, Figure::DynamicPeak),
            (PeakAt::ReservedPeak, Figure::ReservedPeak),
        ] {
            let req = Request {
                stacks_at: Some(at),
                ..Request::top(8)
            };
            let listed = analyze_request(&snap, &rules, req).unwrap();
            for ((report, t), (explained, _)) in both.iter().zip(&listed) {
                let name = format!("{} dev{} {}", path.display(), report.device, figure.id());
                let value = figure.value(report).unwrap();
                if report.figures.trace_entries == 0 || value == 0 {
                    continue;
                }
                let Some(m) = t
                    .moments
                    .iter()
                    .find(|m| m.kinds.contains(&MomentKind::Peak(figure)))
                else {
                    // Dynamic peak 0, or a peak reached before the first entry.
                    assert!(
                        figure != Figure::AllocatedPeak
                            || report.peak_entry.allocated_peak.is_some(),
                        "{name}: no moment"
                    );
                    continue;
                };
                let point = t.points.iter().find(|p| p.entry == m.entry);
                let point = point.unwrap_or_else(|| panic!("{name}: the moment is not a sample"));
                match figure {
                    Figure::AllocatedPeak => {
                        assert_eq!(point.bytes.iter().sum::<u64>(), value, "{name}");
                        assert_eq!(m.allocated, value, "{name}: live bytes at the moment");
                    }
                    Figure::ReservedPeak => assert_eq!(point.reserved, value, "{name}"),
                    _ => {}
                }
                if at != PeakAt::DynamicPeak {
                    // `peak --at dynamic` lists the dynamic (trace-only) set;
                    // the page lists everything live, as the allocated curve.
                    let want = &explained.stacks_at_moment.as_ref().unwrap().stacks;
                    assert_eq!(&m.stacks, want, "{name}: stacks");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} peaks checked");
}
