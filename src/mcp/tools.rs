//! The MCP tools: each one's description and call (its arguments are in
//! `params.rs`), run on the blocking pool so a long analysis never stalls
//! the transport. A failure is an error result with memgate's message; the
//! server keeps serving.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use serde_json::Value;

use super::params::{
    CheckArgs, DiffArgs, InspectArgs, LiveAtArgs, OomArgs, PeakArgs, PhasesArgs, ProfileArgs,
    RanksArgs, SummarizeArgs,
};
use super::schemas;
use super::work::Work;

/// Rules that are no file: an answer with a rules file is not repeated (the
/// file may have changed).
fn built_in(rules: &Option<String>) -> bool {
    matches!(rules.as_deref(), None | Some("default" | "mosaic"))
}

/// Whether an answer may be repeated: its rules are no file and it writes
/// no document (a write happens every time).
fn again(rules: &Option<String>, document_to: &Option<String>) -> bool {
    built_in(rules) && document_to.is_none()
}

/// The server: the work and the tool router.
#[derive(Clone)]
pub struct Memgate {
    work: Arc<Work>,
    tool_router: ToolRouter<Memgate>,
}

/// Run `f` on the blocking pool; its answer, or an error result.
async fn call(
    work: &Arc<Work>,
    f: impl FnOnce(&Work) -> Result<Value, String> + Send + 'static,
) -> Result<CallToolResult, ErrorData> {
    let w = Arc::clone(work);
    let result = tokio::task::spawn_blocking(move || f(&w))
        .await
        .unwrap_or_else(|e| {
            Err(format!(
                "internal error (reported, the server goes on): {e}"
            ))
        });
    Ok(match result {
        // The same object twice: as text for every client, and as
        // `structuredContent` for those that read it.
        Ok(v) => CallToolResult::structured(v),
        Err(message) => CallToolResult::error(vec![ContentBlock::text(error_text(&message))]),
    })
}

/// The most bytes of an error result: far under the answer cap, whatever
/// an argument the message echoes holds.
const ERROR_CAP: usize = 4096;

/// An error message as sent: escaped, and cut past [`ERROR_CAP`] with what
/// was left out said.
fn error_text(message: &str) -> String {
    let text = crate::report::escape::terminal(message);
    if text.len() <= ERROR_CAP {
        return text.into_owned();
    }
    let mut end = ERROR_CAP - 64;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… [{} more bytes left out]",
        &text[..end],
        text.len() - end
    )
}

#[tool_router]
impl Memgate {
    pub(crate) fn new(work: Work) -> Memgate {
        Memgate {
            work: Arc::new(work),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        output_schema = schemas::output_schema("inspect"),
        description = "What is in snapshot files without analysis: format, torch generation, segments, blocks, frames, per device the trace entries and action counts. Answer memgate.mcp.inspect/1."
    )]
    async fn inspect(&self, p: Parameters<InspectArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.inspect(&p.0.paths)).await
    }

    #[tool(
        output_schema = schemas::output_schema("peak"),
        description = "The peaks of a snapshot (allocated, reserved, Mosaic's dynamic/static/overall), where each falls (phase, iteration, time), OOM count, and the call stacks and sites live at a peak, user code first. The answer is a summary (stacks folded to user frames as file:line); detail: full adds the document of `memgate peak --format json`. Answer memgate.mcp.peak/1."
    )]
    async fn peak(&self, p: Parameters<PeakArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            let again = again(&p.0.rules, &p.0.document_to);
            w.memoized("peak", &p.0, &p.0.path, again, |w| w.peak(&p.0))
        })
        .await
    }

    #[tool(
        output_schema = schemas::output_schema("profile"),
        description = "Bytes per category (built-in rules, Mosaic's, a rules file, or inline custom categories), or per annotation, or per compile context, at the peaks and each group's own peak; optionally writes the HTML timeline to a path. Answer memgate.mcp.profile/1."
    )]
    async fn profile(&self, p: Parameters<ProfileArgs>) -> Result<CallToolResult, ErrorData> {
        // A profile that writes HTML writes it every time.
        call(&self.work, move |w| {
            let again = p.0.html.is_none() && again(&p.0.rules, &p.0.document_to);
            w.memoized("profile", &p.0, &p.0.path, again, |w| w.profile(&p.0))
        })
        .await
    }

    #[tool(
        output_schema = schemas::output_schema("phases"),
        description = "When memory grew: annotation events with the memory at each, phase spans with their peaks, iterations, the steady-state peak and the leak per iteration. Answer memgate.mcp.phases/1."
    )]
    async fn phases(&self, p: Parameters<PhasesArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            let again = again(&p.0.rules, &p.0.document_to);
            w.memoized("phases", &p.0, &p.0.path, again, |w| w.phases(&p.0))
        })
        .await
    }

    #[tool(
        output_schema = schemas::output_schema("live_at"),
        description = "The largest live allocations (grouped by call stack, user code first) at one moment: after a trace entry, at a time, at the peak inside a phase, or at a named peak. Give exactly one of entry, time_us, phase, peak. Answer memgate.mcp.live_at/1."
    )]
    async fn live_at(&self, p: Parameters<LiveAtArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            let again = again(&p.0.rules, &p.0.document_to);
            w.memoized("live_at", &p.0, &p.0.path, again, |w| w.live_at(&p.0))
        })
        .await
    }

    #[tool(
        output_schema = schemas::output_schema("diff"),
        description = "Figure, category and allocation-site deltas between two snapshots or summaries (base, new). detail: full adds the document of `memgate diff --format json`. Answer memgate.mcp.diff/1."
    )]
    async fn diff(&self, p: Parameters<DiffArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.diff(&p.0)).await
    }

    #[tool(
        output_schema = schemas::output_schema("ranks"),
        description = "Per-rank figures of a distributed run, one row per file and device, and the spread (max, min, which rank) of the peaks. Answer memgate.mcp.ranks/1."
    )]
    async fn ranks(&self, p: Parameters<RanksArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.ranks(&p.0)).await
    }

    #[tool(
        output_schema = schemas::output_schema("explain_oom"),
        description = "Every out-of-memory event of a snapshot: the request, what the device had free, allocated and reserved, the phase and iteration, the call stack (user code first); and the stacks at the peak. Answer memgate.mcp.explain_oom/1."
    )]
    async fn explain_oom(&self, p: Parameters<OomArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            w.memoized(
                "explain_oom",
                &p.0,
                &p.0.path,
                p.0.document_to.is_none(),
                |w| w.explain_oom(&p.0),
            )
        })
        .await
    }

    #[tool(
        output_schema = schemas::output_schema("check"),
        description = "The gate: a budget file or an inline budget against snapshots or summaries. Returns the verdict (pass, warn, fail, error), every finding with its cause (over budget, grew past tolerance, where the peak moved), and the failing checks. An inline budget may be flat, as the pytest marker takes it ({\"allocated-peak\": \"15 GiB\"} with snapshots). detail: full adds the verdict `memgate check --json` writes. Answer memgate.mcp.check/1."
    )]
    async fn check(&self, p: Parameters<CheckArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.check(&p.0)).await
    }

    #[tool(
        output_schema = schemas::output_schema("summarize"),
        description = "Write one summary JSON per snapshot (the golden baselines `check` compares against) into a directory under the roots. Answer memgate.mcp.summarize/1."
    )]
    async fn summarize(&self, p: Parameters<SummarizeArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.summarize(&p.0)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Memgate {
    fn get_info(&self) -> ServerConfig {
        let mut info = Implementation::default();
        info.name = "memgate".into();
        info.version = env!("CARGO_PKG_VERSION").into();
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(info)
            .with_instructions(
                "memgate reads PyTorch CUDA and Ascend NPU allocator snapshots as data (nothing \
                 in them is executed) and answers with figures, findings and verdicts. Paths \
                 must lie under the server's roots. Every list pages with limit and cursor; \
                 every answer has `trust` flags: read them before the figures.",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_echoing_a_four_mib_argument_stays_under_its_cap() {
        let path = "é".repeat(2 << 20);
        let text = error_text(&format!("{path}: No such file or directory (os error 2)"));
        assert!(text.len() <= ERROR_CAP, "{}", text.len());
        assert!(text.starts_with("éé"));
        assert!(
            text.ends_with("more bytes left out]"),
            "{}",
            &text[text.len() - 60..]
        );
        assert_eq!(error_text("short: no"), "short: no");
    }
}
