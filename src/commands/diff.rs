//! `memgate diff BASE NEW`: figure, category and site deltas between two
//! snapshots or summaries.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analysis::diff::diff_reports;
use crate::analysis::{DeviceReport, Request, RuleSet, Timeline, Window};
use crate::document::DiffDocument;
use crate::input::{self, Input};
use crate::report::{diff, document_json, html};

use crate::error::{Error, OutputError};

use super::analysed::{analyse_snapshot, refuse_over_inputs, rules, summary_in_window};
use super::{Outcome, OutputFormat};

pub struct DiffOptions {
    pub base: String,
    pub new: String,
    pub format: OutputFormat,
    pub rules: String,
    pub top: usize,
    /// Compare the figures inside this window (docs/figures.md#windows).
    pub window: Option<Window>,
    /// Also write the comparison as a self-contained HTML page here.
    pub html: Option<PathBuf>,
    /// The page's x axis at first (`--x`).
    pub x_axis: html::XAxis,
}

/// One side's device reports, whether it was a summary, and (for the page)
/// a snapshot's device timelines.
type Side = (Vec<DeviceReport>, bool, Option<Vec<Timeline>>);

/// Device reports of a summary JSON or a snapshot (all sites kept, and
/// where each peak falls), the file read once; `true` when it was a
/// summary (which has no timeline to draw). With `timelines`, a
/// snapshot's device timelines for the page too, from the same replay.
fn reports(
    path: &Path,
    rules: &RuleSet,
    window: Option<&Window>,
    timelines: bool,
) -> Result<Side, Error> {
    match input::read(path)? {
        Input::Summary(s) => Ok((summary_in_window(path, s.devices, window)?, true, None)),
        Input::Snapshot(snap) => {
            let req = Request {
                window,
                timeline_points: timelines.then_some(html::MAX_POINTS),
                ..Request::top(usize::MAX)
            };
            let (devices, timelines) = analyse_snapshot(path, &snap, rules, req)?;
            Ok((devices, false, timelines))
        }
    }
}

pub fn run(opts: &DiffOptions, out: &mut dyn Write) -> Outcome {
    if let Some(p) = &opts.html {
        let both = [opts.base.clone(), opts.new.clone()];
        if let Err(o) = refuse_over_inputs("--html", p, &both, &opts.rules) {
            return o;
        }
    }
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let page = opts.html.is_some();
    let (base, new) = rayon::join(
        || reports(Path::new(&opts.base), &rules, opts.window.as_ref(), page),
        || reports(Path::new(&opts.new), &rules, opts.window.as_ref(), page),
    );
    let ((mut base, base_is_summary, base_t), (mut new, new_is_summary, new_t)) = match (base, new)
    {
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
    let mut errors: Vec<Error> = written
        .err()
        .and_then(super::write_error)
        .into_iter()
        .collect();
    if let Some(path) = &opts.html {
        let page = html::render_diff(
            &doc,
            &html::DiffSide {
                path: &opts.base,
                devices: &base,
                timelines: base_t.as_deref(),
            },
            &html::DiffSide {
                path: &opts.new,
                devices: &new,
                timelines: new_t.as_deref(),
            },
            opts.x_axis,
        );
        if let Err(error) = crate::files::write_atomic(path, page.as_bytes()) {
            errors.push(
                OutputError::Html {
                    path: path.clone(),
                    error,
                }
                .into(),
            );
        }
    }
    Outcome::from_errors(errors)
}
