//! Rank names in natural order: digit runs compare as numbers, so
//! `rank2` comes before `rank10` (docs/figures.md#ranks).

use std::cmp::Ordering;

/// Names in natural order: runs of digits compare as numbers, so `rank2`
/// comes before `rank10`.
pub fn natural(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(p), Some(q)) if p.is_ascii_digit() && q.is_ascii_digit() => {
                let dx = x.iter().take_while(|c| c.is_ascii_digit()).count();
                let dy = y.iter().take_while(|c| c.is_ascii_digit()).count();
                let (nx, ny) = (trim_zeros(&x[..dx]), trim_zeros(&y[..dy]));
                let o = nx.len().cmp(&ny.len()).then_with(|| nx.cmp(ny));
                if o != Ordering::Equal {
                    return o;
                }
                (x, y) = (&x[dx..], &y[dy..]);
            }
            (Some(p), Some(q)) => {
                if p != q {
                    return p.cmp(q);
                }
                (x, y) = (&x[1..], &y[1..]);
            }
        }
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let k = d.iter().take_while(|c| **c == b'0').count();
    &d[k..]
}
