//! `memgate peak`: Mosaic's three figures, the allocated and reserved peaks
//! with where each falls (phase, iteration, time), the OOMs in detail, and
//! the allocations live at one peak (`--at`, default the allocated peak)
//! grouped by call stack.

use std::io::Write;
use std::path::PathBuf;

use crate::analysis::{Request, Window};
use crate::document::PeakDocument;
use crate::error::OutputError;
use crate::report::{document_json, metrics, peak};

pub use crate::analysis::PeakAt;

use super::analysed::{analyse_all, refuse_over_inputs, rules};
use super::{Outcome, OutputFormat};

pub struct PeakOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    pub top: usize,
    pub rules: String,
    /// `--categories`: custom rules (JSON object or TOML inline table)
    /// tried before `rules`.
    pub categories: Option<String>,
    /// Whose live stacks to list.
    pub at: PeakAt,
    /// Figures inside this window only (docs/figures.md#windows).
    pub window: Option<Window>,
    /// Also write the figures as GitLab's metrics report (OpenMetrics);
    /// `-`: to stdout, in place of the text or JSON.
    pub metrics: Option<PathBuf>,
    /// `--project-root` and `--user-code`: what names an allocation site.
    pub sites: crate::analysis::SiteFlags,
}

pub fn run(opts: &PeakOptions, out: &mut dyn Write) -> Outcome {
    if let Some(p) = opts.metrics.as_deref().filter(|p| p.as_os_str() != "-") {
        if let Err(o) = refuse_over_inputs("--metrics", p, &opts.snapshots, &opts.rules) {
            return o;
        }
    }
    let rules = match rules(&opts.rules, opts.categories.as_deref(), &opts.sites) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut batch = analyse_all(
        &opts.snapshots,
        &rules,
        Request {
            stacks_at: Some(opts.at),
            window: opts.window.as_ref(),
            ..Request::top(opts.top)
        },
    );
    let doc = PeakDocument::new(batch.documents().0);
    let mut more = Vec::new();
    let report = opts
        .metrics
        .as_ref()
        .map(|p| (p, metrics::figures(&doc.snapshots)));
    let written = match (&report, opts.format) {
        (Some((p, text)), _) if p.as_os_str() == "-" => out.write_all(text.as_bytes()),
        (_, OutputFormat::Json) => document_json::write(out, &doc),
        (_, OutputFormat::Text) => peak::text(out, &doc),
    };
    more.extend(written.err().and_then(super::write_error));
    if let Some((path, text)) = report.filter(|(p, _)| p.as_os_str() != "-") {
        if let Err(error) = super::write_report(path, text.as_bytes()) {
            more.push(
                OutputError::Report {
                    path: path.clone(),
                    error,
                }
                .into(),
            );
        }
    }
    batch.outcome(more)
}
