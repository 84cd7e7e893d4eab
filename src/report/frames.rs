//! Call stacks folded for reading (text only; JSON keeps every frame).
//!
//! The rule. A frame is Python when its file ends in `.py`; every other
//! frame is C++ (or has no file). A stack with Python frames shows them,
//! innermost first: all of them up to [`MAX_PYTHON`], else the innermost
//! [`PYTHON_INNER`], one `… N Python frames` line and the outermost
//! [`PYTHON_OUTER`] (the script's entry point); its C++ frames fold into one
//! `… N C++ frames` line (`--format json` lists every frame). A stack of C++ frames only shows its innermost
//! [`CPP_SHOWN`] that are not the profiler's own ([`is_profiler`]), then `… N C++
//! frames` and `… N profiler frames skipped`. Every line is cut at [`MAX_LINE`]
//! characters, ending in `…`.

use super::escape::terminal;
use crate::units::counted;

/// The most Python frames shown unfolded.
pub(crate) const MAX_PYTHON: usize = 10;
/// Python frames kept from the innermost end when folding.
pub(crate) const PYTHON_INNER: usize = 7;
/// Python frames kept from the outermost end when folding.
pub(crate) const PYTHON_OUTER: usize = 2;
/// C++ frames shown of a stack that has no Python frame.
pub(crate) const CPP_SHOWN: usize = 3;
/// The longest frame line, in characters.
pub(crate) const MAX_LINE: usize = 200;

/// Whether a `name (file:line)` label is a Python frame.
pub(crate) fn is_python(label: &str) -> bool {
    let Some(open) = label.rfind(" (") else {
        return false;
    };
    let place = label[open + 2..].trim_end_matches(')');
    let file = place.rsplit_once(':').map_or(place, |(f, _)| f);
    file.ends_with(".py")
}

/// Whether a frame label is the recorder's own (the unwinder, the
/// traceback gatherer, the caching allocator), which says nothing of
/// what the memory is for: a listing skips it, counting it.
pub(crate) fn is_profiler(label: &str) -> bool {
    let name = label.rfind(" (").map_or(label, |open| &label[..open]);
    name.starts_with("torch::unwind::")
        || name.starts_with("torch_npu::unwind::")
        || name.contains("CapturedTraceback")
        || name.contains("gather_with_cpp")
        || name.contains("CachingAllocator")
}

/// `s` escaped for a terminal and cut at [`MAX_LINE`] characters.
pub(crate) fn line(s: &str) -> String {
    cut(&terminal(s))
}

/// `s` cut at [`MAX_LINE`] characters, ending in `…` when cut (for text
/// its renderer escapes).
pub(crate) fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_LINE {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_LINE - 1).collect();
    out.push('…');
    out
}

/// The lines to print for a stack, by the rule above (escaped, cut).
pub(crate) fn folded<S: AsRef<str>>(frames: &[S]) -> Vec<String> {
    let frames: Vec<&str> = frames.iter().map(AsRef::as_ref).collect();
    let python: Vec<&str> = frames.iter().copied().filter(|f| is_python(f)).collect();
    let cpp = frames.len() - python.len();
    let mut out = Vec::new();
    if python.is_empty() {
        let meaningful: Vec<&str> = frames.iter().copied().filter(|f| !is_profiler(f)).collect();
        let skipped = frames.len() - meaningful.len();
        out.extend(meaningful.iter().take(CPP_SHOWN).map(|f| line(f)));
        let rest = meaningful.len().saturating_sub(CPP_SHOWN);
        if rest > 0 {
            out.push(format!(
                "… {}",
                counted(rest as u64, "C++ frame", "C++ frames")
            ));
        }
        if skipped > 0 {
            out.push(format!(
                "… {} skipped (torch::unwind, CapturedTraceback, the caching allocator)",
                counted(skipped as u64, "profiler frame", "profiler frames")
            ));
        }
        return out;
    }
    if python.len() <= MAX_PYTHON {
        out.extend(python.iter().map(|f| line(f)));
    } else {
        out.extend(python[..PYTHON_INNER].iter().map(|f| line(f)));
        let hidden = python.len() - PYTHON_INNER - PYTHON_OUTER;
        out.push(format!(
            "… {}",
            counted(hidden as u64, "Python frame", "Python frames")
        ));
        out.extend(
            python[python.len() - PYTHON_OUTER..]
                .iter()
                .map(|f| line(f)),
        );
    }
    if cpp > 0 {
        out.push(format!(
            "… {}",
            counted(cpp as u64, "C++ frame", "C++ frames")
        ));
    }
    out
}

/// The innermost Python frame, else the innermost frame that is not the
/// profiler's own, else the innermost frame: where a stack is in the
/// user's code, as far as one frame says it.
pub(crate) fn innermost<S: AsRef<str>>(frames: &[S]) -> Option<&str> {
    let all = || frames.iter().map(AsRef::as_ref);
    all()
        .find(|f| is_python(f))
        .or_else(|| all().find(|f| !is_profiler(f)))
        .or(frames.first().map(AsRef::as_ref))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn python_frames_are_told_by_the_file_and_cpp_by_the_rest() {
        assert!(is_python("forward (model.py:39)"));
        assert!(is_python("<module> (/a b/train.py:1)"));
        assert!(!is_python("at::empty (aten/src/ATen/Empty.cpp:12)"));
        assert!(!is_python("c10::alloc (??:0)"));
        assert!(!is_python("no place at all"));
    }

    #[test]
    fn a_cpp_only_stack_keeps_its_three_innermost_frames_and_counts_the_rest() {
        let f = labels(&[
            "a (x.cpp:1)",
            "b (x.cpp:2)",
            "c (x.cpp:3)",
            "d (x.cpp:4)",
            "e (??:0)",
        ]);
        assert_eq!(
            folded(&f),
            [
                "a (x.cpp:1)",
                "b (x.cpp:2)",
                "c (x.cpp:3)",
                "… 2 C++ frames"
            ]
        );
    }

    #[test]
    fn a_cpp_only_stack_skips_the_profilers_own_frames_and_counts_them() {
        let f = labels(&[
            "torch::unwind::unwind() (??:0)",
            "torch::CapturedTraceback::gather(bool, bool, bool) (??:0)",
            "gather_with_cpp (??:0)",
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc (??:0)",
            "at::native::empty_cuda (Empty.cpp:1)",
            "at::empty (Empty.cpp:2)",
        ]);
        assert_eq!(
            folded(&f),
            [
                "at::native::empty_cuda (Empty.cpp:1)",
                "at::empty (Empty.cpp:2)",
                "… 4 profiler frames skipped (torch::unwind, CapturedTraceback, the caching allocator)"
            ]
        );
        assert_eq!(innermost(&f), Some("at::native::empty_cuda (Empty.cpp:1)"));
        let only = labels(&["torch::unwind::unwind() (??:0)"]);
        assert_eq!(innermost(&only), Some("torch::unwind::unwind() (??:0)"));
    }

    #[test]
    fn a_mixed_stack_lists_its_python_frames_and_folds_every_cpp_frame() {
        let f = labels(&[
            "at::x (a.cpp:1)",
            "f (m.py:1)",
            "at::y (b.cpp:2)",
            "g (m.py:2)",
        ]);
        assert_eq!(folded(&f), ["f (m.py:1)", "g (m.py:2)", "… 2 C++ frames"]);
    }

    #[test]
    fn a_deep_python_stack_keeps_its_innermost_seven_and_outermost_two() {
        let names: Vec<String> = (0..14).map(|i| format!("f{i} (m.py:{i})")).collect();
        let out = folded(&names);
        assert_eq!(out.len(), 7 + 1 + 2);
        assert_eq!(out[0], "f0 (m.py:0)");
        assert_eq!(out[6], "f6 (m.py:6)");
        assert_eq!(out[7], "… 5 Python frames");
        assert_eq!(out[8], "f12 (m.py:12)");
        assert_eq!(out[9], "f13 (m.py:13)");
    }

    #[test]
    fn a_long_frame_is_cut_at_two_hundred_characters_with_an_ellipsis() {
        let long = format!("{} (m.py:1)", "x".repeat(500));
        let out = line(&long);
        assert_eq!(out.chars().count(), MAX_LINE);
        assert!(out.ends_with('…'));
        assert_eq!(line("short (m.py:1)"), "short (m.py:1)");
    }

    #[test]
    fn the_innermost_python_frame_names_the_stack() {
        let f = labels(&["at::x (a.cpp:1)", "f (m.py:1)"]);
        assert_eq!(innermost(&f), Some("f (m.py:1)"));
        assert_eq!(
            innermost(&labels(&["at::x (a.cpp:1)"])),
            Some("at::x (a.cpp:1)")
        );
        assert_eq!(innermost::<String>(&[]), None);
    }
}
