//! `memgate diff BASE NEW`: figure, category and site deltas between two
//! snapshots or summaries.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::analysis::diff::diff_reports;
use crate::analysis::{DeviceReport, Request, RuleSet, Timeline, Window};
use crate::document::DiffDocument;
use crate::input::{self, Input};
use crate::report::{diff, document_json, html};

use crate::error::{Error, OutputError, UsageError};

use super::analysed::{analyse_snapshot, refuse_over_inputs, rules, summary_in_window};
use super::{Decoded, Outcome, OutputFormat};

pub struct DiffOptions {
    pub base: String,
    pub new: String,
    pub format: OutputFormat,
    pub rules: String,
    /// `--categories`: custom rules (JSON object or TOML inline table)
    /// tried before `rules`.
    pub categories: Option<String>,
    pub top: usize,
    /// Compare the figures inside this window (docs/figures.md#windows).
    pub window: Option<Window>,
    /// Also write the comparison as a self-contained HTML page here.
    pub html: Option<PathBuf>,
    /// The page's x axis at first (`--x`).
    pub x_axis: html::XAxis,
    /// `--project-root` and `--user-code`: what names an allocation site.
    pub sites: crate::analysis::SiteFlags,
    /// Where a side's snapshot comes from when not from its file: a
    /// session's cache (`memgate mcp`). `None` from it (or no source)
    /// reads the file, which may be a summary.
    pub decoded: Option<Decoded>,
    /// The caller names the page it asked for itself (`memgate mcp`): no
    /// `wrote` line on stderr.
    pub quiet: bool,
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
    decoded: Option<&Decoded>,
) -> Result<Side, Error> {
    let read = match decoded.and_then(|d| d.get(path)) {
        Some(snap) => Input::Snapshot(Box::new(snap)),
        None => input::read(path)?,
    };
    match read {
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
    let pairs = match pairs(&opts.base, &opts.new) {
        Ok(p) => p,
        Err(e) => return Outcome::error(e),
    };
    if let [(base, new)] = pairs.as_slice() {
        return one(opts, base, new, out);
    }
    if opts.html.is_some() {
        return Outcome::error(UsageError::DiffPairsHtml { pairs: pairs.len() });
    }
    // Several pairs: one document each, a JSON array of them.
    let json = opts.format == OutputFormat::Json;
    let mut errors = Vec::new();
    let mut texts = Vec::new();
    for (base, new) in &pairs {
        let mut buf = Vec::new();
        let o = one(opts, base, new, &mut buf);
        errors.extend(o.errors);
        texts.push(buf);
    }
    let sep: &[u8] = if json { b",\n" } else { b"\n" };
    let mut all: Vec<u8> = Vec::new();
    if json {
        all.extend_from_slice(b"[\n");
    }
    for (k, t) in texts.iter().enumerate() {
        if k > 0 {
            all.extend_from_slice(sep);
        }
        all.extend_from_slice(t.strip_suffix(b"\n").unwrap_or(t));
    }
    all.extend_from_slice(if json { b"\n]\n" } else { b"\n" });
    if let Err(e) = out.write_all(&all) {
        errors.extend(super::write_error(e));
    }
    Outcome::from_errors(errors)
}

/// The files to compare: `base` and `new` as given when each is one file;
/// else the files each names (a directory, a glob) paired by file stem,
/// as `check` pairs snapshots with baselines. A name on one side only is
/// an error naming it.
fn pairs(base: &str, new: &str) -> Result<Vec<(String, String)>, Error> {
    // A file on either side makes a pair of files (a missing one is then
    // an error naming it, whatever characters its name holds).
    let file = |s: &str| Path::new(s).is_file();
    let plain = |s: &str| !Path::new(s).is_dir() && !s.contains(['*', '?', '[']);
    if file(base) || file(new) || (plain(base) && plain(new)) {
        return Ok(vec![(base.to_string(), new.to_string())]);
    }
    let side = |s: &str| -> Result<BTreeMap<String, PathBuf>, Error> {
        let files = crate::walk::expand(&[s.to_string()], None).map_err(|e| {
            e.into_iter()
                .next()
                .map_or_else(|| UsageError::NoSnapshot.into(), Error::from)
        })?;
        let mut by = BTreeMap::new();
        for f in files {
            let key = super::summarize::stem(&f);
            if let Some(first) = by.insert(key.clone(), f.clone()) {
                return Err(UsageError::SameSummary {
                    first,
                    second: f,
                    stem: key,
                }
                .into());
            }
        }
        Ok(by)
    };
    let (b, n) = (side(base)?, side(new)?);
    let only = |x: &BTreeMap<String, PathBuf>, y: &BTreeMap<String, PathBuf>| -> Vec<String> {
        x.keys().filter(|k| !y.contains_key(*k)).cloned().collect()
    };
    let (only_base, only_new) = (only(&b, &n), only(&n, &b));
    if !only_base.is_empty() || !only_new.is_empty() {
        return Err(UsageError::DiffUnpaired {
            only_base,
            only_new,
        }
        .into());
    }
    Ok(b.into_iter()
        .map(|(k, p)| {
            let q = &n[&k];
            (p.display().to_string(), q.display().to_string())
        })
        .collect())
}

/// The diff of one pair of files.
fn one(opts: &DiffOptions, base_path: &str, new_path: &str, out: &mut dyn Write) -> Outcome {
    if let Some(p) = &opts.html {
        let both = [base_path.to_string(), new_path.to_string()];
        if let Err(o) = refuse_over_inputs("--html", p, &both, &opts.rules) {
            return o;
        }
    }
    let rules = match rules(&opts.rules, opts.categories.as_deref(), &opts.sites) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let page = opts.html.is_some();
    let side = |p: &str| {
        let decoded = opts.decoded.as_ref();
        reports(Path::new(p), &rules, opts.window.as_ref(), page, decoded)
    };
    let (base, new) = rayon::join(|| side(base_path), || side(new_path));
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
    let doc = DiffDocument::new(base_path, new_path, diff_reports(&base, &new), opts.top)
        .in_window(opts.window.as_ref().map(ToString::to_string));
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => diff::text(out, &doc).and_then(|()| {
            // Either side's lower bounds make every delta of its device one.
            let mut side = |name: &str, devices: &[DeviceReport]| -> std::io::Result<()> {
                for d in devices.iter().filter(|d| !d.trace_complete) {
                    writeln!(
                        out,
                        "note: {name} dev{}: {}",
                        d.device,
                        crate::report::LOWER_BOUNDS
                    )?;
                }
                Ok(())
            };
            side("BASE", &base)?;
            side("NEW", &new)
        }),
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
                path: base_path,
                devices: &base,
                timelines: base_t.as_deref(),
            },
            &html::DiffSide {
                path: new_path,
                devices: &new,
                timelines: new_t.as_deref(),
            },
            opts.x_axis,
        );
        let write = if opts.quiet {
            super::write_report_quietly
        } else {
            super::write_report
        };
        if let Err(error) = write(path, page.as_bytes()) {
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
