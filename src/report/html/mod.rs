//! `memgate profile --html`: one self-contained page. The markup (figures,
//! a table of the peaks, the category and site tables) is written here; the
//! charts are drawn by a small handwritten script (`page.js`) from one JSON
//! block (`data.rs`). Nothing is fetched: the script and the stylesheet are
//! inline and the page's Content-Security-Policy allows exactly those two
//! (by their SHA-256) and nothing else.

mod badge;
mod check;
mod data;
mod diff;
mod overlay;
mod palette;
mod peaks;
mod pools;
mod ranks;

pub use super::exporter::Charted;
pub(crate) use check::Page;
pub use check::{render_check, render_check_error};
pub use data::XAxis;
pub use diff::{render_diff, DiffSide};
use peaks::peaks_table;

use crate::vocab::{Device, NoStory};
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::escape::{html as escape, json_in_script};
use crate::analysis::{DeviceReport, SiteBytes, Timeline};
use crate::document::ProfileDocument;
use crate::units::Bytes;

/// Most buckets of entries per device (each drawn as its low and its
/// high); keeps a 2M-entry trace's page small.
pub(crate) const MAX_POINTS: usize = 800;

/// Samples per device when a page charts `files` files (`check --html`):
/// [`MAX_POINTS`] for up to 16, fewer beyond (at least 200), so a
/// 64-rank run's page stays within a few megabytes.
pub(crate) fn points_for(files: usize) -> usize {
    (MAX_POINTS * 16 / files.max(1)).clamp(200, MAX_POINTS)
}

const SCRIPT: &str = include_str!("page.js");
const STYLE: &str = include_str!("page.css");

/// One device's section of the page.
struct Section<'a> {
    path: &'a str,
    report: &'a DeviceReport,
    timeline: &'a Timeline,
}

/// Standard base64 of `bytes` (for the policy's hashes; 32 bytes each).
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ABC[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `'sha256-…'`: a CSP source matching exactly this inline text.
fn csp_hash(text: &str) -> String {
    format!("'sha256-{}'", base64(&Sha256::digest(text.as_bytes())))
}

/// The page's policy: no source of any kind but the page's own script and
/// stylesheet; the data block is not script (`application/json`).
pub(crate) fn content_security_policy() -> String {
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src 'none'; base-uri 'none'; \
         form-action 'none'",
        csp_hash(SCRIPT),
        csp_hash(STYLE)
    )
}

fn sites(s: &Section<'_>) -> String {
    let mut out = String::new();
    if s.report.sites_at_peak.is_empty() {
        return out;
    }
    out.push_str(
        "<table><caption>Allocation sites at the allocated peak</caption><tr><th>site</th>\
         <th>bytes</th><th>allocations</th></tr>\n",
    );
    for site in &s.report.sites_at_peak {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            site_cell(site),
            Bytes(site.bytes),
            site.count
        );
    }
    out.push_str("</table>\n");
    let shown = s.report.sites_at_peak.iter().map(|x| x.site.as_str());
    out.push_str(&legend(shown));
    out
}

/// One note per name of memory with no story among `shown`, saying what
/// it is (docs/figures.md#memory-with-no-story).
pub(crate) fn legend<'a>(shown: impl IntoIterator<Item = &'a str>) -> String {
    NoStory::among(shown)
        .iter()
        .map(|n| {
            format!(
                "<p class=\"note\"><code>{}</code>: {}</p>\n",
                n.id(),
                escape(n.meaning())
            )
        })
        .collect()
}

fn table(s: &Section<'_>) -> String {
    let c = &s.report.categories;
    let colours = palette::colours(&s.timeline.categories);
    let mut out = String::from(
        "<table><caption>By category</caption><tr><th>category</th><th>at allocated peak</th>\
         <th>at dynamic peak</th><th>own peak</th></tr>\n",
    );
    for (k, name) in s.timeline.categories.iter().enumerate() {
        let get = |m: &std::collections::BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "<tr><td><svg class=\"sw\" viewBox=\"0 0 10 10\" aria-hidden=\"true\"><rect \
             width=\"10\" height=\"10\" fill=\"{}\"/></svg>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            colours[k],
            escape(name),
            Bytes(get(&c.at_allocated_peak)),
            Bytes(get(&c.at_dynamic_peak)),
            Bytes(get(&c.peaks))
        );
    }
    out.push_str("</table>\n");
    let nonzero = |n: &&String| c.peaks.get(*n).is_some_and(|&b| b > 0);
    let shown = s.timeline.categories.iter().filter(nonzero);
    out.push_str(&legend(shown.map(String::as_str)));
    out
}

/// The page up to the first section.
fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<style>{STYLE}</style></head><body>\n<h1>{title}</h1>\n",
        content_security_policy()
    )
}

/// The element chart `k` of the page data is drawn into.
fn chart(k: usize, path: &str, device: Device) -> String {
    format!(
        "<figure class=\"chart\" data-index=\"{k}\" data-snapshot=\"{}\" \
         data-device=\"{device}\"></figure>\n",
        escape(path)
    )
}

/// A site's name, escaped, with its file as recorded in a title (the site
/// names the file portably: docs/figures.md#sites).
fn site_cell(site: &SiteBytes) -> String {
    match &site.recorded {
        Some(file) => format!(
            "<span class=\"folded\" title=\"{}\">{}</span>",
            escape(file),
            escape(&site.site)
        ),
        None => folded_path(&site.site),
    }
}

/// `text` escaped for HTML with a `site-packages/` (or `dist-packages/`)
/// path's prefix folded to `…/site-packages/`, the whole text in a title
/// when something was folded.
pub(crate) fn folded_path(text: &str) -> String {
    let Some(folded) = fold_packages(text) else {
        return escape(text).into_owned();
    };
    format!(
        "<span class=\"folded\" title=\"{}\">{}</span>",
        escape(text),
        escape(&folded)
    )
}

/// `text` with each path's prefix before `site-packages/` or
/// `dist-packages/` cut to `…/`; `None` when there is none.
fn fold_packages(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut folded = false;
    while let Some(at) = ["site-packages/", "dist-packages/", "site-packages\\"]
        .iter()
        .filter_map(|m| rest.find(m))
        .min()
    {
        // The path starts after the last space or `(` before the marker.
        let start = rest[..at].rfind([' ', '(']).map_or(0, |k| k + 1);
        out.push_str(&rest[..start]);
        if at > start {
            out.push_str("…/");
            folded = true;
        }
        out.push_str(&rest[at..at + "site-packages/".len()]);
        rest = &rest[at + "site-packages/".len()..];
    }
    out.push_str(rest);
    folded.then_some(out)
}

/// The page's end: the data block and the script.
fn foot(out: &mut String, page: &data::PageData<'_>) {
    let json = serde_json::to_string(page).expect("page data serializes");
    let _ = write!(
        out,
        "<p class=\"note\">Written by memgate. Bytes in binary units. The charts need the \
         page's script; the tables hold the same figures.</p>\n\
         <script type=\"application/json\" id=\"memgate-data\">{}</script>\n\
         <script>{SCRIPT}</script>\n</body></html>\n",
        json_in_script(&json)
    );
}

/// `devN` as a heading shows it: never broken across lines (a long path
/// before it may break anywhere).
pub(crate) fn device_name(device: Device) -> String {
    format!("<span class=\"dev\">dev{device}</span>")
}

/// The page's note on figures that are only lower bounds (`notes`: each
/// the sentence every report says, e.g. [`super::LOWER_BOUNDS`]).
pub(crate) fn lower_bound_notes<S: AsRef<str>>(notes: &[S]) -> String {
    notes
        .iter()
        .map(|n| {
            format!(
                "<p class=\"warning lower-bound\">note: {}</p>\n",
                escape(n.as_ref())
            )
        })
        .collect()
}

/// A device's heading and figures line.
fn device_heading(out: &mut String, k: usize, s: &Section<'_>) {
    let f = &s.report.figures;
    let _ = writeln!(
        out,
        "<section id=\"device-{k}\">\n<h2>{} — {}</h2>\n<p>allocated peak {} · dynamic \
         peak {} · reserved peak {} · rules {} · {} trace entries, {} samples drawn (the \
         lowest and the highest moment of each stretch of entries, and every peak's own \
         moment)</p>",
        escape(s.path),
        device_name(s.report.device),
        Bytes(f.allocated_peak),
        Bytes(f.dynamic_peak),
        Bytes(f.reserved_peak),
        escape(&s.report.categories.rules),
        f.trace_entries,
        s.timeline.points.len()
    );
}

/// The pinned host figures under a device's heading, when the snapshot
/// records host memory (docs/figures.md#pinned-host-memory).
fn host_line(out: &mut String, s: &Section<'_>) {
    let Some(h) = s.report.host else { return };
    let live = h.live_at_device_peak.map_or_else(String::new, |b| {
        format!(" · live at this device's allocated peak {}", Bytes(b))
    });
    let only = if h.only {
        super::host::HOST_ONLY
    } else {
        "pinned host memory"
    };
    let _ = writeln!(
        out,
        "<p class=\"host\">{only}: allocated peak {} · reserved peak {}{live} · {} host trace \
         entries</p>",
        Bytes(h.allocated_peak),
        Bytes(h.reserved_peak),
        h.trace_entries
    );
}

/// The whole page: the profile document, with `timelines[i][j]` the
/// timeline of device `j` of snapshot `i`.
pub fn render(doc: &ProfileDocument, timelines: &[Vec<Timeline>], x: XAxis) -> String {
    let sections: Vec<Section<'_>> = doc
        .snapshots
        .iter()
        .zip(timelines)
        .flat_map(|(a, ts)| {
            a.devices.iter().zip(ts).map(|(d, t)| Section {
                path: &a.path,
                report: d,
                timeline: t,
            })
        })
        .collect();
    let page = data::PageData {
        x: x.id(),
        devices: sections
            .iter()
            .map(|s| data::DeviceData::new(s.path, s.report, s.timeline))
            .collect(),
    };
    let mut out = head("memgate profile");
    for a in &doc.snapshots {
        if a.devices.is_empty() {
            out.push_str(&format!(
                "<p class=\"note no-device\">{}: {}</p>\n",
                escape(&a.path),
                super::NO_DEVICE
            ));
        }
        for e in &a.window_not_placed {
            let line = super::not_placed_line(e, |s| escape(s).to_string());
            out.push_str(&format!(
                "<p class=\"note\">{}: {line}</p>\n",
                escape(&a.path)
            ));
        }
    }
    if sections.len() > 1 {
        summary(&mut out, &sections);
    }
    for (k, s) in sections.iter().enumerate() {
        device_heading(&mut out, k, s);
        if !s.report.trace_complete {
            out.push_str(&lower_bound_notes(&[super::LOWER_BOUNDS]));
        }
        host_line(&mut out, s);
        out.push_str(&chart(k, s.path, s.report.device));
        out.push_str(&peaks_table(s));
        out.push_str(&table(s));
        out.push_str(&pools::pools_table(&s.report.pools));
        out.push_str(&sites(s));
        out.push_str("</section>\n");
    }
    foot(&mut out, &page);
    out
}

/// The table at the top of a page of many devices: each snapshot and
/// device with its peaks, linking to its section.
fn summary(out: &mut String, sections: &[Section<'_>]) {
    out.push_str(
        "<table class=\"summary\"><caption>Snapshots and devices</caption><tr>\
         <th>snapshot</th><th>device</th><th>allocated peak</th><th>reserved peak</th>\
         <th>trace entries</th></tr>\n",
    );
    for (k, s) in sections.iter().enumerate() {
        let f = &s.report.figures;
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#device-{k}\">{}</a></td><td>dev{}</td><td>{}</td><td>{}</td>\
             <td>{}</td></tr>",
            escape(s.path),
            s.report.device,
            Bytes(f.allocated_peak),
            Bytes(f.reserved_peak),
            f.trace_entries
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn site_packages_prefixes_are_folded_and_the_full_path_kept_in_a_title() {
        assert_eq!(
            fold_packages("forward (/home/u/.venv/lib/python3.11/site-packages/torch/nn/x.py:5)")
                .as_deref(),
            Some("forward (…/site-packages/torch/nn/x.py:5)")
        );
        assert_eq!(
            fold_packages("/usr/lib/python3/dist-packages/a.py:1 b (/x/site-packages/c.py:2)")
                .as_deref(),
            Some("…/dist-packages/a.py:1 b (…/site-packages/c.py:2)")
        );
        assert_eq!(fold_packages("train.py:3"), None);
        assert_eq!(
            fold_packages("site-packages/a.py"),
            None,
            "nothing before it"
        );
        let html = folded_path("f (/v/site-packages/<b>.py:1)");
        assert!(
            html.contains("title=\"f (/v/site-packages/&lt;b&gt;.py:1)\""),
            "{html}"
        );
        assert!(
            html.contains(">f (…/site-packages/&lt;b&gt;.py:1)<"),
            "{html}"
        );
    }

    #[test]
    fn a_large_run_gets_fewer_samples_per_device_but_never_under_two_hundred() {
        assert_eq!(points_for(1), MAX_POINTS);
        assert_eq!(points_for(16), MAX_POINTS);
        assert_eq!(points_for(32), MAX_POINTS / 2);
        assert_eq!(points_for(128), 200);
    }

    #[test]
    fn base64_pads_like_the_standard_alphabet() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn the_policy_allows_exactly_the_inline_script_and_stylesheet() {
        let csp = content_security_policy();
        assert!(csp.starts_with("default-src 'none'; script-src 'sha256-"));
        assert!(!csp.contains("unsafe"));
        // echo -n "" | openssl dgst -sha256 -binary | base64
        assert_eq!(
            csp_hash(""),
            "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
        );
    }
}
