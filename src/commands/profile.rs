//! `memgate profile`: bytes per category (or per annotation, or per compile
//! context) at the allocated and dynamic peaks and each one's own peak;
//! `--html` writes the timeline by the same groups.

use std::io::Write;
use std::path::PathBuf;

pub use crate::analysis::GroupBy;

use crate::analysis::{Request, Window};
use crate::document::ProfileDocument;
use crate::report::{document_json, html, profile};

use crate::error::{OutputError, UsageError};

use super::analysed::{analyse_all, refuse_over_inputs, rules};
use super::{Outcome, OutputFormat};

pub struct ProfileOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    pub rules: String,
    /// `--categories`: custom rules (JSON object or TOML inline table)
    /// tried before `rules`.
    pub categories: Option<String>,
    /// What `categories` group the bytes by (the rules apply to `Category`).
    pub group_by: GroupBy,
    /// Figures inside this window only (docs/figures.md#windows).
    pub window: Option<Window>,
    pub html: Option<PathBuf>,
    /// The page's x axis at first (`--x`).
    pub x_axis: html::XAxis,
    pub print_rules: bool,
    pub top: usize,
    /// `--project-root` and `--user-code`: what names an allocation site.
    pub sites: crate::analysis::SiteFlags,
}

pub fn run(opts: &ProfileOptions, out: &mut dyn Write) -> Outcome {
    if opts.print_rules {
        return match out.write_all(crate::report::rules::default_rules().as_bytes()) {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::from_errors(super::write_error(e).into_iter().collect()),
        };
    }
    if opts.snapshots.is_empty() {
        return Outcome::error(UsageError::NoSnapshot);
    }
    if let Some(p) = &opts.html {
        if let Err(o) = refuse_over_inputs("--html", p, &opts.snapshots, &opts.rules) {
            return o;
        }
    }
    let rules = match rules(&opts.rules, opts.categories.as_deref(), &opts.sites) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let points = opts.html.as_ref().map(|_| html::MAX_POINTS);
    let mut batch = analyse_all(
        &opts.snapshots,
        &rules,
        Request {
            group_by: opts.group_by,
            timeline_points: points,
            window: opts.window.as_ref(),
            ..Request::top(opts.top)
        },
    );
    let (snapshots, timelines) = batch.documents();
    let doc = ProfileDocument::new(snapshots);
    let mut more = Vec::new();
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => profile::text(out, &doc),
    };
    if let Err(e) = written {
        more.extend(super::write_error(e));
    }
    if let Some(path) = &opts.html {
        if let Err(error) =
            super::write_report(path, html::render(&doc, &timelines, opts.x_axis).as_bytes())
        {
            more.push(
                OutputError::Html {
                    path: path.clone(),
                    error,
                }
                .into(),
            );
        }
    }
    batch.outcome(more)
}
