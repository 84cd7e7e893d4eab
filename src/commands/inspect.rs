//! `memgate inspect`: what is in a file, without analysis.

use std::io::Write;

use crate::document::{InspectDocument, SnapshotInventory};
use crate::report::{document_json, inspect};
use crate::{input, snapshot};

use super::{Outcome, OutputFormat};

pub struct InspectOptions {
    pub snapshots: Vec<String>,
    pub format: OutputFormat,
}

pub fn run(opts: &InspectOptions, out: &mut dyn Write) -> Outcome {
    let paths = match crate::walk::expand(&opts.snapshots, None) {
        Ok(p) => p,
        Err(errors) => return Outcome::from_errors(errors.into_iter().map(Into::into).collect()),
    };
    let results = input::par_map(&paths, |p| {
        snapshot::load(p).map(|s| SnapshotInventory::of(p, &s))
    });
    let mut errors = Vec::new();
    let mut inventories = Vec::new();
    for r in results {
        match r {
            Ok(v) => inventories.push(v),
            Err(e) => errors.push(e.into()),
        }
    }
    let doc = InspectDocument::new(inventories);
    let written = match opts.format {
        OutputFormat::Json => document_json::write(out, &doc),
        OutputFormat::Text => inspect::text(out, &doc),
    };
    if let Err(e) = written {
        errors.extend(super::write_error(e));
    }
    Outcome::from_errors(errors)
}
