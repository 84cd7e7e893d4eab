//! Pinned host memory (docs/figures.md#pinned-host-memory): the
//! `host_traces` replayed by the same rules as a device's trace, with the
//! `host_segments` as its segments (one block each: the host allocator
//! never splits a block), and the host bytes live at each device's peak.

use crate::snapshot::{BlockState, Device, Segment, Snapshot, EMPTY_STACK};

use super::figures::HostFigures;
use super::observe::Curves;
use super::replay::{self, Extras};

/// The host replay of one snapshot, made once and read by every device.
pub(crate) struct Host {
    figures: HostFigures,
    /// `time_us` of each host entry (`None` when it has none).
    times: Vec<Option<i64>>,
    curves: Curves,
}

impl Host {
    /// The host replay, when the snapshot records pinned host memory.
    pub(crate) fn of(snap: &Snapshot) -> Option<Host> {
        if !snap.has_host() {
            return None;
        }
        let segments: Vec<Segment> = snap.host_segments.iter().map(as_segment).collect();
        let refs: Vec<&Segment> = segments.iter().collect();
        let trace = snap.host_trace();
        let extras = Extras {
            curves: true,
            ..Extras::default()
        };
        let mut r = replay::replay(trace, &refs, 1, &mut |_| 0, extras);
        let curves = r.curves.take()?;
        Some(Host {
            figures: HostFigures {
                allocated_peak: r.figures.allocated_peak,
                reserved_peak: r.figures.reserved_peak,
                live_at_device_peak: None,
                trace_entries: r.figures.trace_entries,
                only: snap.devices().is_empty(),
            },
            times: trace.iter().map(|e| e.time()).collect(),
            curves,
        })
    }

    /// The figures as the report of a device whose allocated peak fell at
    /// `peak_time_us` holds them: the host bytes live after the last host
    /// entry at or before that time (before the first, those live from
    /// the start).
    pub(crate) fn at(&self, peak_time_us: Option<i64>) -> HostFigures {
        let live = peak_time_us
            .filter(|_| self.times.iter().all(Option::is_some))
            .map(|t| {
                let upto = self
                    .times
                    .iter()
                    .take_while(|x| x.is_some_and(|x| x <= t))
                    .count();
                let bytes = match upto.checked_sub(1) {
                    Some(k) => self.curves.allocated[k],
                    None => self.curves.allocated_start,
                };
                bytes.max(0).unsigned_abs()
            });
        HostFigures {
            live_at_device_peak: live,
            ..self.figures
        }
    }
}

/// A host segment as a one-block segment, for the replay.
fn as_segment(h: &crate::snapshot::HostSegment) -> Segment {
    let state = if h.allocated {
        BlockState::ActiveAllocated
    } else {
        BlockState::Inactive
    };
    let allocated = if h.allocated { h.size } else { 0 };
    Segment {
        device: Device::new(0),
        address: h.address,
        total_size: h.size,
        allocated_size: allocated,
        active_size: allocated,
        requested_size: Some(allocated),
        stream: 0,
        segment_type: "host".to_string(),
        pool_id: None,
        is_expandable: false,
        stack: h.stack,
        blocks: vec![crate::snapshot::Block {
            address: h.address,
            size: h.size,
            requested_size: h.size,
            state,
            stack: if h.allocated { h.stack } else { EMPTY_STACK },
        }],
    }
}
