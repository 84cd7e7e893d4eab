//! The rank section of `check --html` (docs/ranks.md) on the 8-rank job of
//! `tests/fixtures/ranks/`: the group figures, a bar per rank whose length
//! and limit marker are the generator's figures (`expected.json`), rank6
//! marked heaviest and over the limit, the summary table linking to it, and
//! a hostile rank name written as text.

use crate::common::Workdir;
use crate::ranks::{config, expected, ranks_dir, summarize, STAGED};

/// `check --html v.html` in `w`; the exit code and the page.
fn page(w: &Workdir) -> (i32, String) {
    let out = w.check().args(["--html", "v.html"]).output().unwrap();
    (out.status.code().unwrap(), w.read("v.html"))
}

/// The `<tr …>` row of rank `name` in the bars table, up to its `</tr>`.
fn row<'a>(html: &'a str, name: &str) -> &'a str {
    let at = html
        .find(&format!("data-rank=\"{name}\""))
        .unwrap_or_else(|| panic!("no row of {name}"));
    let start = html[..at].rfind("<tr").unwrap();
    let end = at + html[at..].find("</tr>").unwrap();
    &html[start..end]
}

/// The number after `key="` in `text`.
fn attr(text: &str, key: &str) -> u64 {
    let at = text.find(&format!("{key}=\"")).unwrap() + key.len() + 2;
    let rest = &text[at..];
    rest[..rest.find('"').unwrap()].parse().unwrap()
}

#[test]
fn the_check_page_has_a_rank_section_with_rank6_heaviest_and_over_the_limit() {
    let e = expected();
    let dir = ranks_dir();
    let snaps = format!("{}/*.pickle", dir.join("run").display());
    let golden = format!("{}/", dir.join("baseline").display());
    let w = Workdir::new(&config(&snaps, &golden, STAGED));
    let (code, html) = page(&w);
    assert_eq!(code, 1);
    assert!(
        html.contains("<section class=\"ranks fail\" id=\"ranks-0\">"),
        "no rank section"
    );
    // Linked from the summary table, as the snapshot `ranks`.
    assert!(html.contains("<a href=\"#ranks-0\">ranks</a>"));
    // Failures first: the failing rank section before any passing case.
    let first_pass = html.find("<section class=\"case pass\"").unwrap();
    assert!(html.find("id=\"ranks-0\"").unwrap() < first_pass);
    // The group figures: all ranks, then each stage.
    assert!(html.contains("<caption>Figures across the ranks</caption>"));
    for group in [
        "<td>all</td><td>allocated-peak</td><td>8</td>",
        "<td>stage first</td>",
    ] {
        assert!(html.contains(group), "{group}");
    }
    // The rank checks with their badges.
    let check = html
        .find("<td>ranks.allocated-peak.imbalance</td>")
        .expect("the imbalance check's row");
    assert!(html[check..]
        .starts_with("<td>ranks.allocated-peak.imbalance</td><td><span class=\"badge fail\""));
    let per: Vec<u64> = (0..8)
        .map(|k| {
            e["run"]["per-rank"][format!("rank{k}")]["allocated-peak"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let max = *per.iter().max().unwrap();
    assert_eq!(e["run"]["all"]["allocated-peak"]["max"], max);
    // The 15% limit: the mean's 115%, in whole bytes, from the generator's
    // values in integers.
    let limit =
        u64::try_from(per.iter().map(|&v| u128::from(v)).sum::<u128>() * 115 / 800).unwrap();
    for (k, &v) in per.iter().enumerate() {
        let name = format!("rank{k}");
        let r = row(&html, &name);
        assert_eq!(attr(r, "data-value"), v, "{r}");
        // The scale is the heaviest (the limit is below it): 1000 units.
        let width = (u128::from(v) * 2000 + u128::from(max)) / (2 * u128::from(max));
        assert_eq!(u128::from(attr(r, "width")), width, "{r}");
        assert_eq!(attr(r, "data-limit"), limit, "{r}");
        if k == 6 {
            assert!(r.starts_with("<tr class=\"heaviest over\""), "{r}");
            assert!(
                r.contains("<td>heaviest; over ranks.allocated-peak.imbalance, ranks.reserved-peak.imbalance</td>"),
                "{r}"
            );
            assert!(v > limit);
        } else {
            assert!(r.starts_with("<tr class=\"\""), "{r}");
            assert!(v <= limit);
        }
    }
    // Stage first's limit is on the scale for its ranks; stage last's
    // (rank6 raises its mean) is past the heaviest and not drawn.
    assert!(row(&html, "rank0").contains("class=\"limit stage\""));
    assert!(!row(&html, "rank6").contains("class=\"limit stage\""));
}

#[test]
fn a_hostile_rank_name_is_text_on_the_check_page() {
    let w = Workdir::new(&config("sums/*.json", "golden/", "imbalance = \"50%\""));
    summarize(&w, &ranks_dir().join("run"), "sums");
    summarize(&w, &ranks_dir().join("baseline"), "golden");
    let evil = "r<img src=x onerror=alert(1)>&\"'";
    std::fs::rename(
        w.path("sums/rank7.json"),
        w.path(&format!("sums/{evil}.json")),
    )
    .unwrap();
    let (_, html) = page(&w);
    assert!(!html.contains("<img"), "markup from a name");
    let escaped = "r&lt;img src=x onerror=alert(1)&gt;&amp;&quot;&#39;";
    assert!(
        html.contains(&format!("data-rank=\"{escaped}\"")),
        "the rank's row"
    );
    assert!(
        html.contains(&format!("aria-label=\"{escaped}: ")),
        "its bar"
    );
    // The heaviest is still rank6, and the rank is counted.
    assert!(row(&html, "rank6").starts_with("<tr class=\"heaviest\""));
    assert!(html.contains("across 8 ranks"));
}
