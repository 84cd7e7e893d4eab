//! `memgate peak`: Mosaic's three figures, the allocated and reserved peaks
//! with where each falls (phase, iteration, time), the OOMs in detail, and
//! the allocations live at one peak (`--at`, default the allocated peak)
//! grouped by call stack.

use std::io::Write;

use crate::analysis::Window;
use crate::document::PeakDocument;
use crate::report::{document_json, peak};

pub use crate::analysis::PeakAt;

use super::analysed::{analyse_all, rules, Asked};
use super::{Outcome, OutputFormat};

pub struct PeakOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
    pub top: usize,
    pub rules: String,
    /// Whose live stacks to list.
    pub at: PeakAt,
    /// Figures inside this window only (SPEC §11).
    pub window: Option<Window>,
}

pub fn run(opts: &PeakOptions, out: &mut dyn Write) -> Outcome {
    let rules = match rules(&opts.rules) {
        Ok(r) => r,
        Err(o) => return o,
    };
    let mut batch = analyse_all(
        &opts.snapshots,
        &rules,
        opts.top,
        Asked {
            stacks_at: Some(opts.at),
            window: opts.window.as_ref(),
            ..Asked::default()
        },
    );
    let doc = PeakDocument::new(batch.documents().0);
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => peak::text(out, &doc),
    };
    batch.outcome(written.err().and_then(super::write_error))
}
