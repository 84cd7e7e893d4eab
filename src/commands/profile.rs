//! `memgate profile`: bytes per category at the allocated and dynamic peaks
//! and each category's own peak; `--html` writes the category timeline.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;

use crate::analysis::{rules::print_default_rules, timeline, DeviceReport, Timeline};
use crate::report::html::{self, Section};
use crate::snapshot::printable;
use crate::units::Bytes;

use super::analysed::{analyse_all, rules};
use super::peak::snapshot_json;
use super::{write_json, Outcome, OutputFormat};

pub struct ProfileOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    pub rules: String,
    pub html: Option<PathBuf>,
    pub print_rules: bool,
    pub top: usize,
}

fn device_text(out: &mut dyn Write, d: &DeviceReport) -> std::io::Result<()> {
    let c = &d.categories;
    writeln!(out, "  dev{} (rules: {})", d.device, c.rules)?;
    writeln!(
        out,
        "    {:<20} {:>18} {:>18} {:>18}",
        "category", "at allocated peak", "at dynamic peak", "own peak"
    )?;
    let mut names: Vec<&String> = c.at_allocated_peak.keys().collect();
    // Largest at the allocated peak first; empty categories last.
    names.sort_by(|a, b| {
        c.at_allocated_peak[*b]
            .cmp(&c.at_allocated_peak[*a])
            .then(a.cmp(b))
    });
    for name in names {
        let get = |m: &std::collections::BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
        if get(&c.peaks) == 0 && get(&c.at_allocated_peak) == 0 && get(&c.at_dynamic_peak) == 0 {
            continue;
        }
        writeln!(
            out,
            "    {:<20} {:>18} {:>18} {:>18}",
            name,
            Bytes(get(&c.at_allocated_peak)).to_string(),
            Bytes(get(&c.at_dynamic_peak)).to_string(),
            Bytes(get(&c.peaks)).to_string()
        )?;
    }
    writeln!(
        out,
        "    {:<20} {:>18} {:>18}",
        "total",
        Bytes(d.figures.allocated_peak).to_string(),
        Bytes(d.figures.dynamic_peak).to_string()
    )?;
    if !d.sites_at_peak.is_empty() {
        writeln!(
            out,
            "    allocation sites at the allocated peak (largest first):"
        )?;
    }
    for s in &d.sites_at_peak {
        writeln!(
            out,
            "    {:>12} {:>6}x  {}",
            Bytes(s.bytes).to_string(),
            s.count,
            s.site
        )?;
    }
    Ok(())
}

pub fn run(opts: &ProfileOptions, out: &mut dyn Write) -> Outcome {
    if opts.print_rules {
        return match out.write_all(print_default_rules().as_bytes()) {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::from_errors(super::write_error(&e)),
        };
    }
    if opts.snapshots.is_empty() {
        return Outcome::errors(vec![
            "no snapshot given (memgate profile SNAPSHOT…, or --print-rules)".into(),
        ]);
    }
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let batch = analyse_all(&opts.snapshots, &rules, opts.top);
    let mut more = Vec::new();
    let written = match opts.format {
        OutputFormat::Json => {
            let docs: Vec<_> = batch.done.iter().map(snapshot_json).collect();
            write_json(out, &json!({"schema_version": 1, "snapshots": docs}))
        }
        OutputFormat::Text => batch.done.iter().try_for_each(|a| {
            writeln!(out, "{}", printable(&a.path.display().to_string()))?;
            a.devices.iter().try_for_each(|d| device_text(out, d))
        }),
    };
    if let Err(e) = written {
        more.extend(super::write_error(&e));
    }
    if let Some(path) = &opts.html {
        let timelines: Vec<Vec<Timeline>> = batch
            .done
            .iter()
            .map(|a| {
                a.devices
                    .iter()
                    .map(|d| timeline(&a.snapshot, d.device, &rules, html::MAX_POINTS))
                    .collect()
            })
            .collect();
        let sections: Vec<Section<'_>> = batch
            .done
            .iter()
            .zip(&timelines)
            .flat_map(|(a, ts)| {
                a.devices.iter().zip(ts).map(|(d, t)| Section {
                    path: a.path.display().to_string(),
                    report: d,
                    timeline: t,
                })
            })
            .collect();
        if let Err(e) = std::fs::write(path, html::render(&sections)) {
            more.push(format!(
                "{}: cannot write the HTML page: {e}",
                path.display()
            ));
        }
    }
    batch.outcome(more)
}
