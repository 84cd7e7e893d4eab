//! `--format json` of the analysis documents: pretty-printed, keys in the
//! documents' field order, one trailing newline.

use std::io::{self, Write};

use serde::Serialize;

pub fn write(out: &mut dyn Write, doc: &impl Serialize) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, doc)?;
    writeln!(out)
}
