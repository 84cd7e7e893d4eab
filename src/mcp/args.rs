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
    /// The most memory (MiB) the decoded snapshots kept between calls may
    /// hold, labels included; the least recently used go first.
    #[arg(long = "cache-mib", value_name = "MIB", default_value_t = super::CACHE_BYTES >> 20)]
    pub cache_mib: u64,
}

impl McpArgs {
    /// Serve until the client closes stdin.
    pub fn run(&self) -> Outcome {
        match super::serve(&self.roots, self.cache_mib.saturating_mul(1 << 20)) {
            Ok(()) => Outcome::ok(),
            Err(e) => Outcome::error(UsageError::Mcp(e)),
        }
    }
}
