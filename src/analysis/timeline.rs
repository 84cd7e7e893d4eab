//! The allocated-memory timeline by category (for `profile --html`),
//! downsampled so a multi-million-entry trace stays a small page. The
//! samples are taken during the one replay of the trace.

use crate::snapshot::Device;

/// One sample: the live bytes per category after trace entry `entry`.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePoint {
    /// Entry index (`None`: before the first entry).
    pub entry: Option<u64>,
    pub time_us: Option<i64>,
    /// Bytes per category, in `Timeline::categories` order.
    pub bytes: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub device: Device,
    pub categories: Vec<String>,
    pub points: Vec<TimelinePoint>,
}

/// A sample the pass has chosen, its bytes still relative to the start.
struct Chosen {
    entry: usize,
    time_us: Option<i64>,
    relative: Vec<i64>,
}

/// Downsamples the replay's category curves as the pass goes: per bucket of
/// entries, the first entry with the bucket's highest allocated total.
/// Values are relative to the start (the replay learns what was live before
/// recording only at the end); [`Sampler::finish`] adds it.
pub(crate) struct Sampler {
    bucket: usize,
    len: usize,
    /// (relative total, entry, time) of the bucket's highest moment so far.
    best: Option<(i128, usize, Option<i64>)>,
    at_best: Vec<i64>,
    chosen: Vec<Chosen>,
}

impl Sampler {
    pub(crate) fn new(trace_len: usize, max_points: usize, ncat: usize) -> Sampler {
        Sampler {
            bucket: trace_len.div_ceil(max_points.max(1)).max(1),
            len: trace_len,
            best: None,
            at_best: vec![0; ncat],
            chosen: Vec::new(),
        }
    }

    /// The state after entry `i`: `total` allocated bytes, split by category
    /// in `cats`.
    pub(crate) fn see(&mut self, i: usize, time_us: Option<i64>, total: i128, cats: &[i64]) {
        if self.best.is_none_or(|(t, _, _)| total > t) {
            self.best = Some((total, i, time_us));
            self.at_best.copy_from_slice(cats);
        }
        if (i + 1).is_multiple_of(self.bucket) || i + 1 == self.len {
            if let Some((_, entry, time_us)) = self.best.take() {
                self.chosen.push(Chosen {
                    entry,
                    time_us,
                    relative: self.at_best.clone(),
                });
            }
        }
    }

    /// The samples, the state before the first entry first, with `start`
    /// (bytes per category live before recording) added.
    pub(crate) fn finish(self, start: &[i64]) -> Vec<TimelinePoint> {
        let point = |entry: Option<usize>, time_us, relative: &[i64]| TimelinePoint {
            entry: entry.map(|i| i as u64),
            time_us,
            bytes: start
                .iter()
                .zip(relative)
                .map(|(s, r)| (s + r).max(0) as u64)
                .collect(),
        };
        let mut points = vec![point(None, None, &vec![0; start.len()])];
        for c in &self.chosen {
            points.push(point(Some(c.entry), c.time_us, &c.relative));
        }
        points
    }
}
