//! Every renderer of an analysis document, on hand-built documents: what a
//! user reads does not depend on a fixture's analysis, and a hostile name
//! reaches each sink escaped by that sink's rule.

use memgate::Device;
use std::collections::BTreeMap;

use memgate::analysis::diff::{Delta, DeviceDiff, Sides, SiteChange, SiteChangeKind};
use memgate::analysis::{
    Categories, DeviceReport, Figures, PeakEntry, SiteBytes, StackGroup, Timeline, TimelinePoint,
};
use memgate::document::{
    AnalysedSnapshot, DeviceInventory, DiffDocument, FileFormat, InspectDocument, PeakDocument,
    ProfileDocument, SnapshotInventory,
};
use memgate::report::{diff, document_json, html, inspect, peak, profile};

const MIB: u64 = 1 << 20;
/// A frame name out of a hostile snapshot: a new log line, a colour, markup.
const HOSTILE: &str = "evil\n::error::forged\u{1b}[31m <b>&";

fn render(f: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    f(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn named(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn device_report() -> DeviceReport {
    DeviceReport {
        device: Device::new(0),
        figures: Figures {
            dynamic_peak: 96 * MIB,
            static_memory: 4 * MIB,
            overall_peak: 100 * MIB,
            allocated_peak: 98 * MIB,
            reserved_peak: 128 * MIB,
            oom_events: 0,
            alloc_events: 1200,
            trace_entries: 2400,
            ..Figures::default()
        },
        categories: Categories {
            rules: "default".into(),
            at_allocated_peak: named(&[
                ("parameter", 60 * MIB),
                ("activation", 38 * MIB),
                ("gradient", 0),
            ]),
            at_dynamic_peak: named(&[
                ("parameter", 60 * MIB),
                ("activation", 36 * MIB),
                ("gradient", 0),
            ]),
            peaks: named(&[
                ("parameter", 60 * MIB),
                ("activation", 40 * MIB),
                ("gradient", 0),
            ]),
            custom: Vec::new(),
        },
        peak_entry: PeakEntry {
            dynamic_peak: Some(1800),
            allocated_peak: Some(1790),
            reserved_peak: Some(12),
        },
        peak_time_us: Some(PeakEntry {
            dynamic_peak: Some(5_000_000),
            allocated_peak: Some(4_990_000),
            reserved_peak: None,
        }),
        trace_complete: false,
        stacks_at_peak: vec![
            StackGroup {
                bytes: 60 * MIB,
                count: 3,
                frames: vec![
                    "malloc (alloc.cpp:0)".into(),
                    format!("{HOSTILE} (model.py:12)").into(),
                    "main (train.py:40)".into(),
                ]
                .into(),
                no_frames: None,
                user_metadata: Default::default(),
            },
            StackGroup {
                bytes: 36 * MIB,
                count: 1,
                frames: vec!["malloc (alloc.cpp:0)".into()].into(),
                no_frames: None,
                user_metadata: Default::default(),
            },
            StackGroup {
                bytes: 0,
                count: 1,
                frames: Vec::new().into(),
                no_frames: Some(memgate::NoStory::PreTrace),
                user_metadata: Default::default(),
            },
        ],
        sites_at_peak: vec![
            SiteBytes {
                site: format!("{HOSTILE} (model.py)"),
                bytes: 60 * MIB,
                count: 3,
                // The file as recorded: a title on the page, escaped too.
                recorded: Some(format!("/srv/{HOSTILE}/model.py")),
            },
            SiteBytes {
                site: "forward (layer.py)".into(),
                bytes: 38 * MIB,
                count: 7,
                recorded: None,
            },
        ],
        time: None,
        peak_phase: None,
        stacks_at_moment: None,
        oom: Vec::new(),
        warnings: vec!["segment 0: blocks add up to 1 byte less".into()],
        dump: None,
        window: None,
        environment: None,
        pools: Vec::new(),
        spreads: Default::default(),
        host: None,
    }
}

fn analysed() -> Vec<AnalysedSnapshot> {
    vec![AnalysedSnapshot {
        path: "runs/rank\n0.pickle".into(),
        devices: vec![device_report()],
        window_not_placed: vec![],
        warnings: vec!["12 bytes after the pickle's STOP were ignored".into()],
    }]
}

/// No line of a text rendering may start a CI workflow command or hold an
/// escape sequence.
fn assert_one_line_per_name(text: &str) {
    assert!(!text.contains('\u{1b}'), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("::")), "{text}");
}

#[test]
fn peak_text_names_mosaic_figures_escapes_frames_and_hides_cpp_frames() {
    let text = render(|out| peak::text(out, &PeakDocument::new(analysed())));
    assert_one_line_per_name(&text);
    insta::assert_snapshot!(text);
}

#[test]
fn peak_text_of_a_snapshot_without_devices_says_so() {
    let doc = PeakDocument::new(vec![AnalysedSnapshot {
        path: "empty.pickle".into(),
        devices: vec![],
        window_not_placed: vec![],
        warnings: vec![],
    }]);
    assert_eq!(
        render(|out| peak::text(out, &doc)),
        "empty.pickle\n  no device has a trace or a segment: the snapshot records no memory, so there is nothing to chart or judge\n"
    );
}

#[test]
fn profile_text_lists_non_empty_categories_largest_first_and_escapes_sites() {
    let text = render(|out| profile::text(out, &ProfileDocument::new(analysed())));
    assert_one_line_per_name(&text);
    assert!(!text.contains("gradient"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn peak_and_profile_json_keep_names_raw_and_leave_loader_warnings_out() {
    let doc = PeakDocument::new(analysed());
    let text = render(|out| document_json::write(out, &doc));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], PeakDocument::SCHEMA_VERSION);
    assert!(text.starts_with("{\n  \"schema_version\": 1,\n  \"snapshots\""));
    let snap = &v["snapshots"][0];
    assert_eq!(snap["path"], "runs/rank\n0.pickle");
    assert_eq!(snap.as_object().unwrap().len(), 2, "path and devices only");
    assert_eq!(
        snap["devices"][0]["sites-at-peak"][0]["site"],
        format!("{HOSTILE} (model.py)")
    );
    let profile = render(|out| document_json::write(out, &ProfileDocument::new(analysed())));
    assert_eq!(profile, text, "the two documents share their shape");
}

fn inventory() -> InspectDocument {
    InspectDocument::new(vec![
        SnapshotInventory {
            path: "rank0.pickle".into(),
            format: FileFormat::Pickle,
            pickle_protocol: Some(4),
            shape: "dict",
            generation: "2.3+".into(),
            segments: 3,
            blocks: 9,
            unique_frames: 40,
            unique_stacks: 12,
            trace_lists: 2,
            trailing_bytes: 0,
            devices: vec![
                DeviceInventory {
                    device: Device::new(0),
                    segments: 3,
                    trace_entries: 20,
                    actions: vec![
                        ("alloc".into(), 10),
                        ("free_completed".into(), 9),
                        (HOSTILE.into(), 1),
                    ],
                },
                DeviceInventory {
                    device: Device::new(1),
                    segments: 0,
                    trace_entries: 0,
                    actions: vec![],
                },
            ],
            warnings: vec![format!("unknown action {HOSTILE}")],
        },
        SnapshotInventory {
            path: "main.json".into(),
            format: FileFormat::Json,
            pickle_protocol: None,
            shape: "list",
            generation: "1.13".into(),
            segments: 0,
            blocks: 0,
            unique_frames: 0,
            unique_stacks: 0,
            trace_lists: 0,
            trailing_bytes: 0,
            devices: vec![],
            warnings: vec![],
        },
    ])
}

#[test]
fn inspect_text_gives_one_line_per_device_with_actions_in_document_order() {
    let text = render(|out| inspect::text(out, &inventory()));
    assert_one_line_per_name(&text);
    insta::assert_snapshot!(text);
}

#[test]
fn inspect_json_has_the_spec_keys_in_order_and_actions_as_an_object() {
    let text = render(|out| document_json::write(out, &inventory()));
    insta::assert_snapshot!(text);
}

fn diff_document(top: usize) -> DiffDocument {
    let device = DeviceDiff {
        device: Device::new(0),
        in_base: true,
        in_new: true,
        peak_moved: vec![],
        figures: vec![
            Delta::new("dynamic-peak", 96 * MIB, 112 * MIB),
            Delta::new("alloc-events", 1200, 1100),
            Delta::new("oom-events", 0, 1),
        ],
        categories: vec![
            Delta::new("activation", 36 * MIB, 52 * MIB),
            Delta::new("parameter", 60 * MIB, 60 * MIB),
        ],
        sites: vec![
            SiteChange {
                site: format!("{HOSTILE} (model.py)"),
                change: SiteChangeKind::Appeared,
                base: 0,
                new: 16 * MIB,
                delta: i128::from(16 * MIB),
            },
            SiteChange {
                site: "forward (layer.py)".into(),
                change: SiteChangeKind::Shrank,
                base: 8 * MIB,
                new: 6 * MIB,
                delta: -2 * i128::from(MIB),
            },
        ],
        complete: Sides::default(),
    };
    let only_new = DeviceDiff {
        device: Device::new(1),
        in_base: false,
        in_new: true,
        peak_moved: vec![],
        figures: vec![Delta::new("dynamic-peak", 0, MIB)],
        categories: vec![],
        sites: vec![],
        complete: Sides::default(),
    };
    DiffDocument::new(
        "golden/rank0.json",
        "rank0.pickle",
        vec![device, only_new],
        top,
    )
}

#[test]
fn diff_text_shows_changes_escapes_sites_and_counts_the_sites_past_top() {
    let text = render(|out| diff::text(out, &diff_document(1)));
    assert_one_line_per_name(&text);
    assert!(text.contains("… 1 more (--top)"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn diff_json_lists_only_the_top_sites_and_no_count_of_the_rest() {
    let text = render(|out| document_json::write(out, &diff_document(1)));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema_version"], DiffDocument::SCHEMA_VERSION);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["schema_version", "base", "new", "devices"]);
    let dev = &v["devices"][0];
    assert_eq!(dev["sites"].as_array().unwrap().len(), 1);
    assert_eq!(dev["sites"][0]["site"], format!("{HOSTILE} (model.py)"));
    assert!(dev.get("more-sites").is_none() && dev.get("more_sites").is_none());
}

#[test]
fn diff_text_with_top_zero_does_not_claim_no_change() {
    let text = render(|out| diff::text(out, &diff_document(0)));
    assert!(text.contains("… 2 more (--top)"), "{text}");
    let dev0 = text.split("dev1").next().unwrap();
    assert!(
        !dev0.contains("largest change first):\n    no change\n  "),
        "{text}"
    );
}

#[test]
fn html_page_escapes_names_and_draws_each_device_from_its_timeline() {
    let doc = ProfileDocument::new(analysed());
    let timeline = Timeline {
        fine: Vec::new(),
        device: Device::new(0),
        categories: vec!["parameter".into(), "activation".into(), HOSTILE.into()],
        points: vec![
            TimelinePoint {
                entry: None,
                time_us: None,
                reserved: 128 * MIB,
                bytes: vec![60 * MIB, 0, 0],
            },
            TimelinePoint {
                entry: Some(900),
                time_us: None,
                reserved: 128 * MIB,
                bytes: vec![60 * MIB, 20 * MIB, 0],
            },
            TimelinePoint {
                entry: Some(1790),
                time_us: None,
                reserved: 128 * MIB,
                bytes: vec![60 * MIB, 38 * MIB, MIB],
            },
        ],
        ..Timeline::default()
    };
    let page = html::render(&doc, &[vec![timeline]], html::XAxis::Auto);
    assert!(!page.contains('\u{1b}') && !page.contains("<b>"), "{page}");
    assert!(
        page.contains("evil\\n::error::forged\\u{1b}[31m &lt;b&gt;&amp;"),
        "{page}"
    );
    // The markup and the data; the inline stylesheet and script (fixed
    // text, hashed into the policy) are elided.
    let elide = |page: &str, open: &str, close: &str| {
        let a = page.find(open).unwrap() + open.len();
        let b = a + page[a..].find(close).unwrap();
        format!("{}…{}", &page[..a], &page[b..])
    };
    let page = elide(&page, "<style>", "</style>");
    let page = elide(&page, "<script>", "</script>");
    let page = elide(&page, "script-src ", "; img-src");
    insta::assert_snapshot!(page);
}
