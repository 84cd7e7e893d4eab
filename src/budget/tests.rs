//! Budget validation: every problem at once, each with file:line:col.

use std::path::Path;

use super::*;

fn errors(text: &str) -> Vec<String> {
    match parse(text, "memgate.toml", Path::new(""), false) {
        Ok(_) => Vec::new(),
        Err(e) => e.iter().map(|e| e.to_string()).collect(),
    }
}

#[test]
fn a_valid_file_becomes_a_budget_with_levels_and_tolerances() {
    let b = parse(
        r#"
[defaults]
tolerance = "5%"
noise-floor = "32 MiB"

[[target]]
name = "t"
key = 'rank(\d+)'

[target.budget]
overall-peak = "60 GiB"
reserved-peak = { limit = "40 GB", level = "warn" }
oom-events = 0

[target.budget.category]
activation = 1024

[target.tolerance]
allocated-peak = { limit = "2%", level = "warn" }
"#,
        "memgate.toml",
        Path::new(""),
        false,
    )
    .unwrap();
    let t = &b.targets[0];
    assert_eq!(b.noise_floor, Bytes(32 << 20));
    assert_eq!(
        t.budget[&Figure::OverallPeak].value,
        Amount::Bytes(Bytes(60 << 30))
    );
    assert_eq!(
        t.budget[&Figure::ReservedPeak].value,
        Amount::Bytes(Bytes(40_000_000_000))
    );
    assert_eq!(t.budget[&Figure::ReservedPeak].level, Level::Warn);
    assert_eq!(t.budget[&Figure::ReservedPeak].loc.line, 12);
    assert_eq!(
        t.category_budget["activation"].value,
        Amount::Bytes(Bytes(1024))
    );
    assert_eq!(t.tolerance[&Figure::AllocatedPeak].pct, Percent(2.0));
}

#[test]
fn bad_regexes_wrong_types_and_a_missing_name_are_errors() {
    let e = errors(
        r#"
[categories]
broken = "(unclosed"
[[target]]
key = 'no-group'
device = "0"
[target.budget]
oom-events = "1 GiB"
"#,
    );
    assert_eq!(e.len(), 5, "{e:#?}");
    assert!(e[0].contains("`categories.broken`: not a valid regex"));
    assert!(e.iter().any(|e| e.contains("needs a `name`")));
    assert!(e
        .iter()
        .any(|e| e.contains("`target.key`: needs a capture group")));
    assert!(e
        .iter()
        .any(|e| e.contains("`target.device`: must be a device index")));
    assert!(e
        .iter()
        .any(|e| e.contains("`target.budget.oom-events`: must be a count")));
}

#[test]
fn a_syntax_error_names_its_line_and_column() {
    let e = errors("[[target]]\nname = \n");
    assert_eq!(e.len(), 1);
    assert!(e[0].starts_with("memgate.toml:2:"), "{e:?}");
}

#[test]
fn a_snapshot_pattern_that_matches_nothing_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[[target]]\nname = \"t\"\nsnapshots = \"snaps/*.pickle\"\n";
    let e = parse(text, "memgate.toml", dir.path(), true).unwrap_err();
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].loc.line, 3);
    assert!(
        e[0].message
            .contains("snaps/*.pickle: the pattern matches no file"),
        "{}",
        e[0]
    );
}

#[test]
fn an_unknown_table_is_reported_once_with_its_body_and_subtables_ignored() {
    let e = errors(
        "[[target]]\nname = 3\n[target.budgett]\nx = 1\n[target.budgett.y]\nz = 2\n[target.budget]\noom-events = -1\n",
    );
    assert_eq!(e.len(), 3, "{e:#?}");
    assert!(e[0].starts_with("memgate.toml:2:8: `target.name`: must be a string"));
    assert!(e[1].starts_with("memgate.toml:3:9: unknown key `budgett` in [[target]]"));
    assert!(e[2].starts_with("memgate.toml:8:14: `target.budget.oom-events`: -1 is negative"));
}

#[test]
fn serde_type_errors_name_what_the_file_should_hold() {
    let e = errors("[target]\nname = \"x\"\n");
    assert_eq!(
        e,
        ["memgate.toml:1:1: invalid type: map, expected an array of tables ([[target]])"]
    );
}

/// Six lines per target; `extra` is appended to the last one.
fn many_targets(n: usize, extra: &str) -> String {
    let mut text: String = (0..n)
        .map(|i| {
            format!(
                "[[target]]\nname = \"t{i}\"\n[target.budget]\noverall-peak = \"{i} MiB\"\n\
                 [target.tolerance]\nallocated-peak = \"2%\"\n"
            )
        })
        .collect();
    text.push_str(extra);
    text
}

#[test]
fn a_budget_of_fifty_thousand_targets_validates_every_target() {
    // The time it takes is measured by bench/budget.sh, not asserted here.
    let b = parse(
        &many_targets(50_000, ""),
        "memgate.toml",
        Path::new(""),
        false,
    )
    .unwrap();
    assert_eq!(b.targets.len(), 50_000);
    assert_eq!(b.targets[49_999].loc.line, 6 * 49_999 + 2);
    assert_eq!(
        b.targets[49_999].budget[&Figure::OverallPeak].loc.line,
        6 * 49_999 + 4
    );
}

#[test]
fn errors_deep_in_a_long_file_name_their_exact_line_and_column() {
    let e = errors(&many_targets(1_000, "colour = 1\nrules = \"é\" \n"));
    assert_eq!(
        e,
        [
            "memgate.toml:6001:1: unknown key `colour` in [target.tolerance]; expected one of: phase, dynamic-peak, static-memory, overall-peak, allocated-peak, reserved-peak, oom-events, alloc-events, trace-entries, steady-state-peak, leak-per-iteration, cached-free-at-reserved-peak, segment-allocs, segment-frees, segment-allocs-with-free-cache, host-allocated-peak, host-reserved-peak, host-live-at-device-peak",
            "memgate.toml:6002:1: unknown key `rules` in [target.tolerance]; expected one of: phase, dynamic-peak, static-memory, overall-peak, allocated-peak, reserved-peak, oom-events, alloc-events, trace-entries, steady-state-peak, leak-per-iteration, cached-free-at-reserved-peak, segment-allocs, segment-frees, segment-allocs-with-free-cache, host-allocated-peak, host-reserved-peak, host-live-at-device-peak",
        ]
    );
    // Columns count characters: `é` is two bytes, one column; `+` is at 20.
    let e = errors(&many_targets(3, "dynamic-peak = \"é\" + 1\n"));
    assert!(e[0].starts_with("memgate.toml:19:20: "), "{e:?}");
}

#[test]
fn a_near_miss_key_says_the_key_meant_and_a_stranger_lists_them_all() {
    let e = errors(
        "[[target]]\nname = \"t\"\nsnapshots = \"*.none\"\n[target.budget]\noveral-peak = \"1 GiB\"\nbogus = 1\n",
    );
    let key = |k: &str| {
        e.iter()
            .find(|l| l.contains(k))
            .unwrap_or_else(|| panic!("{e:#?}"))
    };
    assert_eq!(
        key("overal-peak"),
        "memgate.toml:5:1: unknown key `overal-peak` in [target.budget]; did you mean `overall-peak`?"
    );
    assert!(key("bogus").contains("expected one of: category, phase, pool, dynamic-peak"));
}

#[test]
fn defaults_figures_are_checked_one_by_one_where_each_is_written() {
    let e = errors(
        "[defaults]\nfigures = [\"allocated-peak\", \"overall-peek\", 3, \"allocated-peak\"]\n\
         [[target]]\nname = \"t\"\n",
    );
    assert_eq!(e.len(), 3, "{e:#?}");
    assert_eq!(
        e[0],
        "memgate.toml:2:30: `defaults.figures`: unknown figure `overall-peek`; did you mean `overall-peak`?"
    );
    assert!(e[1].starts_with("memgate.toml:2:46: `defaults.figures`: must be a figure id"));
    assert!(
        e[2].starts_with("memgate.toml:2:49: `defaults.figures`: `allocated-peak` is listed twice")
    );
    assert!(
        errors("[defaults]\nfigures = \"allocated-peak\"\n[[target]]\nname = \"t\"\n")[0]
            .contains("must be a list of figure ids")
    );
}

#[test]
fn defaults_figures_are_kept_in_report_order_and_default_to_the_gated_ones() {
    let text =
        "[defaults]\nfigures = [\"oom-events\", \"allocated-peak\"]\n[[target]]\nname = \"t\"\n";
    let b = parse(text, "memgate.toml", Path::new(""), false).unwrap();
    assert_eq!(b.figures, [Figure::AllocatedPeak, Figure::OomEvents]);
    let d = parse("[[target]]\nname = \"t\"\n", "m.toml", Path::new(""), false).unwrap();
    assert_eq!(d.figures, Budget::default_figures());
    assert!(d.figures.contains(&Figure::DynamicPeak) && !d.figures.contains(&Figure::AllocEvents));
}

#[test]
fn require_trace_is_a_boolean_that_defaults_to_true() {
    let b = parse("[[target]]\nname = \"t\"\n", "m.toml", Path::new(""), false).unwrap();
    assert!(b.targets[0].require_trace);
    let off = "[[target]]\nname = \"t\"\nrequire-trace = false\n";
    let b = parse(off, "m.toml", Path::new(""), false).unwrap();
    assert!(!b.targets[0].require_trace);
    assert_eq!(b.targets[0].require_trace_loc.as_ref().unwrap().line, 3);
    let e = errors("[[target]]\nname = \"t\"\nrequire-trace = \"no\"\n");
    assert_eq!(
        e,
        ["memgate.toml:3:17: `target.require-trace`: must be true or false, not string"]
    );
}

#[test]
fn a_device_index_out_of_range_names_the_real_limit() {
    let e = errors("[[target]]\nname = \"t\"\ndevice = 99999999999\n");
    assert_eq!(
        e,
        ["memgate.toml:3:10: `target.device`: must be a device index, an integer from 0 to 4294967295"]
    );
}

#[test]
fn a_budget_file_that_is_not_utf8_is_placed_at_its_first_invalid_byte() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("memgate.toml");
    std::fs::write(&p, b"[[target]]\nname = \"t\xc3\xa9\xff\"\n").unwrap();
    let e = validate_file(&p, false).errors;
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].loc.line, e[0].loc.col), (2, 11));
    assert!(e[0].message.starts_with("not UTF-8: byte 0xff"), "{}", e[0]);
}

#[test]
fn a_budget_file_that_is_a_device_or_too_large_is_refused_unread() {
    let e = validate_file(Path::new("/dev/zero"), false).errors;
    assert_eq!(
        e[0].to_string(),
        "/dev/zero: is a character device, not a regular file"
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("memgate.toml");
    std::fs::File::create(&p).unwrap().set_len(1 << 30).unwrap();
    let e = validate_file(&p, false).errors;
    assert!(
        e[0].message
            .contains("larger than the 16 MiB a budget file may be"),
        "{}",
        e[0]
    );
}

#[test]
fn same_environment_is_a_boolean_that_defaults_to_false_in_the_file_and_in_data() {
    let read = |text: &str| parse(text, "m.toml", Path::new(""), false).unwrap();
    let b = read("[[target]]\nname = \"t\"\n");
    assert!(!b.targets[0].same_environment);
    let on = "[[target]]\nname = \"t\"\nsame-environment = true\n";
    assert!(read(on).targets[0].same_environment);
    let e = errors("[[target]]\nname = \"t\"\nsame-environment = 1\n");
    assert_eq!(
        e,
        ["memgate.toml:3:20: `target.same-environment`: must be true or false, not integer"]
    );
    // The budget given as data (the Python marker, `check(budget=…)`)
    // reads it too.
    let data = serde_json::json!({"target": [{"name": "t", "same-environment": true}]});
    let from_data = |data: &serde_json::Value| {
        let v = super::budget_from_data(data, "marker", Path::new(""), false);
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        v.budget.unwrap()
    };
    assert!(from_data(&data).targets[0].same_environment);
}

#[test]
fn device_memory_outside_allocator_and_shares_are_read_in_the_file_and_in_data() {
    let read = |text: &str| parse(text, "m.toml", Path::new(""), false).unwrap();
    let text = "[defaults]\ndevice-memory = \"80 GiB\"\noutside-allocator = \"2 GiB\"\n\
                [[target]]\nname = \"t\"\ndevice-memory = \"64 GiB\"\n\
                [target.budget]\nreserved-peak = { limit = \"92% of device\", level = \"warn\" }\n";
    let b = read(text);
    assert_eq!(b.device_memory, Some(80 << 30));
    assert_eq!(b.outside_allocator, Some(2 << 30));
    assert_eq!(b.targets[0].device_memory, Some(64 << 30));
    let limit = &b.targets[0].budget[&Figure::ReservedPeak];
    assert_eq!(limit.share_of_device, Some(92.0));
    assert_eq!(limit.level, Level::Warn);
    // The budget given as data reads the same keys.
    let data = serde_json::json!({
        "defaults": {"device-memory": "80 GiB", "outside-allocator": "2 GiB"},
        "target": [{"name": "t", "device-memory": "64 GiB",
                    "budget": {"allocated-peak": "95% of device"}}]
    });
    let v = super::budget_from_data(&data, "marker", Path::new(""), false);
    assert!(v.errors.is_empty(), "{:?}", v.errors);
    let b = v.budget.unwrap();
    assert_eq!(
        (b.device_memory, b.outside_allocator),
        (Some(80 << 30), Some(2 << 30))
    );
    assert_eq!(b.targets[0].device_memory, Some(64 << 30));
    let share = b.targets[0].budget[&Figure::AllocatedPeak].share_of_device;
    assert_eq!(share, Some(95.0));
    // A share is for byte figures only; a bad one says why where it is.
    let e = errors("[[target]]\nname = \"t\"\n[target.budget]\noom-events = \"50% of device\"\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("memgate.toml:4:14: `target.budget.oom-events`"),
        "{e:?}"
    );
    let e = errors("[defaults]\ndevice-memory = true\n[[target]]\nname = \"t\"\n");
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].starts_with("memgate.toml:2:17: `defaults.device-memory`"),
        "{e:?}"
    );
}

#[test]
fn sites_values_are_checked_each_at_its_own_position() {
    let text = "[sites]\nproject-root = \"/\"\nuser-code = [\"app/*\", 5, \"a/[\"]\nbogus = 1\n\n\
                [[target]]\nname = \"t\"\n";
    let e = errors(text);
    assert!(
        e.iter()
            .any(|m| m.starts_with("memgate.toml:4:1:")
                && m.contains("unknown key `bogus` in [sites]")),
        "{e:?}"
    );
    // Unknown keys stop validation: the values are checked without one.
    let e = errors(&text.replace("bogus = 1\n", ""));
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(
        e[0].starts_with("memgate.toml:2:16: `sites.project-root`:")
            && e[0].contains("names no folder"),
        "{e:?}"
    );
    assert!(
        e[1].starts_with("memgate.toml:3:23: `sites.user-code`:") && e[1].contains("not integer"),
        "{e:?}"
    );
    assert!(
        e[2].starts_with("memgate.toml:3:26: `sites.user-code`:")
            && e[2].contains("\"a/[\" is not a glob"),
        "{e:?}"
    );
    let ok = parse(
        "[sites]\nproject-root = \"nanogpt\"\nuser-code = [\"nanogpt/*\"]\n[[target]]\nname = \"t\"\n",
        "memgate.toml",
        Path::new(""),
        false,
    )
    .unwrap();
    assert_eq!(ok.sites.project_root.as_deref(), Some("nanogpt"));
    assert_eq!(ok.sites.user_code, ["nanogpt/*"]);
}
