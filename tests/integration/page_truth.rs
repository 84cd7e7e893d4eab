//! The page never contradicts the terminal: a trace that started mid-run
//! is said to give lower bounds on the `profile` and `diff` pages as in
//! the text, the Peaks table places every peak and OOM in the phase and
//! iteration `memgate peak` names (on every real fixture), and the check
//! page hides the zero-byte category rows the Markdown hides.

use crate::common;

use common::{memgate, real_fixture, Workdir};
use std::path::Path;

/// The sentence every report says of such a trace (docs/figures.md#lower-bounds).
const LOWER_BOUNDS: &str =
    "the trace started mid-run (ring buffer wrapped), so its figures are lower bounds";

fn stdout(args: &[&str]) -> String {
    let out = memgate().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "memgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn write_wrapped(w: &Workdir, name: &str) -> String {
    let path = w.path(name);
    let snap = crate::lower_bounds::wrapped_snapshot();
    std::fs::write(&path, serde_json::to_string(&snap).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn the_profile_page_of_a_trace_that_started_mid_run_says_lower_bounds_as_the_terminal_does() {
    let w = Workdir::new("");
    let snap = write_wrapped(&w, "wrapped.json");
    let page = w.path("page.html");
    let text = stdout(&["profile", &snap, "--html", page.to_str().unwrap()]);
    assert!(text.contains(&format!("note: {LOWER_BOUNDS}")), "{text}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!(
            "<p class=\"warning lower-bound\">note: {LOWER_BOUNDS}</p>"
        )),
        "no lower-bound note on the page"
    );
}

#[test]
fn the_diff_page_and_text_say_which_side_started_mid_run() {
    let w = Workdir::new("");
    let wrapped = write_wrapped(&w, "wrapped.json");
    let whole = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/snapshots/rank0.pickle");
    let whole = whole.to_str().unwrap();
    let page = w.path("diff.html");
    let page = page.to_str().unwrap();
    for (base, new, side) in [
        (whole, wrapped.as_str(), "new"),
        (wrapped.as_str(), whole, "base"),
    ] {
        let text = stdout(&["diff", base, new, "--html", page]);
        let note = format!("{side}: {LOWER_BOUNDS}");
        assert!(text.contains(&format!("    note: {note}\n")), "{text}");
        let other = if side == "new" { "base" } else { "new" };
        assert!(
            !text.contains(&format!("{other}: {LOWER_BOUNDS}")),
            "{text}"
        );
        let html = std::fs::read_to_string(page).unwrap();
        assert!(
            html.contains(&format!(
                "<p class=\"warning lower-bound\">note: {note}</p>"
            )),
            "{side}: no lower-bound note on the diff page"
        );
        assert!(!html.contains(&format!("{other}: {LOWER_BOUNDS}")));
    }
    // Two whole traces: no note anywhere.
    let text = stdout(&["diff", whole, whole, "--html", page]);
    assert!(!text.contains(LOWER_BOUNDS), "{text}");
    assert!(!std::fs::read_to_string(page)
        .unwrap()
        .contains(LOWER_BOUNDS));
}

#[test]
fn the_check_page_hides_zero_byte_category_rows_and_says_how_many_as_the_markdown() {
    let w = Workdir::new(
        "[defaults]\nfigures = [\"allocated-peak\"]\n\
         [[target]]\nname = \"train\"\nsnapshots = \"snaps/*.json\"\n\
         [target.budget]\nallocated-peak = \"90 MiB\"\n",
    );
    write_wrapped(&w, "snaps/rank0.json");
    let out = w
        .check()
        .args(["--html", "page.html", "--markdown", "report.md"])
        .output()
        .unwrap();
    // The lower bound (99 MiB) is over the budget: a fail, reports written.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let md = w.read("report.md");
    let hidden = md
        .lines()
        .find_map(|l| {
            l.strip_prefix('_')?
                .split(" zero-byte")
                .next()?
                .parse::<usize>()
                .ok()
        })
        .expect("the Markdown hides some zero-byte rows");
    let html = w.read("page.html");
    let table = html
        .split("<caption>Categories at the allocated peak</caption>")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap();
    for row in table.split("<tr>").skip(2) {
        assert!(
            !row.contains("<td>–</td><td>0 B</td>"),
            "a zero-byte row on the page: {row}"
        );
    }
    let rows = if hidden == 1 { "row" } else { "rows" };
    assert!(
        html.contains(&format!("{hidden} zero-byte category {rows} hidden.")),
        "the page does not say the {hidden} rows the Markdown hides"
    );
}

/// One peak's or OOM's phase and iteration as `memgate peak` prints them
/// (`None`: the line names no place).
type Placed = (String, Option<(String, Option<String>)>);

/// Per device (in print order), each peak line's figure and place.
fn terminal_places(text: &str) -> Vec<Vec<Placed>> {
    let mut out: Vec<Vec<Placed>> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if line.starts_with("  dev") && !line.starts_with("   ") {
            out.push(Vec::new());
            continue;
        }
        let figure = if t.starts_with("Total Peak Dynamic") {
            "dynamic-peak"
        } else if t.starts_with("allocated peak (") {
            "allocated-peak"
        } else if t.starts_with("reserved peak (") {
            "reserved-peak"
        } else if t.starts_with("OOM ") && t.contains(" of ") {
            "oom"
        } else {
            continue;
        };
        let place = t.rsplit_once("  [").and_then(|(_, p)| {
            let p = p.strip_suffix(']')?;
            let (_, rest) = p.split_once("phase: ")?;
            Some(match rest.rsplit_once(", iteration ") {
                Some((phase, k)) => (phase.to_string(), Some(k.to_string())),
                None => (rest.to_string(), None),
            })
        });
        out.last_mut()
            .expect("a device line first")
            .push((figure.to_string(), place));
    }
    out
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Per device section of a profile page, each Peaks row's figure, phase
/// and iteration.
fn page_places(html: &str) -> Vec<Vec<(String, String, String)>> {
    html.split("<section id=\"device-")
        .skip(1)
        .map(|section| {
            let table = section.split("<table class=\"peaks\">").nth(1).unwrap();
            let table = table.split("</table>").next().unwrap();
            table
                .split("<tr data-figure=\"")
                .skip(1)
                .map(|row| {
                    let figure = row.split('"').next().unwrap().to_string();
                    let cells: Vec<&str> = row
                        .split("<td>")
                        .skip(1)
                        .map(|c| c.split("</td>").next().unwrap())
                        .collect();
                    (figure, unescape(cells[5]), unescape(cells[6]))
                })
                .collect()
        })
        .collect()
}

#[test]
fn the_peaks_table_names_the_phase_and_iteration_the_terminal_names_for_every_peak_of_every_real_fixture(
) {
    let Some(dir) = real_fixture("", "the Peaks table against the terminal") else {
        return;
    };
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pickle" || x == "pkl"))
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    let w = Workdir::new("");
    let page = w.path("page.html");
    let mut args = vec!["profile", "--html", page.to_str().unwrap()];
    args.extend(files.iter().map(String::as_str));
    stdout(&args);
    let pages = page_places(&std::fs::read_to_string(&page).unwrap());
    let mut args = vec!["peak"];
    args.extend(files.iter().map(String::as_str));
    let terminal = terminal_places(&stdout(&args));
    assert_eq!(
        pages.len(),
        terminal.len(),
        "devices on the page and in the text"
    );
    let mut placed = 0;
    for (k, (page, text)) in pages.iter().zip(&terminal).enumerate() {
        let rows: Vec<&String> = page.iter().map(|r| &r.0).collect();
        let lines: Vec<&String> = text.iter().map(|l| &l.0).collect();
        let mut sorted_rows = rows.clone();
        sorted_rows.sort();
        let mut sorted_lines = lines.clone();
        sorted_lines.sort();
        assert_eq!(sorted_rows, sorted_lines, "device {k}: the peaks listed");
        for (figure, place) in text {
            let (_, phase, iteration) = page.iter().find(|r| &r.0 == figure).unwrap();
            match place {
                Some((p, k_)) => {
                    placed += 1;
                    assert_eq!(phase, p, "device {k} {figure}: the page's phase");
                    assert_eq!(
                        iteration,
                        k_.as_deref().unwrap_or("–"),
                        "device {k} {figure}: the page's iteration"
                    );
                }
                None => assert_eq!(phase, "–", "device {k} {figure}: a place the text lacks"),
            }
        }
    }
    assert!(placed >= 30, "only {placed} places compared");
}
