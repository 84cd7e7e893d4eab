//! Memory with no story (docs/figures.md#memory-with-no-story): one name in
//! every output, explained where it shows; frameless allocations placed by
//! phase and lifetime (docs/figures.md#frameless-allocations); a dump
//! without history answered from its segments
//! (docs/figures.md#a-dump-without-history). On the real snapshots of
//! `../shared/fixtures/real`, skipped, loudly, when `../shared` is absent.

use std::path::PathBuf;

use crate::common::{json_of, memgate, page_data, peak_device, real_fixture, Workdir};

fn real(name: &str) -> Option<PathBuf> {
    real_fixture(name, "a memory-with-no-story test")
}

fn stdout(args: &[&str]) -> String {
    let out = memgate().args(args).assert().success().get_output().clone();
    String::from_utf8(out.stdout).unwrap()
}

/// The pre-recording memory of the wrapped Hyperion trace, computed here
/// by an independent replay in Python (the fixtures README's
/// `allocated-peak` 5518000144 is reached at entry 4334; the memory from
/// before recording that has no frames and is still live then): 331
/// blocks, 3886201856 bytes.
const HYPERION_PRE_TRACE: u64 = 3_886_201_856;

#[test]
fn the_memory_live_before_recording_has_one_name_in_peak_profile_checks_markdown_and_the_page() {
    let Some(path) = real("wrapped_hyperion_cl128_fw_with_grad.pickle") else {
        return;
    };
    let p = path.to_str().unwrap();
    let legend = "pre-trace: memory live since before recording began";
    // profile: the category, the site, each of the same bytes, and the note.
    let doc = json_of(&["profile", "--format", "json", p]);
    let d = &doc["snapshots"][0]["devices"][0];
    assert_eq!(d["figures"]["allocated-peak"], 5_518_000_144u64);
    assert_eq!(
        d["categories"]["at-allocated-peak"]["pre-trace"],
        HYPERION_PRE_TRACE
    );
    let site = d["sites-at-peak"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["site"] == "pre-trace")
        .expect("a pre-trace site");
    assert_eq!(
        (&site["bytes"], &site["count"]),
        (&HYPERION_PRE_TRACE.into(), &331.into())
    );
    let profile = stdout(&["profile", p]);
    assert!(
        profile.contains("pre-trace") && profile.contains(legend),
        "{profile}"
    );
    // peak: the stack group without frames, by the same name.
    let groups = peak_device(&path)["stacks-at-moment"]["stacks"]
        .as_array()
        .unwrap()
        .clone();
    let pre: Vec<_> = groups
        .iter()
        .filter(|g| g["no-frames"] == "pre-trace")
        .collect();
    assert_eq!(pre.len(), 1);
    assert_eq!(
        (&pre[0]["bytes"], &pre[0]["count"]),
        (&HYPERION_PRE_TRACE.into(), &331.into())
    );
    let text = stdout(&["peak", p]);
    assert!(
        text.contains("pre-trace (no frames)") && text.contains(legend),
        "{text}"
    );
    // check's Markdown and the page.
    let w = Workdir::new(&format!(
        "[[target]]\nname = \"t\"\nsnapshots = [{:?}]\naccept-lower-bounds = true\n\
         [target.budget]\nreserved-peak = \"10 GiB\"\n",
        p
    ));
    w.check()
        .args([
            "--config",
            "memgate.toml",
            "--markdown",
            "r.md",
            "--html",
            "r.html",
        ])
        .assert()
        .success();
    let md = w.read("r.md");
    assert!(md.contains("| pre-trace | — | 3.62 GiB |"), "{md}");
    assert!(
        md.contains("_`pre-trace`: memory live since before recording began"),
        "{md}"
    );
    let html = w.read("r.html");
    assert!(
        html.contains("<td>pre-trace</td>"),
        "no pre-trace category row"
    );
    assert!(html.contains("<code>pre-trace</code>: memory live since before recording began"));
    let data = page_data(&html);
    let named = data["devices"][0]["moments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["stacks"].as_array().unwrap())
        .filter(|s| s["no_frames"][0] == "pre-trace")
        .count();
    assert!(named > 0, "the page's stack table names no pre-trace group");
    // No output keeps the old names.
    for out in [&profile, &text, &md, &html] {
        assert!(!out.contains("<unknown>") && !out.contains("(no frames recorded)"));
    }
}

/// Sum and count of the stack groups live at the allocated peak that hold
/// Adam's first moment (`exp_avg`, made by `_init_group` at `adam.py:174`,
/// one per parameter, each as large as its parameter).
fn adam_first_moments(groups: &[serde_json::Value]) -> (u64, u64) {
    groups
        .iter()
        .filter(|g| {
            g["frames"].as_array().unwrap().iter().any(|f| {
                f.as_str().unwrap().starts_with("_init_group (")
                    && f.as_str().unwrap().ends_with("adam.py:174)")
            })
        })
        .fold((0, 0), |(b, c), g| {
            (
                b + g["bytes"].as_u64().unwrap(),
                c + g["count"].as_u64().unwrap(),
            )
        })
}

#[test]
fn the_npu_training_fixtures_frameless_allocations_live_at_the_peak_are_its_gradients() {
    let Some(path) = real("npu_memsnapdump_training.pkl") else {
        return;
    };
    let p = path.to_str().unwrap();
    // From the snapshot's own data: the frameless allocations live at the
    // allocated peak (inside the optimizer step) are as many, and as large,
    // as the optimizer's per-parameter states: one gradient per parameter.
    let d = peak_device(&path);
    let groups = d["stacks-at-moment"]["stacks"].as_array().unwrap();
    let frameless: Vec<_> = groups
        .iter()
        .filter(|g| g["no-frames"] == "frameless")
        .collect();
    assert_eq!(frameless.len(), 1);
    let (fl_bytes, fl_count) = (
        frameless[0]["bytes"].as_u64().unwrap(),
        frameless[0]["count"].as_u64().unwrap(),
    );
    assert_eq!(adam_first_moments(groups), (fl_bytes, fl_count));
    assert_eq!((fl_bytes, fl_count), (94_114_088, 161));
    // The rule (made in the backward, live into the step) calls them
    // gradients; nothing is left `frameless` or `unknown` at the peak.
    let profile = json_of(&["profile", "--format", "json", p]);
    let c = &profile["snapshots"][0]["devices"][0]["categories"];
    assert_eq!(c["at-allocated-peak"]["gradient"], fl_bytes);
    assert_eq!(c["at-allocated-peak"]["frameless"], 0);
    assert!(c["at-allocated-peak"].get("unknown").is_none());
    // The site keeps saying there were no frames.
    let sites = profile["snapshots"][0]["devices"][0]["sites-at-peak"]
        .as_array()
        .unwrap();
    let site = sites.iter().find(|s| s["site"] == "frameless").unwrap();
    assert_eq!(
        (&site["bytes"], &site["count"]),
        (&fl_bytes.into(), &fl_count.into())
    );
}

/// (file, live, reserved, largest free block, largest live block): live
/// and reserved are the fixtures README's `allocated-peak` and
/// `reserved-peak` (history never recorded, so the dump is all there is);
/// the largest free block and live block come from an independent Python
/// walk of the segments (block addresses summed from the segment's start,
/// touching segments merged).
const DUMPS: [(&str, u64, u64, u64, u64); 3] = [
    (
        "select_n_dec166a.pickle",
        544_460_336,
        5_559_549_952,
        3_294_625_792,
        154_389_504,
    ),
    (
        "nohistory_charran78_docubox.pickle",
        90_861_056,
        109_051_904,
        11_534_336,
        46_881_792,
    ),
    (
        "nohistory_zijiandu_attention.pickle",
        7_575_726_912,
        8_143_241_216,
        165_675_008,
        151_781_376,
    ),
];

#[test]
fn peak_on_a_dump_without_history_says_so_and_gives_what_the_dump_shows() {
    for (file, live, reserved, largest_free, largest_live) in DUMPS {
        let Some(path) = real(file) else { return };
        let p = path.to_str().unwrap();
        let doc = json_of(&["peak", "--format", "json", "--top", "3", p]);
        let d = &doc["snapshots"][0]["devices"][0];
        let dump = &d["dump"];
        assert_eq!(dump["live"], live, "{file}");
        assert_eq!(dump["reserved"], reserved, "{file}");
        assert_eq!(dump["cached-free"], reserved - live, "{file}");
        assert_eq!(dump["largest-free-block"], largest_free, "{file}");
        let blocks = dump["largest-live"].as_array().unwrap();
        assert_eq!(blocks.len(), 3, "{file}");
        assert_eq!(blocks[0]["bytes"], largest_live, "{file}");
        let text = stdout(&["peak", "--top", "3", p]);
        assert!(text.contains("no allocation history"), "{text}");
        assert!(
            text.contains(&format!("({reserved} bytes), cached free")),
            "{text}"
        );
        assert!(!text.contains("0 OOMs"), "{text}");
    }
}

#[test]
fn a_synthetic_list_of_segments_without_history_gets_its_dump_from_the_generators_figures() {
    // torch 1.13's top-level list of segments: no trace at all. The
    // generator's expected.json gives the device's allocated-peak (Σ
    // requested_size of the live blocks) and reserved-peak (Σ total_size).
    let exp: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(crate::common::fixture("expected.json")).unwrap(),
    )
    .unwrap();
    let dev = &exp["v1_13_list.pickle"]["devices"][0];
    let (live, reserved) = (
        dev["figures"]["allocated-peak"].as_u64().unwrap(),
        dev["figures"]["reserved-peak"].as_u64().unwrap(),
    );
    let path = crate::common::fixture("v1_13_list.pickle");
    let doc = json_of(&["peak", "--format", "json", path.to_str().unwrap()]);
    let d = &doc["snapshots"][0]["devices"][0];
    assert_eq!(d["device"], dev["device"]);
    let dump = &d["dump"];
    assert_eq!(
        (&dump["live"], &dump["reserved"]),
        (&live.into(), &reserved.into())
    );
    assert_eq!(dump["cached-free"], reserved - live);
    let largest = dump["largest-live"][0]["bytes"].as_u64().unwrap();
    assert!(largest > 0 && largest <= live);
    let text = stdout(&["peak", path.to_str().unwrap()]);
    assert!(
        text.contains("trace: none: the snapshot holds no allocation history"),
        "{text}"
    );
}

#[test]
fn a_regression_whose_top_site_is_pre_trace_memory_is_explained_in_every_check_report() {
    use crate::common::{device, summary, CONFIG};
    const MIB: u64 = 1 << 20;
    let w = Workdir::new(CONFIG);
    let at = |pre: u64| {
        let sites = [("pre-trace", pre), ("forward (model.py)", 200 * MIB)];
        summary("r.pickle", vec![device(0, pre + 200 * MIB, &sites)])
    };
    w.write_summary("golden/r.json", &at(200 * MIB));
    w.write_summary("snaps/r.json", &at(260 * MIB));
    let out = w
        .check()
        .env("GITHUB_ACTIONS", "true")
        .args(["--junit", "j.xml", "--markdown", "r.md"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    let legend = "pre-trace: memory live since before recording began";
    assert!(out.contains("; top site: +60 MiB pre-trace"), "{out}");
    assert!(out.contains(&format!("\nnote: {legend}")), "{out}");
    assert!(
        out.contains(&format!("(note: {legend}")),
        "no annotation explains it: {out}"
    );
    assert!(w.read("j.xml").contains(&format!("note: {legend}")));
    assert!(w.read("r.md").contains(&format!("_note: {legend}")));
}
