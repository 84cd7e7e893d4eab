//! Another run drawn over a chart (`diff --html`, `check --html`): its
//! samples placed on the chart's axes, through the iterations and phase
//! spans both runs have (iteration k over iteration k, the n-th span of a
//! phase over the n-th), else its own extent stretched onto the chart's.

use std::collections::HashMap;

/// BASE's samples (at `own` on BASE's axis) placed on NEW's: through the
/// spans both have (`theirs`: BASE's, `ours`: NEW's), else stretched from
/// BASE's extent onto NEW's (`extent`: NEW's last x); with how.
pub(super) fn place(
    own: &[i64],
    theirs: &[Span<'_>],
    ours: &[Span<'_>],
    extent: Option<i64>,
) -> (Vec<i64>, &'static str) {
    // Iteration k maps onto iteration k whatever the two axes' units.
    if let Some((k, what)) = knots(theirs, ours) {
        return (own.iter().map(|&x| map_through(&k, x)).collect(), what);
    }
    let theirs_end = own.iter().copied().max().unwrap_or(0).max(1);
    let ours_end = extent.unwrap_or(theirs_end).max(1);
    let stretched = own
        .iter()
        .map(|&x| {
            let v = i128::from(x) * i128::from(ours_end) / i128::from(theirs_end);
            i64::try_from(v).unwrap_or(ours_end)
        })
        .collect();
    (stretched, "extent")
}

/// An iteration or phase span on one run's x axis.
pub(super) struct Span<'a> {
    pub(super) iteration: bool,
    pub(super) name: &'a str,
    pub(super) x0: i64,
    pub(super) x1: i64,
}

/// Matching points (base x, new x): the start and end of each iteration
/// both runs have (k with k) and of each phase span both have (the n-th
/// span of a name with the n-th of that name). Taken in BASE's order, a
/// point that would make either side run backwards is dropped. `None`
/// without any; else what matched: `iteration`, `phase` or both.
fn knots(base: &[Span<'_>], new: &[Span<'_>]) -> Option<(Vec<(i64, i64)>, &'static str)> {
    // (iteration, name, occurrence) -> the span's x range.
    fn keyed<'s>(spans: &[Span<'s>]) -> HashMap<(bool, &'s str, usize), (i64, i64)> {
        let mut seen: HashMap<(bool, &str), usize> = HashMap::new();
        let mut out = HashMap::new();
        for s in spans {
            let n = seen.entry((s.iteration, s.name)).or_insert(0);
            out.insert((s.iteration, s.name, *n), (s.x0, s.x1));
            *n += 1;
        }
        out
    }
    let theirs = keyed(base);
    let ours = keyed(new);
    let mut points: Vec<(i64, i64, bool)> = Vec::new();
    for (key, b) in &theirs {
        if let Some(n) = ours.get(key) {
            points.push((b.0, n.0, key.0));
            points.push((b.1, n.1, key.0));
        }
    }
    points.sort_unstable();
    let mut kept: Vec<(i64, i64)> = Vec::new();
    let (mut iterations, mut phases) = (false, false);
    for (b, n, iteration) in points {
        if kept.last().is_some_and(|&(pb, pn)| b < pb || n < pn) {
            continue;
        }
        if kept.last() != Some(&(b, n)) {
            kept.push((b, n));
        }
        iterations |= iteration;
        phases |= !iteration;
    }
    let what = match (iterations, phases) {
        (true, false) => "iteration",
        (false, true) => "phase",
        (true, true) => "iteration and phase",
        (false, false) => return None,
    };
    Some((kept, what))
}

/// `x` on BASE's axis mapped onto NEW's through `knots`: linear between
/// two knots, shifted by the nearest knot's offset outside them.
fn map_through(knots: &[(i64, i64)], x: i64) -> i64 {
    let k = knots.partition_point(|&(b, _)| b <= x);
    if k == 0 {
        return x - knots[0].0 + knots[0].1;
    }
    if k == knots.len() {
        let (b, n) = knots[k - 1];
        return x - b + n;
    }
    let ((b0, n0), (b1, n1)) = (knots[k - 1], knots[k]);
    if b1 == b0 {
        return n0;
    }
    // b0 ≤ x < b1 and n0 ≤ n1 (kept knots rise on both axes), so the step
    // lies in [0, n1 - n0) and fits an i64 again.
    let step = i128::from(x - b0) * i128::from(n1 - n0) / i128::from(b1 - b0);
    n0 + i64::try_from(step).unwrap_or(n1 - n0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(iteration: bool, name: &str, x0: i64, x1: i64) -> Span<'_> {
        Span {
            iteration,
            name,
            x0,
            x1,
        }
    }
    #[test]
    fn baseline_iterations_land_on_the_new_runs_iterations() {
        // BASE: iterations 0..10, 10..30; NEW: 0..20, 20..30.
        let base = [span(true, "0", 0, 10), span(true, "1", 10, 30)];
        let new = [span(true, "0", 0, 20), span(true, "1", 20, 30)];
        let (knots, what) = knots(&base, &new).unwrap();
        assert_eq!(what, "iteration");
        assert_eq!(map_through(&knots, 0), 0);
        assert_eq!(map_through(&knots, 5), 10);
        assert_eq!(map_through(&knots, 10), 20);
        assert_eq!(map_through(&knots, 20), 25);
        assert_eq!(map_through(&knots, 30), 30);
        assert_eq!(map_through(&knots, 35), 35, "after the last: shifted");
        assert_eq!(map_through(&knots, -4), -4, "before the first: shifted");
    }

    #[test]
    fn the_nth_span_of_a_phase_lands_on_the_nth_and_unmatched_ones_are_ignored() {
        // BASE: forward 0..10, backward 10..40, forward 40..50; NEW:
        // forward 0..20, backward 20..30, forward 30..60, and a phase BASE
        // does not have.
        let base = [
            span(false, "forward", 0, 10),
            span(false, "backward", 10, 40),
            span(false, "forward", 40, 50),
        ];
        let new = [
            span(false, "forward", 0, 20),
            span(false, "backward", 20, 30),
            span(false, "forward", 30, 60),
            span(false, "optimizer", 60, 70),
        ];
        let (knots, what) = knots(&base, &new).unwrap();
        assert_eq!(what, "phase");
        assert_eq!(knots, [(0, 0), (10, 20), (40, 30), (50, 60)]);
        assert_eq!(map_through(&knots, 5), 10);
        assert_eq!(map_through(&knots, 25), 25);
        assert_eq!(map_through(&knots, 45), 45);
    }

    #[test]
    fn nothing_in_common_aligns_nothing_and_a_point_running_backwards_is_dropped() {
        assert!(knots(&[], &[span(true, "0", 0, 1)]).is_none());
        assert!(knots(&[span(false, "a", 0, 1)], &[span(false, "b", 0, 1)]).is_none());
        // `b` comes after `a` in BASE but before it in NEW: dropped.
        let base = [span(false, "a", 0, 10), span(false, "b", 20, 30)];
        let new = [span(false, "b", 0, 5), span(false, "a", 10, 20)];
        let (knots, _) = knots(&base, &new).unwrap();
        assert_eq!(knots, [(0, 10), (10, 20)]);
    }
}
