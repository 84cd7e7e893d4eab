//! GitLab's metrics report (`artifacts: reports: metrics`), in the
//! OpenMetrics text format: one gauge sample per figure, target, snapshot
//! and device, for the current value, the baseline and the budget's limit
//! (`check`), or for the figure alone (`peak`, nothing judged).
//!
//! GitLab's merge-request widget pairs a line of the merge request's report
//! with the target branch's by everything before the value (name and
//! labels) and shows the ones whose value changed, so every name and label
//! set here is fixed by what was measured, never by a value: a limit or a
//! baseline is its own family (`memgate_limit_bytes`), not a label of the
//! current figure, and a new budget shows as a changed line, not a new one.

use std::collections::HashSet;
use std::fmt::Write as _;

use super::escape::openmetrics_label;
use crate::analysis::Figure;
use crate::compare::{Check, CheckId, Finding, Status, Verdict};
use crate::document::AnalysedSnapshot;
use crate::vocab::Unit;

/// One family of samples: the current value, the baseline or the limit of
/// the figures of one unit.
struct Family {
    name: &'static str,
    unit: Option<&'static str>,
    help: &'static str,
    value: fn(&Check) -> Option<u64>,
}

fn current(c: &Check) -> Option<u64> {
    Some(c.current)
}

fn baseline(c: &Check) -> Option<u64> {
    c.baseline
}

fn limit(c: &Check) -> Option<u64> {
    c.budget
}

/// Byte figures carry the OpenMetrics unit (and its name suffix); counts
/// (OOM events, alloc events, trace entries) have none.
const FAMILIES: [(Unit, Family); 6] = [
    (
        Unit::Bytes,
        Family {
            name: "memgate_figure_bytes",
            unit: Some("bytes"),
            help: "A figure of this run, bytes.",
            value: current,
        },
    ),
    (
        Unit::Bytes,
        Family {
            name: "memgate_baseline_bytes",
            unit: Some("bytes"),
            help: "The figure in the baseline the run was judged against, bytes.",
            value: baseline,
        },
    ),
    (
        Unit::Bytes,
        Family {
            name: "memgate_limit_bytes",
            unit: Some("bytes"),
            help: "The budget's limit for the figure, bytes.",
            value: limit,
        },
    ),
    (
        Unit::Count,
        Family {
            name: "memgate_figure",
            unit: None,
            help: "A count figure of this run.",
            value: current,
        },
    ),
    (
        Unit::Count,
        Family {
            name: "memgate_baseline",
            unit: None,
            help: "The count in the baseline the run was judged against.",
            value: baseline,
        },
    ),
    (
        Unit::Count,
        Family {
            name: "memgate_limit",
            unit: None,
            help: "The budget's limit for the count.",
            value: limit,
        },
    ),
];

/// The states of `memgate_verdict`, in the order written.
const VERDICTS: [Status; 4] = [Status::Pass, Status::Warn, Status::Fail, Status::Error];

/// `# TYPE`, `# UNIT` and `# HELP` of one family.
fn header(out: &mut String, name: &str, kind: &str, unit: Option<&str>, help: &str) {
    let _ = writeln!(out, "# TYPE {name} {kind}");
    if let Some(unit) = unit {
        let _ = writeln!(out, "# UNIT {name} {unit}");
    }
    let _ = writeln!(out, "# HELP {name} {help}");
}

/// The gate's verdict as an OpenMetrics state set: one line per state, the
/// verdict's at 1.
fn verdict_family(out: &mut String, verdict: Status) {
    header(
        out,
        "memgate_verdict",
        "stateset",
        None,
        "The gate's verdict; error when it could not judge every snapshot.",
    );
    for s in VERDICTS {
        let _ = writeln!(
            out,
            "memgate_verdict{{memgate_verdict=\"{}\"}} {}",
            s.id(),
            u8::from(s == verdict)
        );
    }
}

/// The labels of one check's samples, unique within the report: a second
/// snapshot of a target under the same name (which the budget file should
/// not allow) gets ` (2)` after it, as in the JUnit report.
fn label_sets(v: &Verdict) -> Vec<(String, &Check)> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut rows = Vec::new();
    for (t, s, d, c) in v.checks() {
        // `baseline` accounts for a baseline entry and `environment`
        // compares settings; neither measures anything.
        if c.id == CheckId::Baseline || c.id == CheckId::Environment {
            continue;
        }
        let mut snapshot = s.name.clone();
        let mut n = 1;
        let labels = loop {
            let labels = format!(
                "target=\"{}\",snapshot=\"{}\",device=\"{}\",figure=\"{}\"",
                openmetrics_label(&t.name),
                openmetrics_label(&snapshot),
                d.device,
                openmetrics_label(&c.id.to_string())
            );
            if seen.insert(labels.clone()) {
                break labels;
            }
            n += 1;
            snapshot = format!("{} ({n})", s.name);
        };
        rows.push((labels, c));
    }
    // The checks across a target's ranks: of no one snapshot or device.
    for t in &v.targets {
        for c in t.ranks.iter().flat_map(|r| &r.checks) {
            let labels = format!(
                "target=\"{}\",snapshot=\"{}\",device=\"all\",figure=\"{}\"",
                openmetrics_label(&t.name),
                super::RANKS_LABEL,
                openmetrics_label(&c.id.to_string())
            );
            if seen.insert(labels.clone()) {
                rows.push((labels, c));
            }
        }
    }
    rows
}

/// GitLab's metrics report of `check --metrics`.
pub(crate) struct Metrics;

impl super::exporter::Exporter for Metrics {
    fn render(&self, v: &Verdict, _: &super::exporter::Context<'_, '_>) -> String {
        render(v)
    }

    fn render_error(&self, _: &[String], _: i64) -> Option<String> {
        Some(error_report())
    }
}

/// The metrics report of a verdict: the verdict, then each family that has
/// a sample; a snapshot that could not be read has no line but turns the
/// verdict to `error`.
pub(crate) fn render(v: &Verdict) -> String {
    let mut out = String::new();
    verdict_family(&mut out, v.verdict);
    let rows = label_sets(v);
    for (unit, family) in &FAMILIES {
        let samples: Vec<(&str, u64)> = rows
            .iter()
            .filter(|(_, c)| c.unit == *unit)
            .filter_map(|(labels, c)| (family.value)(c).map(|x| (labels.as_str(), x)))
            .collect();
        if samples.is_empty() {
            continue;
        }
        header(&mut out, family.name, "gauge", family.unit, family.help);
        for (labels, x) in samples {
            let _ = writeln!(out, "{}{{{labels}}} {x}", family.name);
        }
    }
    lower_bounds(&mut out, &rows);
    out.push_str("# EOF\n");
    out
}

/// `memgate_lower_bound`: the checks whose current value is only a lower
/// bound (a trace that started mid-run), 1 where the check could not be
/// judged for it, 0 where it still was; absent when there is none.
fn lower_bounds(out: &mut String, rows: &[(String, &Check)]) {
    let samples: Vec<(&str, bool)> = rows
        .iter()
        .filter_map(|(labels, c)| {
            c.findings.iter().find_map(|f| match f {
                Finding::LowerBound {
                    current, judged, ..
                } if *current => Some((labels.as_str(), !judged)),
                _ => None,
            })
        })
        .collect();
    if samples.is_empty() {
        return;
    }
    header(
        out,
        "memgate_lower_bound",
        "gauge",
        None,
        "The figure is only a lower bound (its trace started mid-run; record with a larger \
         max_entries): 1 where that left the check not judged.",
    );
    for (labels, unjudged) in samples {
        let _ = writeln!(
            out,
            "memgate_lower_bound{{{labels}}} {}",
            u8::from(unjudged)
        );
    }
}

/// The figures of analysed snapshots (`peak --metrics`): one line per
/// figure, snapshot (its path as given) and device, in the families `check`
/// writes the current values to; a figure the device lacks (no iterations
/// for `steady-state-peak`) has no line.
pub(crate) fn figures(snapshots: &[AnalysedSnapshot]) -> String {
    let mut out = String::new();
    let current_values = FAMILIES
        .iter()
        .filter(|(_, f)| matches!(f.name, "memgate_figure_bytes" | "memgate_figure"));
    for (unit, family) in current_values {
        let mut samples = String::new();
        for s in snapshots {
            for d in &s.devices {
                for f in Figure::ALL.into_iter().filter(|f| f.unit() == *unit) {
                    let Some(x) = f.value(d) else { continue };
                    let _ = writeln!(
                        samples,
                        "{}{{snapshot=\"{}\",device=\"{}\",figure=\"{}\"}} {x}",
                        family.name,
                        openmetrics_label(&s.path),
                        d.device,
                        f.id()
                    );
                }
            }
        }
        if !samples.is_empty() {
            header(&mut out, family.name, "gauge", family.unit, family.help);
            out.push_str(&samples);
        }
    }
    out.push_str("# EOF\n");
    out
}

/// The report when the gate could not judge at all (bad budget file,
/// nothing to judge, an unusable report path): nothing was measured, so
/// only the verdict, `error`; why is in the log and the other reports.
pub(crate) fn error_report() -> String {
    let mut out = String::new();
    verdict_family(&mut out, Status::Error);
    out.push_str("# EOF\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Counts, DeviceVerdict, SnapshotVerdict, TargetVerdict};

    fn check(id: &str, unit: Unit, baseline: Option<u64>, budget: Option<u64>) -> Check {
        Check {
            baseline,
            budget,
            ..Check::new(id.into(), Status::Pass, unit, 7)
        }
    }

    fn snapshot(name: &str, checks: Vec<Check>) -> SnapshotVerdict {
        SnapshotVerdict {
            name: name.into(),
            path: format!("{name}.pickle"),
            status: Status::Pass,
            baseline: None,
            error: None,
            devices: vec![DeviceVerdict {
                peak_phase: None,
                oom: Vec::new(),
                device: crate::vocab::Device::new(3),
                trace_complete: true,
                warnings: Vec::new(),
                checks,
                categories: Vec::new(),
                sites: Vec::new(),
                window: None,
                pools: Vec::new(),
            }],
        }
    }

    fn verdict(targets: Vec<TargetVerdict>) -> Verdict {
        Verdict {
            schema_version: crate::compare::SCHEMA_VERSION,
            kind: "memgate-verdict",
            verdict: Status::Pass,
            generated_at: 0,
            config: "memgate.toml".into(),
            tolerance: 5.0,
            noise_floor: 0,
            counts: Counts::default(),
            targets,
            waivers: Vec::new(),
        }
    }

    /// The name and labels of each sample line (what GitLab pairs lines by).
    fn keys(text: &str) -> Vec<&str> {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.rsplit_once(' ').unwrap().0)
            .collect()
    }

    #[test]
    fn hostile_names_stay_inside_their_quotes_on_one_line_without_a_comment_sign() {
        let hostile = "t\"} 1\n# EOF\nx{a=\"\\";
        let v = verdict(vec![TargetVerdict::new(
            hostile.into(),
            vec![snapshot(
                "rank0 ## \u{1b}[31m",
                vec![check(
                    "phase.## forward ##.allocated-peak",
                    Unit::Bytes,
                    Some(5),
                    Some(9),
                )],
            )],
        )]);
        let text = render(&v);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(samples.len(), 4 + 3, "{text}");
        assert_eq!(text.matches("# EOF").count(), 1, "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        for l in &samples {
            assert!(!l.contains('#'), "GitLab would cut {l:?} at its `#`");
        }
        assert!(
            text.contains(
                "memgate_limit_bytes{target=\"t\\\"} 1\\n\\\\u{23} EOF\\nx{a=\\\"\\\\\",\
                 snapshot=\"rank0 \\\\u{23}\\\\u{23} \\\\u{1b}[31m\",device=\"3\",\
                 figure=\"phase.\\\\u{23}\\\\u{23} forward \\\\u{23}\\\\u{23}.allocated-peak\"} 9\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn counts_and_bytes_go_to_their_own_families_and_unknown_values_are_left_out() {
        let v = verdict(vec![TargetVerdict::new(
            "train".into(),
            vec![snapshot(
                "rank0",
                vec![
                    check("allocated-peak", Unit::Bytes, None, Some(9)),
                    check("oom-events", Unit::Count, Some(0), None),
                    check("baseline", Unit::Count, None, None),
                ],
            )],
        )]);
        let text = render(&v);
        let labels =
            |f: &str| format!("target=\"train\",snapshot=\"rank0\",device=\"3\",figure=\"{f}\"");
        assert_eq!(
            keys(&text),
            [
                "memgate_verdict{memgate_verdict=\"pass\"}".to_string(),
                "memgate_verdict{memgate_verdict=\"warn\"}".into(),
                "memgate_verdict{memgate_verdict=\"fail\"}".into(),
                "memgate_verdict{memgate_verdict=\"error\"}".into(),
                format!("memgate_figure_bytes{{{}}}", labels("allocated-peak")),
                format!("memgate_limit_bytes{{{}}}", labels("allocated-peak")),
                format!("memgate_figure{{{}}}", labels("oom-events")),
                format!("memgate_baseline{{{}}}", labels("oom-events")),
            ]
        );
        assert!(
            text.contains("# UNIT memgate_figure_bytes bytes\n"),
            "{text}"
        );
        assert!(!text.contains("# UNIT memgate_figure "), "{text}");
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn two_snapshots_of_one_name_get_distinct_label_sets() {
        let one = || {
            snapshot(
                "rank0",
                vec![check("allocated-peak", Unit::Bytes, None, None)],
            )
        };
        let v = verdict(vec![TargetVerdict::new("t".into(), vec![one(), one()])]);
        let text = render(&v);
        let keys = keys(&text);
        let unique: HashSet<&&str> = keys.iter().collect();
        assert_eq!(unique.len(), keys.len(), "{text}");
        assert!(text.contains("snapshot=\"rank0 (2)\""), "{text}");
    }

    #[test]
    fn every_metric_name_is_a_valid_openmetrics_name() {
        let valid = |n: &str| {
            let mut cs = n.chars();
            cs.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
                && cs.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        };
        let names: Vec<&str> = FAMILIES
            .iter()
            .map(|(_, f)| f.name)
            .chain(["memgate_verdict"])
            .collect();
        for n in &names {
            assert!(valid(n), "{n}");
        }
        for (_, f) in &FAMILIES {
            if let Some(unit) = f.unit {
                assert!(f.name.ends_with(&format!("_{unit}")), "{}", f.name);
            }
        }
    }

    #[test]
    fn a_gate_that_could_not_judge_reports_only_an_error_verdict() {
        assert_eq!(
            error_report(),
            "# TYPE memgate_verdict stateset\n\
             # HELP memgate_verdict The gate's verdict; error when it could not judge every snapshot.\n\
             memgate_verdict{memgate_verdict=\"pass\"} 0\n\
             memgate_verdict{memgate_verdict=\"warn\"} 0\n\
             memgate_verdict{memgate_verdict=\"fail\"} 0\n\
             memgate_verdict{memgate_verdict=\"error\"} 1\n\
             # EOF\n"
        );
    }
}
