//! The reports of a `check` run behind one interface: each format renders
//! the verdict, and says what it writes when the gate could not judge at
//! all. A new format is a file with an [`Exporter`] and one variant of
//! `commands::check`'s `ReportKind`.

use crate::analysis::{DeviceReport, Timeline};
use crate::compare::Verdict;

/// What was analysed of one file of the run: its device reports and their
/// timelines (one per device), for the page's charts.
#[derive(Clone, Copy)]
pub struct Charted<'a> {
    pub devices: &'a [DeviceReport],
    pub timelines: &'a [Timeline],
}

/// What a report needs beyond the verdict.
pub(crate) struct Context<'a, 'c> {
    /// The most bytes the Markdown report may take.
    pub(crate) markdown_limit: usize,
    /// The HTML page written beside the reports, as given.
    pub(crate) page: Option<&'a str>,
    /// What target `t` analysed of the file `path` (for the page's charts).
    pub(crate) charted: &'a dyn Fn(usize, &str) -> Option<Charted<'c>>,
    /// The page's x axis at first (`--x`).
    pub(crate) x_axis: crate::report::x_axis::XAxis,
}

/// One report format of the verdict.
pub(crate) trait Exporter {
    fn render(&self, v: &Verdict, cx: &Context<'_, '_>) -> String;

    /// The report when the gate could not judge at all, saying why; `None`
    /// when the format writes nothing then.
    fn render_error(&self, reasons: &[String], generated_at: i64) -> Option<String>;
}
