//! The x axis an `--html` page's charts open on (`--x`): shared by the
//! commands that write the page and the page itself.

/// The x axis a page's charts open on (`--x`); the page has a control to
/// switch (docs/figures.md#the-pages-x-axis).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum XAxis {
    // (Plain comments on the values: doc comments would turn `--help` into
    // its long form.)
    // Entries when the rise to the allocated peak takes under 1% of the
    // time axis (a compiled run), else time.
    #[default]
    Auto,
    // Trace entries applied (allocation order).
    Entries,
    // Seconds since the first timed entry (entries where time is unusable).
    Time,
}

impl XAxis {
    /// The value as `--x` takes it (the page's data says it so too).
    pub(crate) fn id(self) -> &'static str {
        match self {
            XAxis::Auto => "auto",
            XAxis::Entries => "entries",
            XAxis::Time => "time",
        }
    }
}
