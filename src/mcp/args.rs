//! `memgate mcp`'s command line.

use std::path::PathBuf;

use clap::Args;

use crate::commands::Outcome;
use crate::error::UsageError;

#[derive(Debug, Args)]
pub struct McpArgs {
    /// A directory the server may read snapshots from and write reports
    /// to (repeatable; default: the current directory). Paths are
    /// canonicalised, symbolic links included, before they are checked.
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
}

impl McpArgs {
    /// Serve until the client closes stdin.
    pub fn run(&self) -> Outcome {
        match super::serve(&self.roots) {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::error(UsageError::Mcp(e)),
        }
    }
}
