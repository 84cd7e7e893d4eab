//! `memgate diff BASE NEW`: figure, category and site deltas between two
//! snapshots or summaries.

use std::io::Write;
use std::path::Path;

use crate::analysis::diff::diff_reports;
use crate::analysis::{DeviceReport, RuleSet};
use crate::baseline;
use crate::document::DiffDocument;
use crate::report::{diff, document_json};

use super::analysed::{analyse_one, rules};
use super::{Outcome, OutputFormat};

pub struct DiffOptions {
    pub base: String,
    pub new: String,
    pub format: OutputFormat,
    pub rules: String,
    pub top: usize,
}

/// Device reports of a summary JSON or a snapshot (all sites kept).
fn reports(path: &Path, rules: &RuleSet) -> Result<Vec<DeviceReport>, String> {
    if baseline::is_summary(path) {
        return baseline::read_summary(path).map(|s| s.devices);
    }
    analyse_one(path, rules, usize::MAX).map(|a| a.devices)
}

pub fn run(opts: &DiffOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let (base, new) = rayon::join(
        || reports(Path::new(&opts.base), &rules),
        || reports(Path::new(&opts.new), &rules),
    );
    let (mut base, mut new) = match (base, new) {
        (Ok(b), Ok(n)) => (b, n),
        (b, n) => {
            return Outcome::errors(b.err().into_iter().chain(n.err()).collect());
        }
    };
    // A summary keeps only its top sites; cut a snapshot's list to the same
    // length so a site below the cut does not look appeared or vanished.
    let kept = |r: &[DeviceReport]| r.iter().map(|d| d.sites_at_peak.len()).max();
    let summary_sites = [(&opts.base, kept(&base)), (&opts.new, kept(&new))]
        .iter()
        .filter(|(p, _)| baseline::is_summary(Path::new(p)))
        .filter_map(|(_, k)| *k)
        .min();
    if let Some(k) = summary_sites {
        for d in base.iter_mut().chain(new.iter_mut()) {
            d.sites_at_peak.truncate(k);
        }
    }
    let doc = DiffDocument::new(&opts.base, &opts.new, diff_reports(&base, &new), opts.top);
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => diff::text(out, &doc),
    };
    match written {
        Ok(()) => Outcome::ok(),
        Err(e) => Outcome::from_errors(super::write_error(&e)),
    }
}
