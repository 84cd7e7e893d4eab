//! `memgate diff BASE NEW`: figure, category and site deltas between two
//! snapshots or summaries.

use std::io::Write;
use std::path::Path;

use crate::analysis::diff::diff_reports;
use crate::analysis::{DeviceReport, RuleSet, Window};
use crate::document::DiffDocument;
use crate::input::{self, Input};
use crate::report::{diff, document_json};

use crate::error::Error;

use super::analysed::{analyse_snapshot, rules, summary_in_window};
use super::{Outcome, OutputFormat};

pub struct DiffOptions {
    pub base: String,
    pub new: String,
    pub format: OutputFormat,
    pub rules: String,
    pub top: usize,
    /// Compare the figures inside this window (SPEC §11).
    pub window: Option<Window>,
}

/// Device reports of a summary JSON or a snapshot (all sites kept, and
/// where each peak falls), the file read once; `true` when it was a
/// summary (which does not say where its peaks fall).
fn reports(
    path: &Path,
    rules: &RuleSet,
    window: Option<&Window>,
) -> Result<(Vec<DeviceReport>, bool), Error> {
    match input::read(path)? {
        Input::Summary(s) => Ok((summary_in_window(path, s.devices, window)?, true)),
        Input::Snapshot(snap) => Ok((
            analyse_snapshot(path, &snap, rules, usize::MAX, window, None)?,
            false,
        )),
    }
}

pub fn run(opts: &DiffOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let (base, new) = rayon::join(
        || reports(Path::new(&opts.base), &rules, opts.window.as_ref()),
        || reports(Path::new(&opts.new), &rules, opts.window.as_ref()),
    );
    let ((mut base, base_is_summary), (mut new, new_is_summary)) = match (base, new) {
        (Ok(b), Ok(n)) => (b, n),
        (b, n) => {
            let errors = b.err().into_iter().chain(n.err());
            return Outcome::from_errors(errors.collect());
        }
    };
    // A summary keeps only its top sites; cut a snapshot's list to the same
    // length so a site below the cut does not look appeared or vanished.
    let kept = |r: &[DeviceReport]| r.iter().map(|d| d.sites_at_peak.len()).max();
    let summary_sites = [(base_is_summary, kept(&base)), (new_is_summary, kept(&new))]
        .iter()
        .filter(|(summary, _)| *summary)
        .filter_map(|(_, k)| *k)
        .min();
    if let Some(k) = summary_sites {
        for d in base.iter_mut().chain(new.iter_mut()) {
            d.sites_at_peak.truncate(k);
        }
    }
    let doc = DiffDocument::new(&opts.base, &opts.new, diff_reports(&base, &new), opts.top)
        .in_window(opts.window.as_ref().map(ToString::to_string));
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => diff::text(out, &doc),
    };
    match written {
        Ok(()) => Outcome::ok(),
        Err(e) => Outcome::from_errors(super::write_error(e).into_iter().collect()),
    }
}
