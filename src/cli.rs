//! Command-line arguments (clap derive). No logic: each subcommand's args
//! are turned into the library's plain option structs. [`main`] and
//! [`run_captured`] are the entry points of the binary and of the Python
//! extension alike, so both parse and run one definition.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::report::x_axis::XAxis;

mod mosaic;
#[cfg(not(feature = "mcp"))]
mod no_mcp;

use crate::analysis::{SiteFlags, Window};
use crate::commands::check::{CheckOptions, GithubEnv};
use crate::commands::{
    self,
    diff::DiffOptions,
    init::InitOptions,
    inspect::InspectOptions,
    peak::{PeakAt, PeakOptions},
    phases::PhasesOptions,
    profile::{GroupBy, ProfileOptions},
    summarize::SummarizeOptions,
    Outcome, OutputFormat,
};

/// Exit codes of `check` (and of memgate as a whole).
const EXIT_CODES: &str = "\
Exit codes:
  0  every check passed (warnings allowed) / the command succeeded
  1  the gate failed: a figure is over its budget or grew past its baseline
  2  could not judge: bad command line, bad config, unreadable, truncated or
     non-snapshot input, missing file";

/// Exit codes of the commands that report but never gate.
const EXIT_CODES_NO_GATE: &str = "\
Exit codes:
  0  the command succeeded
  2  could not judge: bad command line, unreadable, truncated or
     non-snapshot input, missing file";

/// CI memory-regression gate for PyTorch allocator snapshots (CUDA, Ascend NPU).
///
/// Reads the pickles written by torch.cuda.memory._dump_snapshot() (and the
/// torch_npu equivalent) as data only: nothing in a snapshot is executed.
#[derive(Debug, Parser)]
#[command(name = "memgate", version, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Runs the command, writing its output to `out`. `out_is_terminal`
    /// says whether `out` is a terminal (colour in `check`'s text).
    pub fn run(&self, out: &mut dyn Write, out_is_terminal: bool) -> Outcome {
        match &self.command {
            Command::Inspect(a) => commands::inspect::run(&a.options(), out),
            Command::Peak(a) => commands::peak::run(&a.options(), out),
            Command::Phases(a) => commands::phases::run(&a.options(), out),
            Command::Profile(a) => commands::profile::run(&a.options(), out),
            Command::Diff(a) => commands::diff::run(&a.options(), out),
            Command::Summarize(a) => commands::summarize::run(&a.options(), out),
            Command::Check(a) => commands::check::run(&a.options(out_is_terminal), out),
            Command::Init(a) => commands::init::run(&a.options(), out),
            Command::Mcp(a) => a.run(),
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
}

/// `peak --at`: which peak's live stacks to list.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum AtArg {
    // Plain comments: a documented variant turns `--help` into the long form.
    // The allocated (MemoryViz) peak, the figure to gate.
    Allocated,
    // Mosaic's dynamic peak.
    Dynamic,
    // The reserved (segments) peak.
    Reserved,
}

impl From<AtArg> for PeakAt {
    fn from(a: AtArg) -> Self {
        match a {
            AtArg::Allocated => PeakAt::AllocatedPeak,
            AtArg::Dynamic => PeakAt::DynamicPeak,
            AtArg::Reserved => PeakAt::ReservedPeak,
        }
    }
}

impl From<FormatArg> for OutputFormat {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Text => OutputFormat::Text,
            FormatArg::Json => OutputFormat::Json,
        }
    }
}

/// `--group-by`: category, annotation, compile-context, user-metadata or
/// user-metadata.KEY (parsed by the library's `GroupBy`).
fn group_by_arg(s: &str) -> Result<GroupBy, String> {
    s.parse()
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// What is in a snapshot: protocol, shape, segments, blocks, frames,
    /// stacks, and per device the trace entries and action counts.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Inspect(InspectArgs),
    /// Dynamic / static / overall peak (Mosaic), allocated and reserved peak,
    /// each with its phase, iteration and time; the OOMs in detail; and the
    /// allocations live at a peak grouped by call stack.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Peak(PeakArgs),
    /// Bytes per category (or per annotation, or per compile context) at the
    /// peaks and each one's own peak.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Profile(ProfileArgs),
    /// When memory grew: a summary per annotation name, then the annotation
    /// events (record_function START/END) with Mosaic's key and the dynamic
    /// usage at each, the phase spans, the iterations (each list cut at 20
    /// unless --all), the steady-state peak and the leak per iteration.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Phases(PhasesArgs),
    /// Figure, category and allocation-site deltas between two snapshots.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Diff(DiffArgs),
    /// Write one summary JSON per snapshot (the golden baseline files).
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Summarize(SummarizeArgs),
    /// The gate: budgets and baselines → JUnit, Markdown, JSON, exit code.
    ///
    /// Reads memgate.toml (see thresholds.example.toml); snapshot patterns
    /// and baselines in it are relative to the file. Snapshots and summary
    /// JSONs are both accepted as inputs and as baselines. Reports are
    /// written even when the gate fails.
    ///
    /// Environment: SOURCE_DATE_EPOCH fixes the report timestamp; NO_COLOR
    /// turns colour off; on GitHub Actions the Markdown report is appended
    /// to GITHUB_STEP_SUMMARY, `verdict`, `regressions` and `report` go to
    /// GITHUB_OUTPUT, and GITHUB_ACTIONS=true adds ::error annotations on
    /// the budget-file lines.
    #[command(after_help = EXIT_CODES)]
    Check(CheckArgs),
    /// Start a budget from the snapshots you have: writes their golden
    /// summaries and a commented memgate.toml whose budgets are today's
    /// figures plus a margin, then prints the next commands.
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Init(InitArgs),
    /// A Model Context Protocol server on stdin/stdout for agents: the
    /// analyses and the gate as tools (docs/mcp.md).
    #[cfg(feature = "mcp")]
    #[command(after_help = EXIT_CODES_NO_GATE)]
    Mcp(crate::mcp::McpArgs),
    /// Not in this build (the `mcp` feature is off): says so and exits 2.
    #[cfg(not(feature = "mcp"))]
    #[command(hide = true, disable_help_flag = true)]
    Mcp(no_mcp::McpNotBuilt),
}

// The arguments several commands share, declared once (their help text is
// part of each command's --help, so a change here shows in every one).

/// The snapshots to read (at least one).
#[derive(Debug, Args)]
pub struct Snapshots {
    /// Snapshot files or quoted glob patterns.
    #[arg(required = true)]
    pub snapshots: Vec<String>,
}

/// `--format text|json`.
#[derive(Debug, Args)]
pub struct Format {
    #[arg(long, value_enum, default_value = "text")]
    pub format: FormatArg,
}

/// `--rules`: the category rule set, and `--categories` on top of it.
#[derive(Debug, Args)]
pub struct CategoryRules {
    /// Category rules: `default`, `mosaic`, or a TOML file with [categories].
    #[arg(long, default_value = "default")]
    pub rules: String,
    #[command(flatten)]
    pub inline: InlineCategories,
    /// Name the project's own files in site names from this folder: a
    /// folder name (`nanogpt`, its last match in a path) or a path prefix
    /// (`/srv/app`) [default: the longest folder all the project's files
    /// share].
    #[arg(long, value_name = "DIR")]
    pub project_root: Option<String>,
    /// What counts as the user's code when picking a stack's site: a glob
    /// on a file's portable path (`nanogpt/*`) or its recorded path,
    /// repeatable [default: every Python file outside site-packages,
    /// dist-packages, the standard library and torch].
    #[arg(long, value_name = "GLOB")]
    pub user_code: Vec<String>,
}

impl CategoryRules {
    /// `--project-root` and `--user-code`.
    fn sites(&self) -> SiteFlags {
        SiteFlags {
            project_root: self.project_root.clone(),
            user_code: self.user_code.clone(),
        }
    }
}

/// `--categories`: custom category rules on the command line.
#[derive(Debug, Args)]
pub struct InlineCategories {
    /// Custom categories, tried first in the order written: a JSON object
    /// ('{"hccl": "hccl", "moe": "expert"}', Mosaic's --custom-profile) or
    /// a TOML inline table ('{hccl = "hccl"}') of name -> regex, matched
    /// case-sensitively on every frame's function and file name and on the
    /// allocation's user metadata; the same as a rules file's [categories].
    /// Custom categories are always listed.
    #[arg(long, value_name = "JSON")]
    pub categories: Option<String>,
}

/// `--window FROM..TO` of the analysis commands.
#[derive(Debug, Args)]
pub struct FiguresWindow {
    /// Figures inside a window only: FROM..TO, inclusive, either side may be
    /// empty. A bound is a time_us (1783874422766414), seconds after the
    /// device's first timed entry (+2.5s), an entry index (#1200), an
    /// annotation event (@Optimizer.step#AdamW.step:START, Nth from 0:
    /// @NAME:END:2) or an allocation event in Mosaic's notation
    /// (32fa0599c7f59_0:free_completed: hex address, number of earlier
    /// free_completed of it, action). The state before the window is carried
    /// in; peaks are maxima over the window's entries, counts count them.
    #[arg(long, value_name = "FROM..TO")]
    pub window: Option<Window>,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub inputs: Snapshots,
    #[command(flatten)]
    pub output: Format,
}

impl InspectArgs {
    pub fn options(&self) -> InspectOptions {
        InspectOptions {
            snapshots: self.inputs.snapshots.clone(),
            format: self.output.format.into(),
        }
    }
}

#[derive(Debug, Args)]
pub struct PeakArgs {
    #[command(flatten)]
    pub inputs: Snapshots,
    #[command(flatten)]
    pub output: Format,
    /// How many stack groups to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub categories: CategoryRules,
    /// Which peak's live allocations to list by call stack: allocated (the
    /// figure to gate), dynamic (Mosaic's) or reserved (segments).
    #[arg(long, value_enum, default_value = "allocated")]
    pub at: AtArg,
    #[command(flatten)]
    pub within: FiguresWindow,
    /// Also write the figures as GitLab's metrics report, OpenMetrics text
    /// (`-`: to stdout, in place of the text or JSON).
    #[arg(long, value_name = "PATH")]
    pub metrics: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PhasesArgs {
    #[command(flatten)]
    pub inputs: Snapshots,
    #[command(flatten)]
    pub output: Format,
    /// List only annotation events whose name contains SUBSTR (repeatable).
    #[arg(long, value_name = "SUBSTR")]
    pub annotation: Vec<String>,
    /// Iterations start at the START of annotations whose name begins with
    /// PREFIX [default: ProfilerStep#, else Optimizer.zero_grad, else
    /// Optimizer.step].
    #[arg(long, value_name = "PREFIX")]
    pub iteration_boundary: Option<String>,
    /// A rules file whose [phases] table (name = "regex" on the
    /// allocations' frames) gives the phases of devices without annotations.
    #[arg(long, value_name = "FILE", default_value = "default")]
    pub rules: String,
    #[command(flatten)]
    pub inline: InlineCategories,
    /// List every name, event, span and iteration (each list is cut at 20
    /// otherwise, with the count of the rest).
    #[arg(long)]
    pub all: bool,
}

impl PhasesArgs {
    pub fn options(&self) -> PhasesOptions {
        PhasesOptions {
            snapshots: self.inputs.snapshots.clone(),
            format: self.output.format.into(),
            annotation: self.annotation.clone(),
            iteration_boundary: self.iteration_boundary.clone(),
            rules: self.rules.clone(),
            categories: self.inline.categories.clone(),
            all: self.all,
        }
    }
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Snapshot files or quoted glob patterns.
    pub snapshots: Vec<String>,
    #[command(flatten)]
    pub output: Format,
    #[command(flatten)]
    pub categories: CategoryRules,
    /// Group the bytes by the category rules (category), by the innermost
    /// annotation open at each allocation (annotation; "" outside any), by
    /// its compile context (compile-context; "N/A" when none), or by its
    /// user metadata (user-metadata, or user-metadata.KEY for one key of
    /// JSON metadata; "N/A" when none).
    #[arg(long, value_name = "BY", value_parser = group_by_arg, default_value = "category")]
    pub group_by: GroupBy,
    /// Write a self-contained HTML page with the timeline by the same
    /// groups.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// The page's x axis at first (a control on the page switches it):
    /// trace entries (allocation order), time, or auto: entries when the
    /// rise to the allocated peak takes under 1% of the time axis.
    #[arg(long = "x", value_enum, value_name = "AXIS", default_value = "auto")]
    pub x_axis: XAxis,
    /// Print the built-in default rules and exit.
    #[arg(long)]
    pub print_rules: bool,
    /// How many allocation sites (and stack groups in JSON) to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[command(flatten)]
    pub within: FiguresWindow,
}

impl PeakArgs {
    pub fn options(&self) -> PeakOptions {
        PeakOptions {
            snapshots: self.inputs.snapshots.clone(),
            format: self.output.format.into(),
            top: self.top,
            rules: self.categories.rules.clone(),
            categories: self.categories.inline.categories.clone(),
            sites: self.categories.sites(),
            at: self.at.into(),
            window: self.within.window.clone(),
            metrics: self.metrics.clone(),
        }
    }
}

impl ProfileArgs {
    pub fn options(&self) -> ProfileOptions {
        ProfileOptions {
            snapshots: self.snapshots.clone(),
            format: self.output.format.into(),
            rules: self.categories.rules.clone(),
            categories: self.categories.inline.categories.clone(),
            sites: self.categories.sites(),
            group_by: self.group_by,
            html: self.html.clone(),
            x_axis: self.x_axis,
            print_rules: self.print_rules,
            top: self.top,
            window: self.within.window.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The baseline snapshot (or summary JSON).
    pub base: String,
    /// The new snapshot (or summary JSON).
    pub new: String,
    #[command(flatten)]
    pub output: Format,
    #[command(flatten)]
    pub categories: CategoryRules,
    /// How many sites to list.
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Compare the figures inside a window of both traces: FROM..TO, as
    /// for `memgate peak --window` (a summary compares only when it holds
    /// the same window's figures).
    #[arg(long, value_name = "FROM..TO")]
    pub window: Option<Window>,
    /// Also write a self-contained HTML page: NEW's timeline with BASE's
    /// drawn over it on the same axis, and the deltas.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,
    /// The page's x axis at first (a control on the page switches it):
    /// trace entries (allocation order), time, or auto: entries when the
    /// rise to the allocated peak takes under 1% of the time axis.
    #[arg(long = "x", value_enum, value_name = "AXIS", default_value = "auto")]
    pub x_axis: XAxis,
}

impl DiffArgs {
    pub fn options(&self) -> DiffOptions {
        DiffOptions {
            base: self.base.clone(),
            new: self.new.clone(),
            format: self.output.format.into(),
            rules: self.categories.rules.clone(),
            categories: self.categories.inline.categories.clone(),
            sites: self.categories.sites(),
            top: self.top,
            window: self.window.clone(),
            html: self.html.clone(),
            x_axis: self.x_axis,
            decoded: None,
            quiet: false,
        }
    }
}

#[derive(Debug, Args)]
pub struct SummarizeArgs {
    #[command(flatten)]
    pub inputs: Snapshots,
    /// Output directory (one `<stem>.json` per snapshot).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub categories: CategoryRules,
    /// How many sites and stacks to keep per device.
    #[arg(long, default_value_t = 50)]
    pub top: usize,
    /// Summarize the figures inside a window: FROM..TO, as for `memgate
    /// peak --window` (the baseline of a `check` target with that window).
    #[arg(long, value_name = "FROM..TO")]
    pub window: Option<Window>,
    /// Iterations start at the START of annotations whose name begins with
    /// PREFIX, as a `check` target's `iteration-boundary` [default:
    /// ProfilerStep#, else Optimizer.zero_grad, else Optimizer.step].
    #[arg(long, value_name = "PREFIX")]
    pub iteration_boundary: Option<String>,
    /// Inputs with one file stem are repeated runs of one job: write one
    /// summary of them, each figure at their median, keeping each figure's
    /// min, median, max and spread [default: such inputs are an error].
    #[arg(long)]
    pub repeats: bool,
}

impl SummarizeArgs {
    pub fn options(&self) -> SummarizeOptions {
        SummarizeOptions {
            snapshots: self.inputs.snapshots.clone(),
            output: self.output.clone(),
            rules: self.categories.rules.clone(),
            categories: self.categories.inline.categories.clone(),
            sites: self.categories.sites(),
            top: self.top,
            window: self.window.clone(),
            iteration_boundary: self.iteration_boundary.clone(),
            decoded: None,
            repeats: self.repeats,
        }
    }
}

#[derive(Debug, Args)]
pub struct InitArgs {
    #[command(flatten)]
    pub inputs: Snapshots,
    /// The budget file to write.
    #[arg(long, value_name = "PATH", default_value = "memgate.toml")]
    pub config: PathBuf,
    /// Where the golden summaries go.
    #[arg(long, value_name = "DIR", default_value = "golden")]
    pub golden: PathBuf,
    /// Added to today's figures before rounding up: e.g. 10% or 25%.
    #[arg(long, value_name = "PERCENT", default_value = "10%", value_parser = commands::init::parse_margin)]
    pub margin: f64,
    /// Replace an existing budget file and golden summaries (never through
    /// a link).
    #[arg(long)]
    pub force: bool,
    /// The target's name (the prefix of each target's name when the
    /// snapshots need several targets).
    #[arg(long, default_value = "main")]
    pub name: String,
}

impl InitArgs {
    pub fn options(&self) -> InitOptions {
        InitOptions {
            snapshots: self.inputs.snapshots.clone(),
            config: self.config.clone(),
            golden: self.golden.clone(),
            margin: self.margin,
            force: self.force,
            name: self.name.clone(),
        }
    }
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Snapshots (override the targets' globs).
    pub snapshots: Vec<String>,
    /// Budget file (default: memgate.toml in the current directory).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Check the budget file only, then exit 0 or 2.
    #[arg(long)]
    pub validate: bool,
    /// Baseline (summary dir, summary JSON, or snapshots) for every target.
    #[arg(long, value_name = "PATH")]
    pub baseline: Option<String>,
    /// Write JUnit XML (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write the Markdown report (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Write the JSON verdict (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Write GitLab's metrics report, OpenMetrics text (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub metrics: Option<PathBuf>,
    /// Write a self-contained HTML page of the run: every target, snapshot
    /// and device, failures first, the current timeline with the
    /// baseline's drawn over it, and the deltas.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// The page's x axis at first (a control on the page switches it):
    /// trace entries (allocation order), time, or auto: entries when the
    /// rise to the allocated peak takes under 1% of the time axis.
    #[arg(long = "x", value_enum, value_name = "AXIS", default_value = "auto")]
    pub x_axis: XAxis,

    /// Write the figures as Bencher Metric Format JSON, one benchmark per
    /// target/snapshot/device/figure (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub bencher: Option<PathBuf>,
    /// Write the figures for github-action-benchmark
    /// (`tool: customSmallerIsBetter`; `-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub benchmark_json: Option<PathBuf>,
    /// Write GitLab's Code Quality report (Code Climate JSON): one issue per
    /// check that did not pass, at its budget-file line (`-` for stdout).
    #[arg(long, value_name = "PATH")]
    pub codequality: Option<PathBuf>,
    /// Report failures but exit 0 instead of 1 (a gate that could not
    /// judge still exits 2).
    #[arg(long)]
    pub warn_only: bool,
    /// A snapshot or device without a baseline, and a baseline entry with no
    /// snapshot in the run, fail instead of warning.
    #[arg(long)]
    pub require_baseline: bool,
    /// Keep the Markdown under 65,536 characters (a PR comment).
    #[arg(long)]
    pub comment_size: bool,
    /// Judge every target inside a window of each trace: FROM..TO, as for
    /// `memgate peak --window` (replaces the targets' `window`).
    #[arg(long, value_name = "FROM..TO")]
    pub window: Option<Window>,
    #[command(flatten)]
    pub inline: InlineCategories,
    /// The budget as a JSON document of the budget file's structure, in
    /// place of the file (the Python API's mappings): read by the same
    /// reader and validation. Hidden: an interface of the Python package.
    #[arg(long, value_name = "JSON", hide = true, conflicts_with = "config")]
    pub budget_json: Option<String>,
}

/// Runs `memgate ARGV[1:]` as the binary does: output on stdout, each
/// error on stderr as one `error: …` line (escaped for a terminal), clap's
/// usage or help text as clap prints it. Returns the exit code.
pub fn main<I, T>(argv: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match parse(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let outcome = match &cli.command {
        // The server writes stdout itself (from its runtime's threads): a
        // lock held here would block its first answer.
        Command::Mcp(a) => a.run(),
        _ => {
            let stdout = std::io::stdout();
            let terminal = std::io::IsTerminal::is_terminal(&stdout);
            let mut out = stdout.lock();
            let outcome = cli.run(&mut out, terminal);
            let _ = out.flush();
            outcome
        }
    };
    let err_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut err = std::io::stderr().lock();
    for (e, line) in outcome.errors.iter().zip(error_lines(&outcome)) {
        // On a terminal a budget-file error shows its line and a caret;
        // elsewhere (CI logs) the one-line `file:line:col: message`.
        let snippet = e.budget_snippet().filter(|_| err_terminal).and_then(|b| {
            let color = crate::report::terminal::colour_wanted(true);
            crate::report::snippet::render(&b.file, b.line, b.col, &b.message, &b.source, color)
        });
        match snippet {
            Some(s) => {
                let _ = err.write_all(s.as_bytes());
            }
            None => {
                let _ = writeln!(err, "error: {line}");
            }
        }
    }
    outcome.exit_code()
}

/// The command line parsed; Mosaic's flags answered with memgate's.
fn parse<I, T>(argv: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    Cli::try_parse_from(&argv).map_err(|e| mosaic::translate(e, &argv))
}

/// A command run with its output captured ([`run_captured`]).
#[derive(Debug)]
pub struct Captured {
    pub exit_code: u8,
    /// What the command wrote to stdout (clap's text for `--help`).
    pub stdout: Vec<u8>,
    /// Its error messages, one line each as the binary prints them after
    /// `error: `; a command-line error is one message, clap's text.
    pub errors: Vec<String>,
}

/// Runs `memgate ARGV[1:]` with its output captured. `check` appends to
/// `GITHUB_STEP_SUMMARY` / `GITHUB_OUTPUT` and prints `::error`
/// annotations only when `github` is true: a library call does not write
/// the runner's files because the environment names them. The report
/// files in `private` are the caller's own, removed when it returns:
/// `check` writes them without naming them on stderr.
pub fn run_captured<I, T>(argv: I, github: bool, private: &[std::path::PathBuf]) -> Captured
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match parse(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let (exit_code, stdout, errors) = if e.use_stderr() {
                (2, Vec::new(), vec![text])
            } else {
                (0, text.into_bytes(), Vec::new())
            };
            return Captured {
                exit_code,
                stdout,
                errors,
            };
        }
    };
    let mut stdout = Vec::new();
    let outcome = match &cli.command {
        Command::Check(args) => {
            // Captured text is for a program: never coloured, whatever
            // CLICOLOR_FORCE says.
            let opts = args.options(false);
            let opts = CheckOptions {
                github: if github {
                    opts.github.clone()
                } else {
                    GithubEnv::default()
                },
                color: false,
                unannounced: private.to_vec(),
                ..opts
            };
            commands::check::run(&opts, &mut stdout)
        }
        _ => cli.run(&mut stdout, false),
    };
    Captured {
        exit_code: outcome.exit_code(),
        stdout,
        errors: error_lines(&outcome),
    }
}

/// A command's error lines, one each whatever a file name or message holds.
fn error_lines(outcome: &Outcome) -> Vec<String> {
    outcome
        .errors
        .iter()
        .map(|e| crate::report::escape::terminal(&e.to_string()).into_owned())
        .collect()
}

/// An environment variable, unless unset or empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl CheckArgs {
    /// The options, with what the environment says: `SOURCE_DATE_EPOCH`
    /// (report timestamps), `NO_COLOR` / `CLICOLOR` / `CLICOLOR_FORCE`, and
    /// GitHub Actions' files.
    pub fn options(&self, out_is_terminal: bool) -> CheckOptions {
        CheckOptions {
            config: if self.budget_json.is_some() {
                Some(PathBuf::from("budget"))
            } else {
                self.config.clone()
            },
            snapshots: self.snapshots.clone(),
            validate: self.validate,
            baseline: self.baseline.clone(),
            junit: self.junit.clone(),
            markdown: self.markdown.clone(),
            json: self.json.clone(),
            metrics: self.metrics.clone(),
            html: self.html.clone(),
            x_axis: self.x_axis,
            bencher: self.bencher.clone(),
            benchmark_json: self.benchmark_json.clone(),
            codequality: self.codequality.clone(),
            warn_only: self.warn_only,
            require_baseline: self.require_baseline,
            comment_size: self.comment_size,
            timestamp: env("SOURCE_DATE_EPOCH").and_then(|s| s.trim().parse().ok()),
            color: crate::report::terminal::colour_wanted(out_is_terminal),
            github: GithubEnv {
                step_summary: env("GITHUB_STEP_SUMMARY").map(PathBuf::from),
                output: env("GITHUB_OUTPUT").map(PathBuf::from),
                annotate: env("GITHUB_ACTIONS").as_deref() == Some("true"),
            },
            window: self.window.clone(),
            categories: self.inline.categories.clone(),
            budget_json: self.budget_json.clone(),
            unannounced: Vec::new(),
            decoded: None,
        }
    }
}
