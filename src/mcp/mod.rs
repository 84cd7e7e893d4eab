//! `memgate mcp`: a Model Context Protocol server over stdio (the official
//! Rust SDK, `rmcp`) whose tools answer with memgate's own documents,
//! findings and verdicts. Snapshots are decoded once per session
//! ([`cache`]), answers fit a context window ([`page`]), and every path is
//! confined to the roots the server was started with ([`roots`]), every
//! file behind a directory, a pattern or a budget too ([`confine`]); and
//! the process itself is confined to them ([`crate::beneath`]): every open,
//! listing and write is resolved beneath a root's directory descriptor, so
//! a path checked by name and swapped for a link meanwhile leads nowhere.
//! Nothing in a snapshot is executed and nothing goes to the network:
//! stdin and stdout carry the protocol, stderr nothing but errors.

mod answer;
mod args;
mod cache;
mod confine;
mod gate;
mod lines;
mod page;
mod params;
mod roots;
mod schemas;
mod summary;
mod tools;
mod work;

#[cfg(test)]
mod no_history_tests;

use std::path::PathBuf;
use std::sync::Arc;

use rmcp::ServiceExt;

pub use args::McpArgs;

/// The decoded snapshots a session keeps, at most (heap bytes), unless
/// `--cache-mib` says otherwise.
pub const CACHE_BYTES: u64 = 2 << 30;

/// Serve on stdin/stdout until the client closes the connection, keeping
/// at most `cache_bytes` of decoded snapshots. An error when a root is
/// unusable or the transport fails.
pub fn serve(roots: &[PathBuf], cache_bytes: u64) -> Result<(), String> {
    let roots = roots::Roots::new(roots)?;
    // From here on every file this process opens, lists or writes is
    // resolved beneath a root's descriptor: a name checked by `roots` and
    // then swapped for a link cannot lead out.
    crate::beneath::confine(roots.dirs()).map_err(|e| format!("cannot open the roots: {e}"))?;
    let work = work::Work {
        roots,
        cache: Arc::new(cache::Cache::new(cache_bytes)),
        memo: work::Memo::default(),
        built_in: work::BuiltIn::default(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the server: {e}"))?;
    runtime.block_on(async move {
        let (input, output) = rmcp::transport::stdio();
        let (server_in, server_out, written) = lines::frame(input, output);
        let service = tools::Memgate::new(work)
            .serve((server_in, server_out))
            .await
            .map_err(|e| format!("the MCP session could not start: {e}"))?;
        let ended = service
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP session ended with an error: {e}"));
        // Everything the server wrote reaches stdout before the process ends.
        let _ = written.await;
        ended
    })
}
