//! The MCP tools: each one's arguments (a JSON schema derived from the
//! struct, its doc comments the descriptions) and the call, run on the
//! blocking pool so a long analysis never stalls the transport. A failure
//! is an error result with memgate's message; the server keeps serving.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::work::Work;

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct InspectArgs {
    /// Snapshot files (pickle or JSON), under the server's roots.
    pub paths: Vec<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct PeakArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// Whose live allocations to list by call stack: allocated (the figure to gate, default), dynamic (Mosaic's) or reserved.
    pub at: Option<String>,
    /// Category rules: default, mosaic, or a rules TOML file under the roots.
    pub rules: Option<String>,
    /// Figures inside a window only: FROM..TO as `memgate peak --window` takes it (time_us, +2.5s, #entry, @annotation:START).
    pub window: Option<String>,
    /// How many stacks and sites per page (default 5, at most 1000).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct ProfileArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// Group the bytes by category (default), annotation, or compile-context.
    pub group_by: Option<String>,
    /// Category rules: default, mosaic, or a rules TOML file under the roots.
    pub rules: Option<String>,
    /// Custom categories, {"name": "regex"}, tried in order before the rules (a regex matches a frame's function or file name).
    pub categories: Option<Map<String, Value>>,
    /// Figures inside a window only (FROM..TO).
    pub window: Option<String>,
    /// Also write the HTML report here (a path under the roots); the answer gives the path, never the page.
    pub html: Option<String>,
    /// How many sites and stacks per page (default 5, at most 1000).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct PhasesArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// Keep only annotation events whose name contains one of these.
    pub annotation: Option<Vec<String>>,
    /// Iterations start at annotations whose name begins with this (default ProfilerStep#, else Optimizer.zero_grad, else Optimizer.step).
    pub iteration_boundary: Option<String>,
    /// default, or a rules file under the roots whose [phases] table names phases by stack.
    pub rules: Option<String>,
    /// How many annotation events, phases and iterations per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct LiveAtArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// The moment after this trace entry (its index in the device's trace).
    pub entry: Option<u64>,
    /// The moment at this time (µs since the epoch): the last entry at or before it.
    pub time_us: Option<i64>,
    /// The device for time_us (default the first).
    pub device: Option<u32>,
    /// The allocated peak inside this annotation (phase), e.g. "## forward ##".
    pub phase: Option<String>,
    /// Which occurrence of the phase, from 0 (default 0).
    pub occurrence: Option<u32>,
    /// A named peak: allocated, dynamic or reserved.
    pub peak: Option<String>,
    /// Category rules: default, mosaic, or a rules file under the roots.
    pub rules: Option<String>,
    /// How many allocation groups per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct DiffArgs {
    /// The baseline: a snapshot or a summary JSON under the roots.
    pub base: String,
    /// The new snapshot or summary JSON under the roots.
    pub new: String,
    /// Category rules: default, mosaic, or a rules file under the roots.
    pub rules: Option<String>,
    /// Compare inside a window of both traces (FROM..TO).
    pub window: Option<String>,
    /// Also write the HTML comparison here (a path under the roots).
    pub html: Option<String>,
    /// How many sites per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct RanksArgs {
    /// One snapshot (or summary-free snapshot) per rank, under the roots.
    pub paths: Vec<String>,
    /// Category rules: default, mosaic, or a rules file under the roots.
    pub rules: Option<String>,
    /// Figures inside a window only (FROM..TO).
    pub window: Option<String>,
    /// How many rows per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct OomArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// How many OOM events and stacks per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CheckArgs {
    /// A budget file (memgate.toml) under the roots; its paths are relative to it.
    pub config: Option<String>,
    /// Or an inline budget with the budget file's structure ({"target": [{"name": …, "budget": {"allocated-peak": "208 MiB"}}]}); its relative paths are the first root's.
    pub budget: Option<Value>,
    /// Snapshots or summaries to judge (override the targets' patterns).
    pub snapshots: Option<Vec<String>>,
    /// A baseline (summary directory, summary JSON or snapshot) for every target.
    pub baseline: Option<String>,
    /// A snapshot or device without a baseline fails instead of warning.
    pub require_baseline: Option<bool>,
    /// Judge inside a window of each trace (FROM..TO).
    pub window: Option<String>,
    /// Also write the HTML report of the run here (a path under the roots).
    pub html: Option<String>,
    /// How many findings and failing checks per page (default 5).
    pub limit: Option<usize>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct SummarizeArgs {
    /// Snapshots to summarize, under the roots.
    pub paths: Vec<String>,
    /// An existing directory under the roots: one `<stem>.json` per snapshot.
    pub output_dir: String,
    /// Category rules: default, mosaic, or a rules file under the roots.
    pub rules: Option<String>,
    /// How many sites and stacks to keep per device (default 50).
    pub top: Option<usize>,
    /// Summarize inside a window (FROM..TO).
    pub window: Option<String>,
    /// Iterations start at annotations whose name begins with this.
    pub iteration_boundary: Option<String>,
}

/// Rules that are no file: an answer with a rules file is not repeated (the
/// file may have changed).
fn built_in(rules: &Option<String>) -> bool {
    matches!(rules.as_deref(), None | Some("default" | "mosaic"))
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
        Ok(v) => CallToolResult::success(vec![ContentBlock::text(v.to_string())]),
        Err(message) => CallToolResult::error(vec![ContentBlock::text(
            crate::report::escape::terminal(&message).into_owned(),
        )]),
    })
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
        description = "What is in snapshot files without analysis: format, torch generation, segments, blocks, frames, per device the trace entries and action counts. Answer memgate.mcp.inspect/1."
    )]
    async fn inspect(&self, p: Parameters<InspectArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.inspect(&p.0.paths)).await
    }

    #[tool(
        description = "The peaks of a snapshot (allocated, reserved, Mosaic's dynamic/static/overall), where each falls (phase, iteration, time), OOM count, and the call stacks and sites live at a peak, user code first. The document equals `memgate peak --format json`. Answer memgate.mcp.peak/1."
    )]
    async fn peak(&self, p: Parameters<PeakArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            w.memoized("peak", &p.0, &p.0.path, built_in(&p.0.rules), |w| {
                w.peak(&p.0)
            })
        })
        .await
    }

    #[tool(
        description = "Bytes per category (built-in rules, Mosaic's, a rules file, or inline custom categories), or per annotation, or per compile context, at the peaks and each group's own peak; optionally writes the HTML timeline to a path. Answer memgate.mcp.profile/1."
    )]
    async fn profile(&self, p: Parameters<ProfileArgs>) -> Result<CallToolResult, ErrorData> {
        // A profile that writes HTML writes it every time.
        call(&self.work, move |w| {
            let again = p.0.html.is_none() && built_in(&p.0.rules);
            w.memoized("profile", &p.0, &p.0.path, again, |w| w.profile(&p.0))
        })
        .await
    }

    #[tool(
        description = "When memory grew: annotation events with the memory at each, phase spans with their peaks, iterations, the steady-state peak and the leak per iteration. Answer memgate.mcp.phases/1."
    )]
    async fn phases(&self, p: Parameters<PhasesArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            w.memoized("phases", &p.0, &p.0.path, built_in(&p.0.rules), |w| {
                w.phases(&p.0)
            })
        })
        .await
    }

    #[tool(
        description = "The largest live allocations (grouped by call stack, user code first) at one moment: after a trace entry, at a time, at the peak inside a phase, or at a named peak. Give exactly one of entry, time_us, phase, peak. Answer memgate.mcp.live_at/1."
    )]
    async fn live_at(&self, p: Parameters<LiveAtArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            w.memoized("live_at", &p.0, &p.0.path, built_in(&p.0.rules), |w| {
                w.live_at(&p.0)
            })
        })
        .await
    }

    #[tool(
        description = "Figure, category and allocation-site deltas between two snapshots or summaries (base, new). The document equals `memgate diff --format json`. Answer memgate.mcp.diff/1."
    )]
    async fn diff(&self, p: Parameters<DiffArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.diff(&p.0)).await
    }

    #[tool(
        description = "Per-rank figures of a distributed run, one row per file and device, and the spread (max, min, which rank) of the peaks. Answer memgate.mcp.ranks/1."
    )]
    async fn ranks(&self, p: Parameters<RanksArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.ranks(&p.0)).await
    }

    #[tool(
        description = "Every out-of-memory event of a snapshot: the request, what the device had free, allocated and reserved, the phase and iteration, the call stack (user code first); and the stacks at the peak. Answer memgate.mcp.explain_oom/1."
    )]
    async fn explain_oom(&self, p: Parameters<OomArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| {
            w.memoized("explain_oom", &p.0, &p.0.path, true, |w| {
                w.explain_oom(&p.0)
            })
        })
        .await
    }

    #[tool(
        description = "The gate: a budget file or an inline budget against snapshots or summaries. Returns the verdict (pass, warn, fail, error), every finding with its cause (over budget, grew past tolerance, where the peak moved), and the failing checks. The document is the verdict `memgate check --json` writes. Answer memgate.mcp.check/1."
    )]
    async fn check(&self, p: Parameters<CheckArgs>) -> Result<CallToolResult, ErrorData> {
        call(&self.work, move |w| w.check(&p.0)).await
    }

    #[tool(
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
