//! Mosaic's flag names on memgate's commands: a command line written for
//! Mosaic's tools is answered with memgate's equivalent (docs/from-mosaic.md)
//! in place of clap's generic tip (`use '-- --snapshot'`, or a flag that
//! merely looks alike).

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::CommandFactory;

/// `e` with a tip naming memgate's equivalent when the argument clap did
/// not know is one of Mosaic's flags; `e` unchanged otherwise.
pub(super) fn translate(mut e: clap::Error, argv: &[OsString]) -> clap::Error {
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(invalid)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let flag = invalid.split('=').next().unwrap_or_default().to_owned();
    // The line's own values go into the tip: escaped, as every name is.
    let args: Vec<String> = argv
        .iter()
        .map(|a| crate::report::escape::terminal(&a.to_string_lossy()).into_owned())
        .collect();
    let Some(tip) = tip(&flag, &args) else {
        return e;
    };
    // Applied before the tip is set: the usage of the subcommand, as clap's.
    if e.get(ContextKind::Usage).is_none() {
        e = e.with_cmd(&super::Cli::command());
    }
    e.remove(ContextKind::SuggestedArg);
    e.remove(ContextKind::SuggestedValue);
    e.insert(
        ContextKind::Suggested,
        ContextValue::StyledStrs(vec![
            format!("{flag} is Mosaic's; memgate's is {tip}").into()
        ]),
    );
    e
}

/// memgate's equivalent of Mosaic's `flag` on the command line `args`
/// (`argv` with the program name), written out with the user's own values
/// where the line holds them.
fn tip(flag: &str, args: &[String]) -> Option<String> {
    let command = args.get(1).map_or("peak", String::as_str);
    // `--snapshot X`, else the command's first argument when it is not a flag.
    let snapshot = value_of(args, &["--snapshot"])
        .or_else(|| {
            args.get(2)
                .map(String::as_str)
                .filter(|a| !a.starts_with('-'))
        })
        .unwrap_or("SNAPSHOT");
    let tip = match flag {
        "--snapshot" => format!("the snapshot as an argument: `memgate {command} {snapshot}`"),
        "--snapshot_base" | "--snapshot-base" | "--base-snapshot" => {
            let base = value_of(args, &[flag]).unwrap_or("BASE");
            format!("the first argument of diff: `memgate diff {base} NEW`")
        }
        "--snapshot_diff" | "--snapshot-diff" | "--diff-snapshot" => {
            let new = value_of(args, &[flag]).unwrap_or("NEW");
            format!("the second argument of diff: `memgate diff BASE {new}`")
        }
        "--out-path" | "--out_path" => {
            let out = value_of(args, &[flag]).unwrap_or("OUT.html");
            format!("--html: `memgate profile {snapshot} --html {out}`")
        }
        "--profile" => profile(value_of(args, &[flag]), snapshot),
        "--custom-profile" | "--custom_profile" => {
            format!("--categories: `memgate profile {snapshot} --categories '{{\"name\": \"regex\"}}'`")
        }
        "--preserve-allocation-order" => format!(
            "none: the page stacks groups, not allocations; `memgate profile {snapshot} --html OUT.html --x entries` draws them in allocation order"
        ),
        "--allocation" | "--action" => format!(
            "--window: `memgate peak {snapshot} --window ..ADDR_N:ACTION` (an allocation event in Mosaic's notation)"
        ),
        "--start_time" | "--end_time" => {
            format!("--window: `memgate peak {snapshot} --window FROM..TO` (time_us, +2.5s, #entry)")
        }
        "--print_stack" | "--print-stack" => {
            format!("the default: `memgate peak {snapshot}` lists the live stacks (--top N)")
        }
        "--annotation" => format!("on phases: `memgate phases {snapshot} --annotation SUBSTR`"),
        "--output_file" | "--output-file" => {
            format!("--format json: `memgate {command} {snapshot} --format json > OUT.json`")
        }
        _ => return None,
    };
    Some(tip)
}

/// Mosaic's `--profile TYPE` as a `memgate profile` command line.
fn profile(kind: Option<&str>, snapshot: &str) -> String {
    let extra = match kind {
        Some("annotations") => " --group-by annotation",
        Some("compile_context") => " --group-by compile-context",
        Some("custom") => " --categories '{\"name\": \"regex\"}'",
        _ => "",
    };
    format!("a command of its own: `memgate profile {snapshot}{extra}`")
}

/// The value given to the first of `flags` on the line: `--flag VALUE` or
/// `--flag=VALUE`.
fn value_of<'a>(args: &'a [String], flags: &[&str]) -> Option<&'a str> {
    args.iter().enumerate().find_map(|(i, a)| {
        flags.iter().find_map(|f| {
            if a == f {
                args.get(i + 1)
                    .map(String::as_str)
                    .filter(|v| !v.starts_with("--"))
            } else {
                a.strip_prefix(f)?.strip_prefix('=')
            }
        })
    })
}
