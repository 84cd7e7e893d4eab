//! Renderers of the [`Verdict`](crate::compare::Verdict) and of the analysis
//! [documents](crate::document): pure functions, one file per format or per
//! document; [`escape`] says how a name is written to each kind of sink.

pub mod diff;
pub mod document_json;
pub mod escape;
pub mod finding;
pub mod github;
pub mod html;
pub mod inspect;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod peak;
pub mod profile;
pub mod terminal;

use crate::compare::{DeviceVerdict, SiteRow, SnapshotVerdict};
use crate::units::{ByteDelta, Bytes};

/// Text safe for XML and terminals: ANSI escape sequences and control
/// characters (other than tab and newline) removed. Snapshot frames are
/// user data and may hold anything.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI `ESC [ … final`, or a two-character escape.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\t' | '\n' => out.push(c),
            '\r' => {}
            c if c.is_control() => {}
            // Not characters XML allows.
            '\u{fffe}' | '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// `rank0 dev0`: how a (snapshot, device) pair is named in every report.
pub fn case_label(s: &SnapshotVerdict, d: &DeviceVerdict) -> String {
    format!("{} dev{}", s.name, d.device)
}

/// The sites that grew most, one line each, for failure bodies.
pub fn top_growth(d: &DeviceVerdict, n: usize) -> Vec<String> {
    d.sites
        .iter()
        .filter(|s| s.growth() > 0)
        .take(n)
        .map(|s| format!("{} {}", ByteDelta(s.growth()), sanitize(&s.site)))
        .collect()
}

/// The top-sites listing one side of the site diff is made of.
pub fn site_listing(sites: &[SiteRow], side: impl Fn(&SiteRow) -> Option<u64>) -> String {
    let mut rows: Vec<(&str, u64)> = sites
        .iter()
        .filter_map(|s| side(s).map(|b| (s.site.as_str(), b)))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    rows.iter()
        .map(|(site, b)| format!("{:>12}  {}\n", Bytes(*b).to_string(), sanitize(site)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_removes_ansi_escapes_and_control_characters_but_keeps_text() {
        assert_eq!(
            sanitize("a\u{1b}[1;31mred\u{1b}[0m\u{7}\r\tb\n]]>\u{0}"),
            "ared\tb\n]]>"
        );
    }
}
