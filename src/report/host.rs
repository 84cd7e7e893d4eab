//! Pinned host memory in text (docs/figures.md#pinned-host-memory): the
//! host figures of a device's report, and what a host-only snapshot shows
//! in place of device figures.

use std::io::{self, Write};

use crate::analysis::HostFigures;
use crate::units::{counted, Bytes};

/// What a host-only snapshot (`record_cuda=False`) says where a device's
/// figures would be.
pub(crate) const HOST_ONLY: &str =
    "no device: the snapshot records only pinned host memory (record_cuda=False); judged on its host figures";

/// The host lines of a report, indented by `indent`.
pub(crate) fn lines(out: &mut dyn Write, indent: &str, h: &HostFigures) -> io::Result<()> {
    let b = |n: u64| format!("{} ({n} bytes)", Bytes(n));
    writeln!(
        out,
        "{indent}pinned host memory: allocated peak {}, reserved peak {}; host trace: {}",
        b(h.allocated_peak),
        b(h.reserved_peak),
        counted(h.trace_entries, "entry", "entries"),
    )?;
    if let Some(live) = h.live_at_device_peak {
        writeln!(
            out,
            "{indent}pinned host memory live at the device's allocated peak: {}",
            b(live)
        )?;
    }
    Ok(())
}
