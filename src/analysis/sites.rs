//! Site identity (docs/figures.md#stacks-and-sites): which frame of a stack
//! is the user's, and the name of its file that stays the same on every
//! machine running the same code — installed packages by their path inside
//! `site-packages`/`dist-packages`, the standard library by its module
//! path, the project's own files relative to its root — so that a
//! baseline made on a laptop compares site by site with a CI run.

use glob::{MatchOptions, Pattern};

/// The folders an interpreter installs packages into.
pub(crate) const PACKAGE_DIRS: [&str; 2] = ["site-packages", "dist-packages"];

/// What counts as the user's code and where the project's own files are
/// named from: a budget's `[sites]` table, or `--project-root` and
/// `--user-code`. The default finds the root from the frames and counts
/// every Python file outside the libraries as the user's.
#[derive(Debug, Clone, Default)]
pub struct SiteRule {
    root: Option<Root>,
    user_code: Vec<Pattern>,
}

/// `--project-root` and `--user-code` as given, checked when the rules are
/// built ([`SiteFlags::rule`]).
#[derive(Debug, Clone, Default)]
pub struct SiteFlags {
    pub project_root: Option<String>,
    pub user_code: Vec<String>,
}

impl SiteFlags {
    /// The site rule the flags give.
    pub fn rule(&self) -> Result<SiteRule, SiteRuleError> {
        SiteRule::new(self.project_root.as_deref(), &self.user_code)
    }
}

/// `project-root` as written: a path prefix (absolute) or a run of folder
/// names matched anywhere in a path (the last match wins).
#[derive(Debug, Clone)]
struct Root {
    absolute: bool,
    parts: Vec<String>,
}

/// Why a `project-root` or `user-code` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SiteRuleError {
    #[error("project-root {0:?} names no folder")]
    EmptyRoot(String),
    #[error("user-code {pattern:?} is not a glob: {why}")]
    BadGlob { pattern: String, why: String },
}

impl SiteRule {
    /// The rule from a `project-root` (a folder name such as `nanogpt`, or
    /// a path prefix such as `/srv/app`) and `user-code` globs (matched on
    /// a file's portable path and on its path as recorded, `*` crossing
    /// folders); each value is checked.
    pub fn new(
        project_root: Option<&str>,
        user_code: &[String],
    ) -> Result<SiteRule, SiteRuleError> {
        let root = match project_root {
            None => None,
            Some(text) => {
                let (absolute, parts) = split(text);
                if parts.is_empty() {
                    return Err(SiteRuleError::EmptyRoot(text.to_string()));
                }
                let parts = parts.into_iter().map(str::to_string).collect();
                Some(Root { absolute, parts })
            }
        };
        let user_code = user_code
            .iter()
            .map(|p| {
                Pattern::new(&p.replace('\\', "/")).map_err(|e| SiteRuleError::BadGlob {
                    pattern: p.clone(),
                    why: e.msg.to_string(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(SiteRule { root, user_code })
    }
}

/// A path's folders and file name, split at `/` and `\` alike, `.`
/// dropped and `..` taking the folder before it away; and whether it is
/// absolute (`/…`, `\\server\…`, `C:\…`).
pub(crate) fn split(path: &str) -> (bool, Vec<&str>) {
    let b = path.as_bytes();
    let drive = b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':';
    let absolute = drive || path.starts_with(['/', '\\']);
    let mut out: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." if out.last().is_some_and(|l| *l != ".." && !l.ends_with(':')) => {
                out.pop();
            }
            ".." if absolute => {}
            _ => out.push(part),
        }
    }
    (absolute, out)
}

/// `python3.12`, `python3`, `Python310`: an interpreter's own folder.
fn is_interpreter_dir(part: &str) -> bool {
    part.get(..6)
        .is_some_and(|p| p.eq_ignore_ascii_case("python"))
        && part[6..].starts_with(|c: char| c.is_ascii_digit())
        && part[6..].chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `torchinductor_ci`: where torch.compile writes its kernels, per user.
fn is_inductor_dir(part: &str) -> bool {
    part.starts_with(INDUCTOR)
}

/// The folder name torch.compile's kernels are named from, the user's
/// name after it dropped.
const INDUCTOR: &str = "torchinductor";

fn is_lib_dir(part: &str) -> bool {
    part.eq_ignore_ascii_case("lib") || part.eq_ignore_ascii_case("lib64")
}

/// Where the portable part of a library file's path starts: after the
/// last `site-packages`/`dist-packages` folder; after the standard
/// library's `lib/python3.12` (`Python312\Lib` on Windows); at the last
/// `torch`/`torch_npu` folder (a torch built from source); at the
/// `torchinductor_USER` folder of the kernels torch.compile writes. `None`:
/// the file is in no library.
pub(crate) fn library_start(parts: &[&str]) -> Option<usize> {
    let dirs = &parts[..parts.len().saturating_sub(1)];
    let installed = dirs
        .iter()
        .rposition(|p| PACKAGE_DIRS.iter().any(|d| p.eq_ignore_ascii_case(d)));
    if let Some(i) = installed {
        return Some(i + 1);
    }
    let stdlib = dirs.windows(2).rposition(|w| {
        (is_lib_dir(w[0]) && is_interpreter_dir(w[1]))
            || (is_interpreter_dir(w[0]) && is_lib_dir(w[1]))
    });
    if let Some(i) = stdlib {
        return Some(i + 2);
    }
    dirs.iter()
        .rposition(|p| *p == "torch" || *p == "torch_npu" || is_inductor_dir(p))
}

/// Whether a Python file is library code by the default rule: inside a
/// library ([`library_start`]) or the interpreter's frozen modules.
pub(crate) fn in_library(file: &str) -> bool {
    file.starts_with("<frozen") || library_start(&split(file).1).is_some()
}

/// Whether a frame's file is Python code (C++ frames have `.cpp`/`.h`/`??`
/// files and line 0).
pub(crate) fn is_python(file: &str) -> bool {
    file.ends_with(".py")
}

/// The site rule applied to one snapshot: its project root, as given or
/// as found from the snapshot's own files.
#[derive(Debug)]
pub(crate) struct SiteKeys<'r> {
    rule: &'r SiteRule,
    /// The folders every absolute user file shares, when not given.
    found: Option<Vec<String>>,
}

impl<'r> SiteKeys<'r> {
    /// The keys for a snapshot whose frames have `files`: without a given
    /// root, the root is the longest folder that every absolute Python file
    /// outside the libraries shares.
    pub(crate) fn new<'a>(rule: &'r SiteRule, files: impl Iterator<Item = &'a str>) -> Self {
        let found = if rule.root.is_some() {
            None
        } else {
            common_root(files)
        };
        SiteKeys { rule, found }
    }

    /// Where the project-relative part of `parts` starts, when it is under
    /// the project root.
    fn root_end(&self, absolute: bool, parts: &[&str]) -> Option<usize> {
        let dirs = &parts[..parts.len().saturating_sub(1)];
        let starts = |root: &[String]| {
            root.len() <= dirs.len() && root.iter().zip(dirs).all(|(r, p)| same_part(r, p))
        };
        match (&self.rule.root, &self.found) {
            (Some(r), _) if r.absolute => (absolute && starts(&r.parts)).then_some(r.parts.len()),
            (Some(r), _) => dirs
                .windows(r.parts.len())
                .rposition(|w| w.iter().zip(&r.parts).all(|(p, r)| same_part(r, p)))
                .map(|i| i + r.parts.len()),
            (None, Some(found)) => (absolute && starts(found)).then_some(found.len()),
            (None, None) => None,
        }
    }

    /// The portable name of `file`: its path inside the library, else
    /// relative to the project root, else the whole path with `/`.
    pub(crate) fn key(&self, file: &str) -> String {
        let (absolute, parts) = split(file);
        let start = library_start(&parts).or_else(|| self.root_end(absolute, &parts));
        match start {
            Some(i) if is_inductor_dir(parts[i]) => {
                format!("{INDUCTOR}/{}", parts[i + 1..].join("/"))
            }
            Some(i) => parts[i.min(parts.len().saturating_sub(1))..].join("/"),
            None => whole(absolute, &parts),
        }
    }

    /// Whether `file` (a Python file) is the user's own code: by the
    /// `user-code` globs when given, else when it is in no library.
    pub(crate) fn is_user(&self, file: &str) -> bool {
        if self.rule.user_code.is_empty() {
            return !in_library(file);
        }
        let key = self.key(file);
        let (absolute, parts) = split(file);
        let recorded = whole(absolute, &parts);
        let options = MatchOptions {
            case_sensitive: true,
            require_literal_separator: false,
            require_literal_leading_dot: false,
        };
        self.rule
            .user_code
            .iter()
            .any(|p| p.matches_with(&key, options) || p.matches_with(&recorded, options))
    }
}

/// The path written with `/`, a POSIX absolute one with its leading `/`.
fn whole(absolute: bool, parts: &[&str]) -> String {
    let joined = parts.join("/");
    let drive = parts.first().is_some_and(|p| p.ends_with(':'));
    if absolute && !drive {
        format!("/{joined}")
    } else {
        joined
    }
}

/// A folder name of a given root against one of a path: exact, but a
/// drive letter in either case.
fn same_part(root: &str, part: &str) -> bool {
    root == part || (root.ends_with(':') && root.eq_ignore_ascii_case(part))
}

/// The longest run of folders every absolute Python file outside the
/// libraries starts with; `None` when there is no such file.
fn common_root<'a>(files: impl Iterator<Item = &'a str>) -> Option<Vec<String>> {
    let mut root: Option<Vec<String>> = None;
    for file in files.filter(|f| is_python(f) && !in_library(f)) {
        let (absolute, parts) = split(file);
        if !absolute {
            continue;
        }
        let dirs = &parts[..parts.len().saturating_sub(1)];
        match &mut root {
            None => root = Some(dirs.iter().map(|d| d.to_string()).collect()),
            Some(r) => {
                let same = r
                    .iter()
                    .zip(dirs)
                    .take_while(|(a, b)| same_part(a, b))
                    .count();
                r.truncate(same);
            }
        }
    }
    root
}

/// `function (file)` split at its first ` (` (a Python function name has
/// no space): the function and the file.
fn split_site(site: &str) -> Option<(&str, &str)> {
    let inner = site.strip_suffix(')')?;
    let open = inner.find(" (")?;
    Some((&inner[..open], &inner[open + 2..]))
}

/// The file of a site named `function (file)`; `None` for a site with no
/// file (`pre-trace`, `frameless`, `unknown-site`).
pub(crate) fn site_file(site: &str) -> Option<&str> {
    split_site(site).map(|(_, f)| f)
}

/// Site names (`function (file)`) of a summary written before site names
/// were portable, with their files renamed by the default rule, the
/// project root found from these files; a name without a Python file
/// (`<unknown>`) stays as it is.
pub(crate) fn portable_names(names: &[&str]) -> Vec<String> {
    let files = names.iter().filter_map(|n| split_site(n).map(|(_, f)| f));
    let rule = SiteRule::default();
    let keys = SiteKeys::new(&rule, files);
    names
        .iter()
        .map(|n| match split_site(n) {
            Some((name, file)) if is_python(file) => format!("{name} ({})", keys.key(file)),
            _ => n.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys<'r>(rule: &'r SiteRule, files: &[&'static str]) -> SiteKeys<'r> {
        SiteKeys::new(rule, files.iter().copied())
    }

    /// Every one of `files` is a library's, named `name`.
    fn all_library_named(files: &[&str], name: &str) {
        let rule = SiteRule::default();
        let k = keys(&rule, &[]);
        for file in files {
            assert_eq!(k.key(file), name, "{file}");
            assert!(!k.is_user(file), "{file}");
        }
    }

    #[test]
    fn installed_packages_are_named_by_their_path_inside_site_or_dist_packages() {
        let files = [
            "/home/u/.venv/lib/python3.13/site-packages/einops/_backends.py",
            "/opt/conda/lib/python3.10/site-packages/einops/_backends.py",
            "/usr/lib/python3/dist-packages/einops/_backends.py",
            r"C:\research\proj\.venv\Lib\site-packages\einops\_backends.py",
            r"C:\Users\u\AppData\Local\Programs\Python\Python310\lib\site-packages\einops\_backends.py",
        ];
        all_library_named(&files, "einops/_backends.py");
    }

    #[test]
    fn the_standard_library_is_named_by_its_module_path() {
        let files = [
            "/usr/lib/python3.12/json/decoder.py",
            "/opt/conda/lib/python3.11/json/decoder.py",
            "/usr/lib64/python3.9/json/decoder.py",
            r"C:\Python312\Lib\json\decoder.py",
        ];
        all_library_named(&files, "json/decoder.py");
        let rule = SiteRule::default();
        let k = keys(&rule, &[]);
        assert_eq!(k.key("/usr/lib/python3.12/contextlib.py"), "contextlib.py");
    }

    #[test]
    fn a_torch_built_from_source_is_named_from_its_torch_folder() {
        let rule = SiteRule::default();
        let k = keys(&rule, &[]);
        assert_eq!(
            k.key("/opt/pytorch/torch/nn/modules/module.py"),
            "torch/nn/modules/module.py"
        );
        assert!(!k.is_user("/opt/pytorch/torch_npu/utils/x.py"));
        let kernel = "/tmp/torchinductor_ci/x7/cx7kq2vbl3.py";
        assert_eq!(k.key(kernel), "torchinductor/x7/cx7kq2vbl3.py");
        assert!(!k.is_user(kernel));
    }

    #[test]
    fn the_projects_own_files_are_named_from_the_folder_they_all_share() {
        let files = [
            "/home/lin/cs336/a2/cs336-basics/cs336_basics/model.py",
            "/home/lin/cs336/a2/scripts/../cs336_systems/profile.py",
            "/home/lin/cs336/a2/.venv/lib/python3.12/site-packages/einops/einops.py",
            "??",
            "aten/src/ATen/Empty.cpp",
        ];
        let rule = SiteRule::default();
        let k = keys(&rule, &files);
        assert_eq!(k.key(files[0]), "cs336-basics/cs336_basics/model.py");
        assert_eq!(k.key(files[1]), "cs336_systems/profile.py");
        assert!(k.is_user(files[0]) && k.is_user(files[1]));
        let other = [
            "/builds/runner-7/a2/cs336-basics/cs336_basics/model.py",
            "/builds/runner-7/a2/cs336_systems/profile.py",
        ];
        let k2 = keys(&rule, &other);
        assert_eq!(k2.key(other[0]), k.key(files[0]));
        assert_eq!(k2.key(other[1]), k.key(files[1]));
    }

    #[test]
    fn windows_and_posix_checkouts_of_one_project_give_the_same_names() {
        let rule = SiteRule::default();
        let posix = ["/srv/app/train.py", "/srv/app/model/gpt.py"];
        let windows = [r"d:\ai\dev\app\train.py", r"d:\ai\dev\app\model\gpt.py"];
        let (p, w) = (keys(&rule, &posix), keys(&rule, &windows));
        assert_eq!(p.key(posix[1]), "model/gpt.py");
        assert_eq!(w.key(windows[1]), "model/gpt.py");
        assert_eq!(w.key(windows[0]), "train.py");
        // A file not under the root keeps its whole path, written with `/`.
        assert_eq!(w.key(r"C:\other\x.py"), "C:/other/x.py");
        assert_eq!(keys(&rule, &[]).key("/srv/app/x.py"), "/srv/app/x.py");
        assert_eq!(keys(&rule, &[]).key("model.py"), "model.py");
    }

    #[test]
    fn a_given_project_root_is_a_folder_name_or_a_path_prefix() {
        let by_name = SiteRule::new(Some("select_n"), &[]).unwrap();
        let k = keys(&by_name, &["/mnt/x/select_n/lib/a.py", "/tmp/b.py"]);
        assert_eq!(k.key("/mnt/x/select_n/lib/a.py"), "lib/a.py");
        assert_eq!(k.key(r"C:\w\select_n\lib\a.py"), "lib/a.py");
        assert_eq!(k.key("/tmp/b.py"), "/tmp/b.py");
        let by_path = SiteRule::new(Some(r"C:\w"), &[]).unwrap();
        let k = keys(&by_path, &[]);
        assert_eq!(k.key(r"c:\w\select_n\a.py"), "select_n/a.py");
        assert_eq!(k.key("/w/select_n/a.py"), "/w/select_n/a.py");
        assert_eq!(
            SiteRule::new(Some("/"), &[]).unwrap_err(),
            SiteRuleError::EmptyRoot("/".into())
        );
    }

    #[test]
    fn user_code_globs_decide_what_is_the_users_on_the_portable_or_recorded_path() {
        let rule = SiteRule::new(None, &["mypkg/**".into(), "*/vendored/*".into()]).unwrap();
        let k = keys(&rule, &["/srv/app/train.py"]);
        assert!(k.is_user("/venv/lib/python3.12/site-packages/mypkg/model.py"));
        assert!(k.is_user("/srv/app/vendored/x.py"));
        assert!(!k.is_user("/srv/app/train.py"));
        assert!(matches!(
            SiteRule::new(None, &["a/[".into()]),
            Err(SiteRuleError::BadGlob { .. })
        ));
    }

    #[test]
    fn dot_dot_and_dot_fold_lexically_and_never_climb_above_the_root() {
        assert_eq!(split("/a/b/../c/./d.py"), (true, vec!["a", "c", "d.py"]));
        assert_eq!(split("/../x.py"), (true, vec!["x.py"]));
        assert_eq!(split("../x.py"), (false, vec!["..", "x.py"]));
        assert_eq!(split(r"C:\..\x.py"), (true, vec!["C:", "x.py"]));
    }
    #[test]
    fn an_older_summarys_recorded_paths_become_portable_names() {
        let names = [
            "einsum (/a/.venv/lib/python3.13/site-packages/einops/_backends.py)",
            "forward (/srv/app/model/gpt.py)",
            "<module> (/srv/app/train.py)",
            "<unknown>",
            "at::empty (aten/src/ATen/Empty.cpp)",
        ];
        assert_eq!(
            portable_names(&names),
            [
                "einsum (einops/_backends.py)",
                "forward (model/gpt.py)",
                "<module> (train.py)",
                "<unknown>",
                "at::empty (aten/src/ATen/Empty.cpp)"
            ]
        );
    }
}
