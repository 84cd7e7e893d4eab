//! Answers that fit a context window: a page of a list (`limit` and an
//! opaque `cursor`), and the size cap every answer is held under, cutting
//! the longest lists first and saying what was cut.

use serde_json::Value;

/// Every answer is held under this many bytes of JSON...
pub(crate) const ANSWER_CAP: usize = 64 * 1024;
/// ...but one that asked for the whole document (`detail: "full"`): the
/// CLI's JSON of a large real snapshot at the default page is 80–200 KB.
pub(crate) const FULL_CAP: usize = 256 * 1024;

/// The default page length, and the most a page may hold.
pub(crate) const DEFAULT_LIMIT: usize = 5;
pub(crate) const MAX_LIMIT: usize = 1000;
/// The fewest items per device a summary's default page shares out.
pub(crate) const MIN_SHARED_LIMIT: usize = 2;

/// Where a page starts and how long it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageAt {
    pub(crate) offset: usize,
    pub(crate) limit: usize,
}

impl PageAt {
    /// From a tool's `limit` and `cursor` (a cursor is what `next_cursor`
    /// of the previous page said).
    pub(crate) fn new(limit: Option<usize>, cursor: Option<&str>) -> Result<PageAt, String> {
        let limit = limit.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 || limit > MAX_LIMIT {
            return Err(format!("limit {limit}: give 1 to {MAX_LIMIT}"));
        }
        let offset = match cursor {
            None | Some("") => 0,
            Some(c) => c
                .strip_prefix("at:")
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| format!("cursor `{c}`: not a cursor this server gave"))?,
        };
        Ok(PageAt { offset, limit })
    }

    /// How many items to ask the analysis for: this page and one more (to
    /// know whether a next page exists).
    pub(crate) fn wanted(self) -> usize {
        self.offset.saturating_add(self.limit).saturating_add(1)
    }
}

/// One page of `items`: the items, and the cursor of the next page.
pub(crate) fn page<T: Clone>(items: &[T], at: PageAt) -> (Vec<T>, Option<String>) {
    let start = at.offset.min(items.len());
    let end = start.saturating_add(at.limit).min(items.len());
    let next = (end < items.len()).then(|| cursor(end));
    (items[start..end].to_vec(), next)
}

pub(crate) fn cursor(offset: usize) -> String {
    format!("at:{offset}")
}

fn size(v: &Value) -> usize {
    serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX)
}

/// The JSON pointer of the array in `v` whose text is longest, and its
/// length, among arrays of more than one item.
fn longest_array(v: &Value, at: &str, best: &mut Option<(String, usize)>) {
    match v {
        Value::Array(items) => {
            if items.len() > 1 {
                let n = size(v);
                if best.as_ref().is_none_or(|(_, b)| n > *b) {
                    *best = Some((at.to_string(), n));
                }
            }
            for (i, item) in items.iter().enumerate() {
                longest_array(item, &format!("{at}/{i}"), best);
            }
        }
        Value::Object(map) => {
            for (k, item) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                longest_array(item, &format!("{at}/{key}"), best);
            }
        }
        _ => {}
    }
}

/// Hold `answer` under `limit` bytes ([`ANSWER_CAP`] or [`FULL_CAP`]): halve the longest list until it
/// fits, and say in `cut` (an array in the answer) which lists lost how
/// many items. When no list is left to cut, `document` is dropped with a
/// note (never an answer over the cap).
pub(crate) fn cap(mut answer: Value, limit: usize) -> Value {
    let mut notes: Vec<String> = Vec::new();
    while size(&answer) > limit {
        let mut best = None;
        longest_array(&answer, "", &mut best);
        let Some((pointer, _)) = best else { break };
        if let Some(Value::Array(items)) = answer.pointer_mut(&pointer) {
            let before = items.len();
            items.truncate(before / 2);
            notes.push(format!(
                "{pointer}: {} of {before} items kept to stay under the {} KiB answer cap; ask \
                 with a smaller `limit`, page with `cursor`, or write the document with \
                 `document_to`",
                items.len(),
                limit / 1024
            ));
        }
    }
    if size(&answer) > limit {
        if let Some(map) = answer.as_object_mut() {
            map.insert("document".into(), Value::Null);
            notes.push(format!(
                "/document: left out, over the {} KiB answer cap even with its lists cut",
                limit / 1024
            ));
        }
    }
    if !notes.is_empty() {
        if let Some(map) = answer.as_object_mut() {
            map.insert("cut".into(), notes.into());
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pages_walk_the_list_once_and_end_without_a_cursor() {
        let items: Vec<u32> = (0..25).collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let at = PageAt::new(Some(10), cursor.as_deref()).unwrap();
            let (got, next) = page(&items, at);
            seen.extend(got);
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, items);
        assert_eq!(PageAt::new(Some(10), Some("at:20")).unwrap().wanted(), 31);
    }

    #[test]
    fn bad_limits_and_forged_cursors_are_refused() {
        assert!(PageAt::new(Some(0), None).is_err());
        assert!(PageAt::new(Some(MAX_LIMIT + 1), None).is_err());
        assert!(PageAt::new(None, Some("20")).is_err());
        assert!(PageAt::new(None, Some("at:-1")).is_err());
        let past = PageAt::new(Some(5), Some("at:99")).unwrap();
        assert_eq!(page(&[1, 2, 3], past), (vec![], None));
    }

    #[test]
    fn an_answer_over_the_cap_is_cut_with_a_note_and_a_small_one_is_untouched() {
        let small = json!({"document": {"sites": [1, 2, 3]}});
        assert_eq!(cap(small.clone(), ANSWER_CAP), small);
        let sites: Vec<Value> = (0..20_000)
            .map(|i| json!({"site": format!("f{i} (train.py:{i})"), "bytes": i}))
            .collect();
        let big = json!({"document": {"sites": sites, "figures": {"peak": 1}}});
        let out = cap(big, ANSWER_CAP);
        assert!(size(&out) <= ANSWER_CAP);
        assert_eq!(out["document"]["figures"]["peak"], 1);
        let kept = out["document"]["sites"].as_array().unwrap().len();
        assert!(kept > 100 && kept < 20_000, "{kept}");
        assert_eq!(out["document"]["sites"][0]["bytes"], 0);
        let note = out["cut"][0].as_str().unwrap();
        assert!(note.starts_with("/document/sites:"), "{note}");
    }

    #[test]
    fn one_huge_string_drops_the_document() {
        let out = cap(
            json!({"document": {"name": "x".repeat(ANSWER_CAP * 2)}, "tool": "t"}),
            ANSWER_CAP,
        );
        assert!(size(&out) <= ANSWER_CAP);
        assert_eq!(out["document"], Value::Null);
        assert_eq!(out["tool"], "t");
    }
}
