//! A device's capacity (docs/figures.md#device-capacity): the memory the
//! budget or `record()` states for it, less the allowance for memory outside
//! the allocator; what turns a `"92% of device"` budget into bytes, and how
//! close a peak came to the device.

use std::borrow::Cow;

use super::finding::Finding;
use crate::analysis::{DeviceReport, Figure};
use crate::budget::{Budget, Limit, Target};

/// The device's memory and the allowance outside the allocator, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capacity {
    pub(crate) device: u64,
    pub(crate) outside: u64,
}

impl Capacity {
    /// The target's `device-memory`, else `[defaults]`'s, else what
    /// `record()` wrote beside the snapshot; `None` when none states it.
    pub(crate) fn of(cur: &DeviceReport, t: &Target, b: &Budget) -> Option<Capacity> {
        let recorded = cur.environment.as_ref().and_then(|e| e.device_memory);
        let device = t.device_memory.or(b.device_memory).or(recorded)?;
        let outside = t.outside_allocator.or(b.outside_allocator).unwrap_or(0);
        Some(Capacity { device, outside })
    }

    /// The bytes a share of `pct` percent of the device leaves the
    /// allocator: that share of the device, less the outside allowance.
    fn share(self, pct: f64) -> u64 {
        percent(self.device, pct).saturating_sub(self.outside)
    }

    /// How close `peak` came to the device, as a finding.
    pub(crate) fn headroom(self, peak: u64) -> Finding {
        Finding::DeviceHeadroom {
            peak,
            outside: self.outside,
            device: self.device,
        }
    }
}

/// `limit` in bytes: itself, a share of the device's reserved peak
/// `reserved` (docs/figures.md#cached-free-at-reserved-peak), or a share of
/// the device turned into bytes; without a capacity, the share that cannot
/// be judged ([`Finding::NoDeviceMemory`]).
pub(crate) fn resolve(
    limit: &Limit,
    cap: Option<Capacity>,
    reserved: u64,
) -> Result<Cow<'_, Limit>, f64> {
    if let Some(pct) = limit.share_of_reserved {
        return Ok(Cow::Owned(limit.with_bytes(percent(reserved, pct))));
    }
    let Some(pct) = limit.share_of_device else {
        return Ok(Cow::Borrowed(limit));
    };
    let cap = cap.ok_or(pct)?;
    Ok(Cow::Owned(limit.with_bytes(cap.share(pct))))
}

/// `pct` percent of `bytes`, rounded down.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "a share in [0, 100] of a u64 is a non-negative float at most `bytes`; `as` \
              saturates, and is exact below 2^53 bytes (8 PiB)"
)]
fn percent(bytes: u64, pct: f64) -> u64 {
    (bytes as f64 * pct / 100.0).floor() as u64
}

/// The figures whose checks say how close they came to the device: the
/// peaks of bytes in use.
pub(crate) fn is_peak(f: Figure) -> bool {
    matches!(
        f,
        Figure::DynamicPeak
            | Figure::OverallPeak
            | Figure::AllocatedPeak
            | Figure::ReservedPeak
            | Figure::SteadyStatePeak
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_is_of_the_device_less_the_outside_allowance() {
        const GIB: u64 = 1 << 30;
        let c = Capacity {
            device: 80 * GIB,
            outside: 2 * GIB,
        };
        assert_eq!(c.share(50.0), 38 * GIB);
        assert_eq!(
            Capacity { outside: 0, ..c }.share(92.0),
            80 * GIB * 92 / 100
        );
        assert_eq!(
            Capacity {
                outside: 90 * GIB,
                ..c
            }
            .share(50.0),
            0
        );
    }
}
