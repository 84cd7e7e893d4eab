//! `[[waiver]]` (docs/gate.md#waivers): a failing check let through as
//! `waived` with its reason until its date, in every report; failing again
//! after the date or past its maximum; a waiver that matches nothing
//! reported. "Today" is `SOURCE_DATE_EPOCH`.

use crate::common::{Workdir, MIB};

/// One figure judged, so one check fails when rank0 grows.
const BASE: &str = r#"[defaults]
tolerance = "5%"
noise-floor = "1 MiB"
figures = ["allocated-peak"]

[[target]]
name = "train"
snapshots = "snaps/*.json"
baseline = "golden/"
"#;

const REASON: &str = "activation checkpointing lands in #1234";

/// 2026-12-31T12:00:00Z and 2027-01-01T00:00:00Z.
const LAST_DAY_NOON: &str = "1798718400";
const DAY_AFTER: &str = "1798761600";

fn waiver(extra: &str) -> String {
    format!(
        "{BASE}\n[[waiver]]\ntarget = \"train\"\nfigure = \"allocated-peak\"\n\
         until = 2026-12-31\nreason = \"{REASON}\"\n{extra}"
    )
}

/// rank0 grown 20% over its baseline, rank1 unchanged.
fn grown(config: &str) -> Workdir {
    let w = Workdir::new(config);
    w.rank("rank0", Some(1000 * MIB), 1200 * MIB);
    w.rank("rank1", Some(1000 * MIB), 1000 * MIB);
    w
}

fn run(w: &Workdir, epoch: &str, code: i32, args: &[&str]) -> String {
    let out = w
        .check()
        .env("SOURCE_DATE_EPOCH", epoch)
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_waiver_lets_a_failing_check_through_as_waived_in_every_report_until_its_date() {
    let w = grown(&waiver(""));
    // Without the waiver the same run fails.
    let plain = grown(BASE);
    run(&plain, LAST_DAY_NOON, 1, &[]);
    let args = [
        "--json",
        "v.json",
        "--junit",
        "j.xml",
        "--markdown",
        "m.md",
        "--codequality",
        "cq.json",
        "--html",
        "p.html",
    ];
    let out = run(&w, LAST_DAY_NOON, 0, &args);
    let line = out.lines().find(|l| l.starts_with("WAIVED")).unwrap();
    assert!(line.contains("train rank0"), "{line}");
    assert!(
        line.contains(&format!(
            "waived until 2026-12-31 by the waiver at memgate.toml:11:1: {REASON}"
        )),
        "{line}"
    );
    assert!(out.contains("memgate: warn: 0 failed, 1 waived"), "{out}");
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(v["verdict"], "warn");
    assert_eq!(v["counts"]["waived"], 1);
    assert_eq!(v["targets"][0]["snapshots"][0]["status"], "waived");
    let c = &v["targets"][0]["snapshots"][0]["devices"][0]["checks"][0];
    assert_eq!(c["status"], "waived");
    assert_eq!(c["findings"][0]["kind"], "waived");
    assert_eq!(c["findings"][0]["reason"], REASON);
    assert_eq!(c["findings"][0]["until"], "2026-12-31");
    assert_eq!(v["waivers"][0]["state"], "used");
    assert_eq!(v["waivers"][0]["matched"], 1);
    let junit = w.read("j.xml");
    assert!(!junit.contains("<failure"), "{junit}");
    assert!(junit.contains("dev0.allocated-peak [waived]"), "{junit}");
    assert!(junit.contains("waived: rank0"), "{junit}");
    assert!(junit.contains(REASON), "{junit}");
    let md = w.read("m.md");
    assert!(md.contains("🔕 waived"), "{md}");
    assert!(
        md.contains("2026\\-12\\-31") || md.contains("2026-12-31"),
        "{md}"
    );
    let cq: serde_json::Value = serde_json::from_str(&w.read("cq.json")).unwrap();
    let issue = &cq.as_array().unwrap()[0];
    assert_eq!(issue["severity"], "info");
    assert!(issue["description"].as_str().unwrap().contains(REASON));
    let page = w.read("p.html");
    assert!(
        page.contains("data-status=\"waived\""),
        "page has no waived badge"
    );
    assert!(
        page.contains("until 2026-12-31"),
        "page does not say until when"
    );
}

#[test]
fn after_its_date_a_waiver_fails_the_check_again_saying_it_expired() {
    let w = grown(&waiver(""));
    let out = run(&w, DAY_AFTER, 1, &["--json", "v.json"]);
    let line = out.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(
        line.contains("the waiver at memgate.toml:11:1 expired after 2026-12-31"),
        "{line}"
    );
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(v["waivers"][0]["state"], "expired");
}

#[test]
fn past_its_maximum_a_waiver_fails_the_check_saying_it_was_exceeded() {
    // rank0's allocated peak is 1200 MiB + 8 MiB of static memory.
    let w = grown(&waiver("maximum = \"1100 MiB\"\n"));
    let out = run(&w, LAST_DAY_NOON, 1, &[]);
    let line = out.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(
        line.contains("exceeded the waiver at memgate.toml:11:1, which allows at most 1.07 GiB"),
        "{line}"
    );
    let w = grown(&waiver("maximum = \"1300 MiB\"\n"));
    run(&w, LAST_DAY_NOON, 0, &[]);
}

#[test]
fn a_waiver_that_matches_no_failing_check_is_reported() {
    // rank1 passes: a waiver of it matches nothing.
    let w = grown(&format!(
        "{BASE}\n[[waiver]]\ntarget = \"train\"\nfigure = \"allocated-peak\"\nsnapshot = \"rank1\"\n\
         until = 2026-12-31\nreason = \"{REASON}\"\n"
    ));
    let out = run(
        &w,
        LAST_DAY_NOON,
        1,
        &["--json", "v.json", "--markdown", "m.md"],
    );
    let note = "the waiver at memgate.toml:11:1 (target train, allocated-peak) matches no \
                failing check: remove it";
    assert!(out.contains(&format!("note: {note}")), "{out}");
    let v: serde_json::Value = serde_json::from_str(&w.read("v.json")).unwrap();
    assert_eq!(v["waivers"][0]["state"], "unused");
    assert_eq!(v["waivers"][0]["matched"], 0);
    assert!(w.read("m.md").contains("matches no failing check"));
}

#[test]
fn a_waiver_naming_no_target_or_no_figure_or_no_date_is_a_budget_error() {
    let w = grown(&format!(
        "{BASE}\n[[waiver]]\ntarget = \"trian\"\nfigure = \"alocated-peak\"\n\
         until = \"31/12/2026\"\nreason = \"\"\nmaximum = \"5%\"\n"
    ));
    let out = w.check().assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no [[target]] is named \"trian\"; did you mean `train`?"),
        "{err}"
    );
    assert!(err.contains("did you mean `allocated-peak`?"), "{err}");
    assert!(err.contains("\"31/12/2026\" is no date"), "{err}");
    assert!(err.contains("`waiver.reason`: is empty"), "{err}");
}

#[test]
fn a_waivers_reason_is_escaped_in_every_report() {
    let hostile = r#"<img src=x onerror=alert(1)> | **x** \u001b[2J"#;
    let config = waiver("").replace(REASON, hostile);
    let w = grown(&config);
    let args = ["--markdown", "m.md", "--html", "p.html", "--junit", "j.xml"];
    let out = run(&w, LAST_DAY_NOON, 0, &args);
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert!(out.contains("<img src=x onerror=alert(1)>"), "{out}");
    let page = w.read("p.html");
    assert!(
        !page.contains("<img src=x"),
        "the page holds the reason as markup"
    );
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;"));
    let md = w.read("m.md");
    assert!(!md.contains("<img src=x"), "{md}");
    assert!(!w.read("j.xml").contains('\u{1b}'));
}
