//! Each tool's arguments: a JSON schema derived from the struct (its doc
//! comments are the descriptions the client sees). Paging arguments are
//! `limit` and `cursor` on every tool that lists.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct ProfileArgs {
    /// A snapshot file under the server's roots.
    pub path: String,
    /// Group the bytes by category (default), annotation, compile-context,
    /// user-metadata, or user-metadata.KEY (one key of JSON metadata).
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct CheckArgs {
    /// A budget file (memgate.toml) under the roots; its paths are relative to it.
    pub config: Option<String>,
    /// Or an inline budget: flat, as the pytest marker takes it ({"allocated-peak": "15 GiB"}, judged on `snapshots`), or with the budget file's structure ({"target": [{"name": …, "snapshots": …, "budget": {"allocated-peak": "208 MiB"}}]}); its relative paths are the first root's.
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
    /// summary (default): the figures, findings and top stacks with user code first, C++ and library frames counted; full: also the whole CLI JSON document as `document`.
    pub detail: Option<String>,
    /// Also write the whole CLI JSON document to this path under the roots (the answer gives the path).
    pub document_to: Option<String>,
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
