//! Sites that survive another machine (issue 30 items 2 and 3): the real
//! regressed pair re-pickled with every frame path rewritten — another
//! checkout root, another Python version, Windows separators — gives the
//! same causes from `check` and `diff`, byte for byte; and the top site of
//! a cause is a frame of the user's code, not of a library.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use memgate::pickle::{decode, Arena, KeepAll, Value};

use crate::common::memgate;

fn real(name: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/real")
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    eprintln!(
        "SKIPPED: ../shared not found at {}: the portable-sites test did not run",
        path.display()
    );
    None
}

/// A protocol-2 pickle of a decoded value graph: each container and
/// string once, shared through the memo as in the file it came from, so
/// the copy is as small as the original. Strings pass through `rewrite`.
struct Writer<'a> {
    arena: &'a Arena,
    rewrite: &'a dyn Fn(&str) -> String,
    out: Vec<u8>,
    memo: HashMap<(bool, u32), u32>,
}

impl Writer<'_> {
    fn put(&mut self, key: (bool, u32)) {
        let n = u32::try_from(self.memo.len()).unwrap();
        self.memo.insert(key, n);
        self.out.push(b'r');
        self.out.extend(n.to_le_bytes());
    }

    fn got(&mut self, key: (bool, u32)) -> bool {
        let Some(n) = self.memo.get(&key) else {
            return false;
        };
        self.out.push(b'j');
        self.out.extend(n.to_le_bytes());
        true
    }

    fn int(&mut self, i: i128) {
        if let Ok(small) = i32::try_from(i) {
            self.out.push(b'J');
            self.out.extend(small.to_le_bytes());
            return;
        }
        let bytes = i.to_le_bytes();
        // The shortest two's complement that keeps the sign.
        let mut len = 16;
        while len > 1
            && ((bytes[len - 1] == 0 && bytes[len - 2] < 0x80)
                || (bytes[len - 1] == 0xff && bytes[len - 2] >= 0x80))
        {
            len -= 1;
        }
        self.out.extend([0x8a, u8::try_from(len).unwrap()]);
        self.out.extend(&bytes[..len]);
    }

    fn value(&mut self, v: Value) {
        match v {
            Value::None | Value::HugeInt { .. } | Value::Bytes(_) | Value::Folded(..) => {
                self.out.push(b'N')
            }
            Value::Bool(b) => self.out.push(if b { 0x88 } else { 0x89 }),
            Value::Int(_) | Value::BigInt(_) => self.int(self.arena.int(v).unwrap()),
            Value::Float(x) => {
                self.out.push(b'G');
                self.out.extend(x.to_be_bytes());
            }
            Value::Str(id) => {
                if self.got((false, id)) {
                    return;
                }
                let text = (self.rewrite)(self.arena.str(id));
                self.out.push(b'X');
                self.out
                    .extend(u32::try_from(text.len()).unwrap().to_le_bytes());
                self.out.extend(text.as_bytes());
                self.put((false, id));
            }
            Value::Obj(id) => self.container(v, id),
        }
    }

    fn container(&mut self, v: Value, id: u32) {
        if self.got((true, id)) {
            return;
        }
        let arena = self.arena;
        if let Some(items) = arena.dict(v) {
            self.out.push(b'}');
            self.put((true, id));
            self.out.push(b'(');
            for &(k, x) in items {
                self.value(k);
                self.value(x);
            }
            self.out.push(b'u');
        } else {
            let items = arena.seq(v).unwrap_or(&[]);
            self.out.push(b']');
            self.put((true, id));
            self.out.push(b'(');
            for &x in items {
                self.value(x);
            }
            self.out.push(b'e');
        }
    }
}

/// `from` re-pickled to `to` with every string passed through `rewrite`.
fn repickle(from: &Path, to: &Path, rewrite: &dyn Fn(&str) -> String) {
    let bytes = std::fs::read(from).unwrap();
    let decoded = decode(&bytes[..], Some(bytes.len() as u64), &mut KeepAll).unwrap();
    let mut w = Writer {
        arena: &decoded.arena,
        rewrite,
        out: vec![0x80, 2],
        memo: HashMap::new(),
    };
    w.value(decoded.root);
    w.out.push(b'.');
    std::fs::write(to, w.out).unwrap();
}

/// Every path of the select_n pair moved: the checkout to `root`, the
/// interpreter's packages to `packages` and its standard library to
/// `stdlib`, the rest of each path written with `sep`.
fn mover(root: &str, packages: &str, stdlib: &str, sep: char) -> impl Fn(&str) -> String {
    let (root, packages, stdlib) = (root.to_string(), packages.to_string(), stdlib.to_string());
    move |s: &str| {
        let moves = [
            (
                "/opt/miniconda3/envs/pytorch/lib/python3.10/site-packages/",
                &packages,
            ),
            ("/opt/miniconda3/envs/pytorch/lib/python3.10/", &stdlib),
            ("/mnt/mcx/select_n/", &root),
        ];
        for (from, to) in moves {
            if let Some(rest) = s.strip_prefix(from) {
                return format!("{to}{}", rest.replace('/', &sep.to_string()));
            }
        }
        assert!(!s.starts_with('/'), "a path the test does not move: {s}");
        s.to_string()
    }
}

const NEW: &str = "select_n_04d383c.pickle";
const BASE: &str = "select_n_1f2f548.pickle";

/// `check`'s stdout and its JSON verdict's causes, and `diff`'s JSON, on
/// the pair in `dir`.
fn outcomes(dir: &Path) -> (String, Vec<serde_json::Value>, String) {
    let config = format!(
        "[[target]]\nname = \"nightly\"\nsnapshots = {:?}\nbaseline = {:?}\n",
        dir.join(NEW).display().to_string(),
        dir.join(BASE).display().to_string()
    );
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("m.toml"), config).unwrap();
    let out = memgate()
        .current_dir(work.path())
        .args(["check", "--config", "m.toml", "--json", "v.json"])
        .assert()
        .code(1)
        .get_output()
        .clone();
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("v.json")).unwrap())
            .unwrap();
    let mut causes = Vec::new();
    collect_causes(&verdict, &mut causes);
    let diff = memgate()
        .current_dir(dir)
        .args(["diff", BASE, NEW, "--format", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    (
        String::from_utf8(out.stdout).unwrap(),
        causes,
        String::from_utf8(diff.stdout).unwrap(),
    )
}

fn collect_causes(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(c) = m.get("cause").filter(|c| !c.is_null()) {
                out.push(c.clone());
            }
            m.values().for_each(|x| collect_causes(x, out));
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| collect_causes(x, out)),
        _ => {}
    }
}

/// The select_n pair re-pickled into `dir`: the baseline recorded in
/// another Linux checkout with another Python, the run on Windows, each
/// side moved its own way.
fn move_pair(new: &Path, base: &Path, dir: &Path) {
    let linux = mover(
        "/home/ci/builds/7/select_n-checkout/",
        "/usr/lib/python3/dist-packages/",
        "/usr/local/lib/python3.12/",
        '/',
    );
    let windows = mover(
        r"D:\work\select_n\",
        r"C:\Users\ci\AppData\Local\Programs\Python\Python312\Lib\site-packages\",
        r"C:\Users\ci\AppData\Local\Programs\Python\Python312\Lib\",
        '\\',
    );
    repickle(new, &dir.join(NEW), &windows);
    repickle(base, &dir.join(BASE), &linux);
    let holds = |file: &str, text: &str| {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        bytes.windows(text.len()).any(|w| w == text.as_bytes())
    };
    assert!(holds(
        NEW,
        r"D:\work\select_n\lib\transformers\models\llama"
    ));
    assert!(holds(BASE, "/usr/lib/python3/dist-packages/torch/"));
    assert!(!holds(NEW, "/mnt/mcx/") && !holds(BASE, "/mnt/mcx/"));
}

#[test]
fn the_real_pair_moved_to_another_checkout_python_and_os_gives_the_same_causes_byte_for_byte() {
    let (Some(new), Some(base)) = (real(NEW), real(BASE)) else {
        return;
    };
    let dir = new.parent().unwrap();
    let moved = tempfile::tempdir().unwrap();
    // The original pair is judged while the moved one is written.
    let (want, got) = std::thread::scope(|s| {
        let want = s.spawn(|| outcomes(dir));
        move_pair(&new, &base, moved.path());
        (want.join().unwrap(), outcomes(moved.path()))
    });
    assert!(!want.1.is_empty(), "the pair has causes: {}", want.0);
    let cause_text = serde_json::to_string(&want.1).unwrap();
    assert!(
        cause_text.contains("forward (lib/transformers/models/llama/modeling_llama.py)"),
        "{cause_text}"
    );
    let unplaced = |text: &str, dir: &Path| text.replace(&dir.display().to_string(), "DIR");
    assert_eq!(
        unplaced(&got.0, moved.path()),
        unplaced(&want.0, dir),
        "check's lines"
    );
    assert_eq!(
        serde_json::to_string(&got.1).unwrap(),
        cause_text,
        "check's causes"
    );
    assert_eq!(got.2, want.2, "diff's JSON");
}

/// The sites of the first cause of `check --json` on a target.
fn first_cause_sites(config: &str) -> Vec<String> {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("m.toml"), config).unwrap();
    memgate()
        .current_dir(work.path())
        .args(["check", "--config", "m.toml", "--json", "v.json"])
        .assert()
        .code(1);
    let verdict: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(work.path().join("v.json")).unwrap())
            .unwrap();
    let mut causes = Vec::new();
    collect_causes(&verdict, &mut causes);
    let cause = &causes[0];
    cause["grew"]
        .as_array()
        .unwrap()
        .iter()
        .chain(cause["shrank"].as_array().unwrap())
        .map(|r| r["site"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_top_site_of_a_real_regression_is_the_users_frame_not_a_librarys() {
    let (Some(new), Some(base)) = (
        real("wedsonlin_medium_1024_training.pickle"),
        real("wrapped_hyperion_cl128_fw_with_grad.pickle"),
    ) else {
        return;
    };
    // Two checkouts of one course project, in two home folders; einops's
    // einsum called from the user's model.py was the top site before.
    let config = format!(
        "[[target]]\nname = \"cs336\"\nsnapshots = {:?}\nbaseline = {:?}\n\
         accept-lower-bounds = true\n",
        new.display().to_string(),
        base.display().to_string()
    );
    let sites = first_cause_sites(&config);
    assert_eq!(sites[0], "softmax (cs336-basics/cs336_basics/nn_utils.py)");
    for site in &sites {
        assert!(
            !site.contains("einops") && !site.contains("site-packages") && !site.contains("/home/"),
            "{sites:?}"
        );
    }
    // select_n's sites are its own (its vendored transformers included):
    // the top site with frames is in the checkout, relative to it.
    let (Some(new), Some(base)) = (real(NEW), real(BASE)) else {
        return;
    };
    let config = format!(
        "[[target]]\nname = \"nightly\"\nsnapshots = {:?}\nbaseline = {:?}\n",
        new.display().to_string(),
        base.display().to_string()
    );
    let sites = first_cause_sites(&config);
    let framed: Vec<&String> = sites.iter().filter(|s| s.ends_with(".py)")).collect();
    assert_eq!(
        framed[0],
        "forward (lib/transformers/models/llama/modeling_llama.py)"
    );
}

#[test]
fn an_older_golden_with_recorded_paths_compares_site_by_site_with_a_new_run() {
    // examples/golden was summarized before site names were portable: its
    // sites read `forward (/workspace/nanogpt/model.py)`, no `site-names`.
    let golden = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/golden/rank0.json"),
    )
    .unwrap();
    assert!(golden.contains("\"forward (/workspace/nanogpt/model.py)\""));
    assert!(!golden.contains("site-names"));
    let out = crate::common::regressed_example_stdout();
    // The site grew: one name on both sides, not one new and one vanished.
    assert!(
        out.contains("; top site: +12 MiB forward (model.py)"),
        "{out}"
    );
    assert!(!out.contains("/workspace/"), "{out}");
}

fn profile_stdout(args: &[&str]) -> String {
    let out = crate::common::memgate_at_root()
        .args(["profile", "examples/snapshots/rank0.pickle"])
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

#[test]
fn project_root_and_user_code_flags_rename_and_repick_the_sites() {
    // The example's files are /workspace/nanogpt/{train,model,data}.py.
    let plain = profile_stdout(&[]);
    assert!(plain.contains("x  forward (model.py)"), "{plain}");
    let rooted = profile_stdout(&["--project-root", "workspace"]);
    assert!(rooted.contains("x  forward (nanogpt/model.py)"), "{rooted}");
    assert!(
        rooted.contains("x  train_step (nanogpt/train.py)"),
        "{rooted}"
    );
    // With only train.py the user's, model.py's frames are skipped: the
    // site of its allocations is the caller in train.py.
    let only_train = profile_stdout(&["--user-code", "*/train.py"]);
    assert!(!only_train.contains("(model.py)"), "{only_train}");
    assert!(
        only_train.contains("x  train_step (train.py)"),
        "{only_train}"
    );
    crate::common::memgate_at_root()
        .args([
            "profile",
            "examples/snapshots/rank0.pickle",
            "--user-code",
            "a/[",
        ])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "--project-root/--user-code: user-code \"a/[\" is not a glob",
        ));
}
