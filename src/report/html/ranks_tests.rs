//! Tests of the rank section of the check page.

use super::*;

#[test]
fn a_value_sits_on_the_scale_rounded_and_never_past_its_end() {
    assert_eq!(at(0, 100), 0);
    assert_eq!(at(100, 100), SCALE);
    assert_eq!(at(50, 100), SCALE / 2);
    assert_eq!(at(1, 3), 333);
    assert_eq!(at(2, 3), 667);
    assert_eq!(at(200, 100), SCALE, "clamped");
    assert_eq!(at(5, 0), 0);
    assert_eq!(at(u64::MAX, u64::MAX), SCALE);
}

/// `n` ranks `r0…`, each of value `k + 1` but rank `heavy` at
/// `1000 + n`, against an all-ranks limit of `limit` bytes.
fn verdict(n: usize, heavy: usize, limit: u64) -> RanksVerdict {
    let f = Figure::AllocatedPeak;
    let v = |k: usize| {
        if k == heavy {
            1000 + n as u64
        } else {
            k as u64 + 1
        }
    };
    let ranks = (0..n)
        .map(|k| RankRow {
            rank: format!("r{k}"),
            stages: Vec::new(),
            values: vec![Some(v(k))],
            lower_bound: false,
        })
        .collect();
    let check = crate::compare::Check {
        budget: Some(limit),
        ..crate::compare::Check::new(
            CheckId::Ranks(RankCheckId::Imbalance {
                stage: None,
                figure: f,
            }),
            Status::Fail,
            f.unit(),
            v(heavy),
        )
    };
    RanksVerdict {
        status: Status::Fail,
        figures: vec![f],
        ranks,
        groups: vec![GroupFigures {
            stage: None,
            figure: f,
            ranks: n,
            max: v(heavy),
            min: 1,
            mean: 1.0,
            spread: v(heavy) - 1,
            imbalance: 1.0,
            heaviest: format!("r{heavy}"),
            lightest: "r0".into(),
        }],
        checks: vec![check],
    }
}

#[test]
fn past_the_cap_the_heaviest_and_the_ranks_over_a_limit_are_still_listed() {
    // 300 ranks: r290 heaviest, r281..r299 (values 282…) over a limit
    // of 281 bytes: 19 flagged, then the first 237 others.
    let r = verdict(300, 290, 281);
    let mut out = String::new();
    bars_table(&mut out, &r);
    let rows: Vec<&str> = out
        .lines()
        .filter_map(|l| l.split("data-rank=\"").nth(1))
        .map(|l| &l[..l.find('"').unwrap()])
        .collect();
    assert_eq!(rows.len(), TABLE_ROWS);
    assert!(rows.contains(&"r290"));
    for k in 281..300 {
        assert!(rows.contains(&format!("r{k}").as_str()), "r{k} is over");
    }
    // The rest are the first in name order, and all in name order.
    assert_eq!(rows[0], "r0");
    assert_eq!(rows[TABLE_ROWS - 20], "r236");
    assert_eq!(rows[TABLE_ROWS - 19], "r281");
    assert!(out.contains("44 more ranks not listed"), "{out}");
    assert!(out.contains("<tr class=\"heaviest over\" data-rank=\"r290\">"));
    assert!(out.contains("<tr class=\"over\" data-rank=\"r299\">"));
    assert!(out.contains("<tr class=\"\" data-rank=\"r0\">"));
}

#[test]
fn up_to_the_cap_every_rank_is_listed_and_the_limit_extends_the_scale() {
    // 4 ranks (1, 2, 3 and r3 at 1004) under a limit of 2008: the
    // scale is the limit, so the heaviest's bar is half of it.
    let r = verdict(4, 3, 2008);
    let mut out = String::new();
    bars_table(&mut out, &r);
    assert_eq!(out.matches("data-rank=").count(), 4);
    assert!(!out.contains("more ranks"));
    assert!(
        out.contains("width=\"500\" height=\"10\" data-value=\"1004\""),
        "{out}"
    );
    assert!(out.contains("x1=\"1000\""), "{out}");
    assert!(
        out.contains("<tr class=\"heaviest\" data-rank=\"r3\">"),
        "{out}"
    );
}

#[test]
fn a_rank_heaviest_in_another_figure_only_is_named_so_and_not_drawn_as_the_heaviest() {
    let (a, b) = (Figure::AllocatedPeak, Figure::ReservedPeak);
    let group = |figure, heaviest: &str, max| GroupFigures {
        stage: None,
        figure,
        ranks: 2,
        max,
        min: 1,
        mean: 2.0,
        spread: max - 1,
        imbalance: 0.0,
        heaviest: heaviest.into(),
        lightest: "x".into(),
    };
    let row = |rank: &str, values: [u64; 2]| RankRow {
        rank: rank.into(),
        stages: Vec::new(),
        values: values.map(Some).to_vec(),
        lower_bound: false,
    };
    let r = RanksVerdict {
        status: Status::Pass,
        figures: vec![a, b],
        ranks: vec![row("r0", [2, 9]), row("r1", [4, 3])],
        groups: vec![group(a, "r1", 4), group(b, "r0", 9)],
        checks: Vec::new(),
    };
    let mut out = String::new();
    bars_table(&mut out, &r);
    assert!(
        out.contains("<tr class=\"\" data-rank=\"r0\">"),
        "r0's bar is not the longest: {out}"
    );
    assert!(
        out.contains("<td>heaviest in reserved-peak</td></tr>"),
        "{out}"
    );
    assert!(
        out.contains("<tr class=\"heaviest\" data-rank=\"r1\">"),
        "{out}"
    );
    assert!(
        out.contains("<td>heaviest in allocated-peak</td></tr>"),
        "{out}"
    );
    assert!(
        out.contains("width=\"500\" height=\"10\" data-value=\"2\""),
        "{out}"
    );
}
