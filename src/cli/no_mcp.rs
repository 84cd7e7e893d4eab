//! `memgate mcp` in a build without the `mcp` feature (the gate binary of
//! the Action, the Docker image and the release): the command is still
//! recognised, so a user who asks for the server gets one line saying
//! which builds have it, not clap's "unrecognized subcommand" and usage.

use std::ffi::OsString;

use clap::Args;

use crate::commands::Outcome;
use crate::error::UsageError;

/// Whatever follows `mcp` (`--root`, `--cache-mib`, `--help`): taken and
/// ignored, as the answer is the same for all of them.
#[derive(Debug, Args)]
pub struct McpNotBuilt {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<OsString>,
}

impl McpNotBuilt {
    pub fn run(&self) -> Outcome {
        Outcome::error(UsageError::McpNotBuilt)
    }
}
