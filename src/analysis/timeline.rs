//! The allocated-memory timeline by category (for `profile --html`),
//! downsampled so a multi-million-entry trace stays a small page, with the
//! reserved bytes, the exact moments of the three peaks, the phase and
//! iteration spans, and a bounded set of moments with the largest live
//! allocations there. The samples are taken during the one replay of the
//! trace.

use crate::snapshot::Device;

use crate::vocab::Figure;

use super::figures::StackGroup;

/// One sample: the live bytes per category after trace entry `entry`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimelinePoint {
    /// Entry index (`None`: before the first entry).
    pub entry: Option<u64>,
    pub time_us: Option<i64>,
    /// Bytes per category, in `Timeline::categories` order.
    pub bytes: Vec<u64>,
    /// Reserved (segment) bytes at the same moment.
    pub reserved: u64,
}

/// A sample of the finer level the page draws when zoomed in: the
/// allocated total only, after entry `entry`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FinePoint {
    pub entry: u64,
    pub time_us: Option<i64>,
    pub allocated: u64,
}

/// A phase span or an iteration, as a band on the time axis.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Band {
    /// `true`: an iteration; `false`: a phase (annotation or rule phase).
    pub iteration: bool,
    /// The phase's name, or the iteration's index.
    pub name: String,
    pub from_entry: u64,
    /// The last entry inside (the first when the span holds none).
    pub to_entry: u64,
    pub from_time_us: Option<i64>,
    pub to_time_us: Option<i64>,
}

/// What a [`Moment`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MomentKind {
    /// A peak: allocated, dynamic or reserved.
    Peak(Figure),
    Oom,
    /// The start of a phase span (its index in `Timeline::bands`).
    PhaseStart(usize),
    /// One of an even sample over the trace.
    Sample,
}

/// A moment of the trace with the allocations live there (what the
/// allocated curve counts, memory from before recording included) grouped
/// by call stack, largest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Moment {
    /// What falls here (two peaks can share an entry), at least one.
    pub kinds: Vec<MomentKind>,
    /// After this entry (`None`: before the first).
    pub entry: Option<u64>,
    pub time_us: Option<i64>,
    /// All live bytes there (the allocated curve's value).
    pub allocated: u64,
    pub stacks: Vec<StackGroup>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub device: Device,
    pub categories: Vec<String>,
    pub points: Vec<TimelinePoint>,
    /// Phase spans and iterations, when the device has them.
    pub bands: Vec<Band>,
    /// The moments the page lists live allocations at, in entry order.
    pub moments: Vec<Moment>,
    /// The window the figures are of, when one was given.
    pub window: Option<Band>,
    /// The allocated total in [`FINE`] times as many buckets as `points`
    /// (each bucket's low and high), for the page's zoom.
    pub fine: Vec<FinePoint>,
    /// `time_us` of the device's first timed entry: where seconds count from.
    pub origin_time_us: Option<i64>,
}

/// How many stack groups each moment lists.
pub const MOMENT_STACKS: usize = 8;
/// How many evenly spaced moments are sampled over the trace.
pub const SAMPLE_MOMENTS: usize = 24;
/// At most this many phase starts become moments.
pub const PHASE_MOMENTS: usize = 48;
/// At most this many bands are drawn.
pub const MAX_BANDS: usize = 2000;
/// The finer level has this many buckets per bucket of the samples.
pub const FINE: usize = 8;

/// (relative total, entry, time) of a moment.
type Seen = (i128, usize, Option<i64>);

/// The finer level: per bucket of entries, its lowest and highest total.
struct Fine {
    bucket: usize,
    low: Option<Seen>,
    high: Option<Seen>,
    chosen: Vec<Seen>,
}

impl Fine {
    #[inline]
    fn see(&mut self, i: usize, time_us: Option<i64>, total: i128, len: usize) {
        if self.high.is_none_or(|(t, ..)| total > t) {
            self.high = Some((total, i, time_us));
        }
        if self.low.is_none_or(|(t, ..)| total < t) {
            self.low = Some((total, i, time_us));
        }
        if (i + 1).is_multiple_of(self.bucket) || i + 1 == len {
            match (self.low.take(), self.high.take()) {
                (Some(l), Some(h)) if l.1 == h.1 => self.chosen.push(h),
                (Some(l), Some(h)) if l.1 < h.1 => self.chosen.extend([l, h]),
                (l, h) => self.chosen.extend(h.into_iter().chain(l)),
            }
        }
    }
}

/// A sample the pass has chosen, its bytes still relative to the start.
struct Chosen {
    entry: usize,
    time_us: Option<i64>,
    relative: Vec<i64>,
    reserved: i128,
}

/// Which peak a pinned sample is of.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pin {
    Allocated = 0,
    Dynamic = 1,
    Reserved = 2,
}

/// Downsamples the replay's category curves as the pass goes: per bucket of
/// entries, the first entry with the bucket's highest allocated total and
/// the first with its lowest (so the dips between steps survive: a bucket
/// is drawn as its low and its high, in entry order); and
/// the state at the latest moment each peak was reached ([`Sampler::pin`]),
/// so the three peaks appear exactly. Values are relative to the start (the
/// replay learns what was live before recording only at the end);
/// [`Sampler::finish`] adds it.
pub(crate) struct Sampler {
    bucket: usize,
    len: usize,
    /// (relative total, entry, time, reserved) of the bucket's highest
    /// moment so far.
    best: Option<(i128, usize, Option<i64>, i128)>,
    at_best: Vec<i64>,
    /// The same of the bucket's lowest moment so far.
    low: Option<(i128, usize, Option<i64>, i128)>,
    at_low: Vec<i64>,
    chosen: Vec<Chosen>,
    pins: [Option<Chosen>; 3],
    fine: Fine,
}

impl Sampler {
    pub(crate) fn new(trace_len: usize, max_points: usize, ncat: usize) -> Sampler {
        let bucket = trace_len.div_ceil(max_points.max(1)).max(1);
        Sampler {
            fine: Fine {
                bucket: bucket.div_ceil(FINE),
                low: None,
                high: None,
                chosen: Vec::new(),
            },
            bucket,
            len: trace_len,
            best: None,
            at_best: vec![0; ncat],
            low: None,
            at_low: vec![0; ncat],
            chosen: Vec::new(),
            pins: [None, None, None],
        }
    }

    /// The state after entry `i`: `total` allocated bytes, split by category
    /// in `cats`, and `reserved` bytes (both relative to the start).
    #[inline]
    pub(crate) fn see(
        &mut self,
        i: usize,
        time_us: Option<i64>,
        total: i128,
        cats: &[i64],
        reserved: i128,
    ) {
        if self.best.is_none_or(|(t, ..)| total > t) {
            self.best = Some((total, i, time_us, reserved));
            self.at_best.copy_from_slice(cats);
        }
        if self.bucket > 1 {
            self.fine.see(i, time_us, total, self.len);
        }
        if self.low.is_none_or(|(t, ..)| total < t) {
            self.low = Some((total, i, time_us, reserved));
            self.at_low.copy_from_slice(cats);
        }
        if (i + 1).is_multiple_of(self.bucket) || i + 1 == self.len {
            let low = self.low.take();
            let high = self.best.take();
            let take = |s: Option<(i128, usize, Option<i64>, i128)>, at: &[i64]| {
                s.map(|(_, entry, time_us, reserved)| Chosen {
                    entry,
                    time_us,
                    relative: at.to_vec(),
                    reserved,
                })
            };
            let (low, high) = (take(low, &self.at_low), take(high, &self.at_best));
            match (low, high) {
                (Some(l), Some(h)) if l.entry == h.entry => self.chosen.push(h),
                (Some(l), Some(h)) if l.entry < h.entry => self.chosen.extend([l, h]),
                (l, h) => self.chosen.extend(h.into_iter().chain(l)),
            }
        }
    }

    /// Entry `i` is (for now) where peak `which` is reached; the state there
    /// is kept until a later pin of the same peak replaces it.
    #[inline]
    pub(crate) fn pin(
        &mut self,
        which: Pin,
        i: usize,
        time_us: Option<i64>,
        cats: &[i64],
        reserved: i128,
    ) {
        match &mut self.pins[which as usize] {
            Some(c) => {
                c.entry = i;
                c.time_us = time_us;
                c.relative.copy_from_slice(cats);
                c.reserved = reserved;
            }
            slot => {
                *slot = Some(Chosen {
                    entry: i,
                    time_us,
                    relative: cats.to_vec(),
                    reserved,
                })
            }
        }
    }

    /// The finer level in entry order, `start` (bytes live before
    /// recording) added; empty where the samples' buckets are single
    /// entries already.
    pub(crate) fn take_fine(&mut self, start: i128) -> Vec<FinePoint> {
        std::mem::take(&mut self.fine.chosen)
            .into_iter()
            .map(|(total, entry, time_us)| FinePoint {
                entry: u64::try_from(entry).unwrap_or(u64::MAX),
                time_us,
                allocated: u64::try_from((start + total).max(0)).unwrap_or(u64::MAX),
            })
            .collect()
    }

    /// The samples in entry order, the state before the first entry first,
    /// with `start` (bytes per category live before recording) and
    /// `start_reserved` added.
    pub(crate) fn finish(mut self, start: &[i64], start_reserved: i128) -> Vec<TimelinePoint> {
        let point =
            |entry: Option<usize>, time_us, relative: &[i64], reserved: i128| TimelinePoint {
                entry: entry.map(|i| u64::try_from(i).unwrap_or(u64::MAX)),
                time_us,
                bytes: start
                    .iter()
                    .zip(relative)
                    .map(|(s, r)| (s + r).max(0).unsigned_abs())
                    .collect(),
                reserved: u64::try_from((start_reserved + reserved).max(0)).unwrap_or(u64::MAX),
            };
        for p in self.pins.iter_mut().filter_map(Option::take) {
            if let Err(at) = self.chosen.binary_search_by_key(&p.entry, |c| c.entry) {
                self.chosen.insert(at, p);
            }
        }
        let mut points = vec![point(None, None, &vec![0; start.len()], 0)];
        for c in &self.chosen {
            points.push(point(Some(c.entry), c.time_us, &c.relative, c.reserved));
        }
        points
    }
}
