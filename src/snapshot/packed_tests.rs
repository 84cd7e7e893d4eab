//! Packed entries read back as they were written, fitting or not.

use super::*;
use crate::snapshot::entry::{Action, NO_CONTEXT, NO_META, NO_POOL};

fn entry(k: u64) -> TraceEntry {
    TraceEntry {
        addr: 0x7f00_0000_0000 + k * 512,
        size: 512 * (k % 7 + 1),
        time_us: 1_700_000_000_000_000 + i64::try_from(k).unwrap() * 3,
        stack: StackId::from_raw(u32::try_from(k % 5).unwrap()),
        context: NO_CONTEXT,
        meta: NO_META,
        pool: NO_POOL,
        action: if k.is_multiple_of(2) {
            Action::Alloc
        } else {
            Action::FreeCompleted
        }
        .into(),
    }
}

/// A small deterministic generator (no dependency for tests).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 ^ (self.0 >> 29)
    }

    /// A field value: small, near a bound of the packed width, or any.
    fn field(&mut self, bits: u32) -> u64 {
        match self.next() % 4 {
            0 => self.next() % 1000,
            1 => (1u64 << bits) - 1 - self.next() % 3,
            2 => (1u64 << bits) + self.next() % 3,
            _ => self.next(),
        }
    }
}

fn random_entry(g: &mut Lcg) -> TraceEntry {
    let time = match g.next() % 5 {
        0 => NO_TIME,
        1 => g.next().cast_signed(),
        2 => i64::MIN + 1,
        _ => 1_700_000_000_000_000 + (g.next() % (1 << 33)).cast_signed(),
    };
    TraceEntry {
        addr: g.field(ADDR_BITS),
        size: g.field(SIZE_BITS),
        time_us: time,
        stack: StackId::from_raw(u32::try_from(g.field(STACK_BITS) & u64::from(u32::MAX)).unwrap()),
        context: [NO_CONTEXT, 0, 7][usize::try_from(g.next() % 3).unwrap()],
        meta: if g.next().is_multiple_of(8) {
            u32::try_from(g.next() >> 40).unwrap()
        } else {
            NO_META
        },
        pool: [NO_POOL, 0, 3][usize::try_from(g.next() % 3).unwrap()],
        action: ActionCode::from_raw(u16::try_from(g.next() % 300).unwrap()),
    }
}

#[test]
fn usual_entries_fit_a_record_and_read_back() {
    let want: Vec<TraceEntry> = (0..1000).map(entry).collect();
    let packed = Entries::from(&want[..]);
    assert!(
        packed.side.is_empty(),
        "real-looking entries need no side table"
    );
    assert_eq!(packed.extras.len(), 1);
    assert_eq!(packed.view().to_vec(), want);
    assert_eq!(packed.view().iter().rev().collect::<Vec<_>>(), {
        let mut r = want.clone();
        r.reverse();
        r
    });
}

#[test]
fn random_entries_read_back_whole_whatever_their_fields() {
    let mut g = Lcg(7);
    let want: Vec<TraceEntry> = (0..5000).map(|_| random_entry(&mut g)).collect();
    let packed = Entries::from(&want[..]);
    assert!(
        !packed.side.is_empty(),
        "the generator makes entries that do not fit"
    );
    assert!(packed.side.len() < want.len(), "and entries that do");
    for (i, e) in want.iter().enumerate() {
        assert_eq!(packed.get(i), Some(*e), "entry {i}");
    }
    assert_eq!(packed.get(want.len()), None);
}

#[test]
fn set_replaces_in_place_across_blocks() {
    let mut g = Lcg(11);
    let mut want: Vec<TraceEntry> = (0..2000).map(|_| random_entry(&mut g)).collect();
    let mut packed = Entries::from(&want[..]);
    // Reverse, as a permutation of the build would reorder.
    for i in 0..want.len() / 2 {
        let j = want.len() - 1 - i;
        let (a, b) = (packed.get(i).unwrap(), packed.get(j).unwrap());
        packed.set(i, b);
        packed.set(j, a);
        want.swap(i, j);
    }
    assert_eq!(packed.view().to_vec(), want);
}

#[test]
fn more_distinct_triples_than_an_index_holds_go_to_the_side_table() {
    let want: Vec<TraceEntry> = (0..70_000u32)
        .map(|k| TraceEntry {
            meta: k,
            ..entry(u64::from(k))
        })
        .collect();
    let packed = Entries::from(&want[..]);
    assert_eq!(packed.extras.len(), 1 << 16);
    assert_eq!(packed.side.len(), 70_000 - (1 << 16));
    assert_eq!(packed.view().to_vec(), want);
}

#[test]
fn views_slice_and_index_as_slices_do() {
    let want: Vec<TraceEntry> = (0..600).map(entry).collect();
    let packed = Entries::from(&want[..]);
    let v = packed.range(100..500);
    assert_eq!(v.len(), 400);
    assert_eq!(v.at(0), want[100]);
    assert_eq!(v.get(400), None);
    assert_eq!(v.slice(10..20).to_vec(), want[110..120].to_vec());
    assert_eq!(v.iter().nth(257), Some(want[357]));
    assert!(packed.range(3..3).is_empty());
    let r = std::panic::catch_unwind(|| packed.range(0..601).len());
    assert!(
        r.is_err(),
        "a range past the end is refused as a slice's is"
    );
}

#[test]
fn metadata_is_known_absent_without_reading_entries_and_found_in_the_side_table() {
    let plain: Vec<TraceEntry> = (0..300).map(entry).collect();
    assert!(!Entries::from(&plain[..]).view().may_have_meta());
    let mut one = plain.clone();
    one[299].meta = 4;
    assert!(Entries::from(&one[..]).view().may_have_meta());
    // An entry kept whole (its address does not fit) with metadata.
    let mut side = plain;
    side[7].addr = u64::MAX;
    side[7].meta = 9;
    let packed = Entries::from(&side[..]);
    assert_eq!(packed.side.len(), 1);
    assert!(packed.view().may_have_meta());
}

#[test]
fn an_allocation_of_4_gib_or_more_is_kept_whole_and_its_neighbours_packed() {
    let mut want: Vec<TraceEntry> = (0..10).map(entry).collect();
    want[3].size = 5 << 30;
    want[4].size = u64::from(u32::MAX);
    let packed = Entries::from(&want[..]);
    assert_eq!(packed.side.len(), 1, "only the 5 GiB entry");
    assert_eq!(packed.view().to_vec(), want);
}

#[test]
fn an_entry_that_does_not_fit_repeated_is_kept_once() {
    let mut big = entry(1);
    big.addr = u64::MAX;
    let want: Vec<TraceEntry> = (0..1000)
        .map(|k| if k % 2 == 0 { big } else { entry(k) })
        .collect();
    let packed = Entries::from(&want[..]);
    assert_eq!(packed.side.len(), 1);
    assert_eq!(packed.view().to_vec(), want);
}
