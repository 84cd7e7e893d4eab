//! `memgate phases`: when memory grew. Per device, every annotation event
//! with Mosaic's key and the memory at it, the phase spans, and the
//! iterations with the steady-state peak and the leak fit (docs/figures.md#time-structure).

use std::io::Write;

use crate::analysis::{phases_with_rules, Boundary};
use crate::document::{PhasedSnapshot, PhasesDocument, LIST_LIMIT};
use crate::error::Error;
use crate::report::{document_json, phases as render};
use crate::{input, snapshot};

use super::analysed::rules;
use super::{Outcome, OutputFormat};
use crate::analysis::SiteFlags;

pub struct PhasesOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    /// Keep annotation events whose name contains one of these (all when
    /// empty), as Mosaic's `--annotation` does.
    pub annotation: Vec<String>,
    /// Iterations start at annotations whose name starts with this
    /// (default: `ProfilerStep#`, else `Optimizer.zero_grad`, else
    /// `Optimizer.step`).
    pub iteration_boundary: Option<String>,
    /// `default`, `mosaic` or a rules file; its `[phases]` table gives the
    /// phases of devices without annotations.
    pub rules: String,
    /// `--categories`: custom rules (JSON object or TOML inline table)
    /// tried before `rules`.
    pub categories: Option<String>,
    /// Every item of every list (else each is cut at
    /// [`LIST_LIMIT`](crate::document::LIST_LIMIT)).
    pub all: bool,
}

pub fn run(opts: &PhasesOptions, out: &mut dyn Write) -> Outcome {
    let paths = match crate::walk::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::from_errors(errors.into_iter().map(Error::from).collect()),
    };
    let rules = match rules(
        &opts.rules,
        opts.categories.as_deref(),
        &SiteFlags::default(),
    ) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let boundary = match &opts.iteration_boundary {
        Some(p) => Boundary::Prefix(p.clone()),
        None => Boundary::Default,
    };
    let mut done = Vec::new();
    let mut errors: Vec<Error> = Vec::new();
    let results = input::par_map(&paths, |p| {
        snapshot::load(p).map(|snap| {
            let devices = phases_with_rules(&snap, &boundary, &opts.annotation, &rules);
            let limit = (!opts.all).then_some(LIST_LIMIT);
            PhasedSnapshot::new(p, devices, snap.warnings, limit)
        })
    });
    for r in results {
        match r {
            Ok(s) => done.push(s),
            Err(e) => errors.push(e.into()),
        }
    }
    let doc = PhasesDocument::new(done);
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => render::text(out, &doc),
    };
    errors.extend(written.err().and_then(super::write_error));
    Outcome::from_errors(errors)
}
