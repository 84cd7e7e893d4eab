//! The base-branch baseline recipe (issue 35 item 4):
//! examples/baseline-from-base.sh run as GitHub Actions and GitLab CI run
//! it, with `gh`, `curl` and `unzip` replaced by fakes that serve a fake
//! artifact folder, then `memgate check --baseline` on what it chose.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::memgate_at_root;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A folder of fake `gh`, `curl` and `unzip`, each logging its arguments
/// to `calls.log` beside it. `gh run list` prints `run` (nothing: no
/// successful run); `gh run download` and `unzip` copy `artifact` into
/// the folder they are given; `curl` writes a placeholder zip.
struct Fakes {
    dir: tempfile::TempDir,
}

impl Fakes {
    fn new(run: &str, artifact: &Path) -> Fakes {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("calls.log");
        let art = artifact.display();
        let scripts = [
            (
                "gh",
                format!(
                    "#!/bin/sh\necho \"gh $*\" >> '{}'\n\
                     case \"$1 $2\" in\n\
                     'run list') printf '%s' '{run}' ;;\n\
                     'run download') while [ $# -gt 0 ]; do [ \"$1\" = --dir ] && d=$2; shift; done\n\
                       [ -d '{art}' ] || exit 1; mkdir -p \"$d\" && cp -R '{art}'/. \"$d\"/ ;;\n\
                     esac\n",
                    log.display()
                ),
            ),
            (
                "curl",
                format!(
                    "#!/bin/sh\necho \"curl $*\" >> '{}'\n[ -d '{art}' ] || exit 22\n\
                     while [ $# -gt 0 ]; do [ \"$1\" = -o ] && o=$2; shift; done\necho zip > \"$o\"\n",
                    log.display()
                ),
            ),
            (
                "unzip",
                format!(
                    "#!/bin/sh\necho \"unzip $*\" >> '{}'\nmkdir -p \"$4/memgate-summaries\" && \
                     cp -R '{art}'/. \"$4/memgate-summaries\"/\n",
                    log.display()
                ),
            ),
        ];
        for (name, text) in scripts {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Fakes { dir }
    }

    fn calls(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("calls.log")).unwrap_or_default()
    }

    /// The script in a clean CI-like environment, from `work`.
    fn script(&self, work: &Path, dest: &str) -> Command {
        let mut cmd = Command::new("sh");
        let path = format!(
            "{}:{}",
            self.dir.path().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        cmd.arg(root().join("examples/baseline-from-base.sh"))
            .args([dest, &root().join("examples/golden").display().to_string()])
            .current_dir(work)
            .env_clear()
            .env("PATH", path)
            .env("GITHUB_OUTPUT", work.join("github-output"));
        cmd
    }
}

/// A fake artifact: the bundled golden summaries, as the base branch's
/// summarize step would have uploaded them.
fn artifact() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for name in ["rank0.json", "rank1.json"] {
        std::fs::copy(
            root().join("examples/golden").join(name),
            dir.path().join(name),
        )
        .unwrap();
    }
    dir
}

fn run(cmd: &mut Command) -> (i32, String, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).trim().to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn on_github_the_base_branchs_last_successful_artifact_becomes_the_baseline_memgate_judges_by() {
    let art = artifact();
    let fakes = Fakes::new("4242", art.path());
    let work = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", "org/repo")
        .env("GITHUB_WORKFLOW", "memory-gate")
        .env("GITHUB_BASE_REF", "main"));
    assert_eq!(code, 0, "{stderr}");
    let dest = work.path().join("base");
    assert_eq!(stdout, "base");
    assert!(
        stderr.contains("2 summaries from the artifact memgate-summaries of run 4242 on main"),
        "{stderr}"
    );
    for name in ["rank0.json", "rank1.json"] {
        assert_eq!(
            std::fs::read(dest.join(name)).unwrap(),
            std::fs::read(art.path().join(name)).unwrap()
        );
    }
    let calls = fakes.calls();
    assert!(
        calls.contains("gh run list --repo org/repo --workflow memory-gate --branch main --event push --status success"),
        "{calls}"
    );
    assert!(
        calls.contains("gh run download 4242 --repo org/repo --name memgate-summaries"),
        "{calls}"
    );
    let output = std::fs::read_to_string(work.path().join("github-output")).unwrap();
    assert_eq!(output, "dir=base\nsource=artifact\n");
    // memgate judges the bundled run by the downloaded summaries.
    memgate_at_root()
        .args(["check", "--config", "examples/memgate.toml", "--baseline"])
        .arg(&dest)
        .assert()
        .code(0);
    memgate_at_root()
        .args([
            "check",
            "--config",
            "examples/memgate-regressed.toml",
            "--baseline",
        ])
        .arg(&dest)
        .assert()
        .code(1);
}

#[test]
fn in_a_merge_queue_the_base_ref_comes_from_memgate_base_branch_without_refs_heads() {
    let art = artifact();
    let fakes = Fakes::new("7", art.path());
    let work = tempfile::tempdir().unwrap();
    let (code, _, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKFLOW", "memory-gate")
        .env("MEMGATE_BASE_BRANCH", "refs/heads/release/2.1"));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        fakes.calls().contains("--branch release/2.1 "),
        "{}",
        fakes.calls()
    );
}

#[test]
fn without_a_successful_base_run_the_committed_goldens_are_used_and_said() {
    let art = artifact();
    let fakes = Fakes::new("", art.path());
    let work = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_WORKFLOW", "memory-gate")
        .env("GITHUB_BASE_REF", "main"));
    assert_eq!(code, 0, "{stderr}");
    let golden = root().join("examples/golden").display().to_string();
    assert_eq!(stdout, golden);
    assert!(
        stderr.contains("no successful run of memory-gate on main; using the committed goldens"),
        "{stderr}"
    );
    let output = std::fs::read_to_string(work.path().join("github-output")).unwrap();
    assert_eq!(output, format!("dir={golden}\nsource=golden\n"));
    assert!(!work.path().join("base").exists());
}

#[test]
fn on_gitlab_the_target_branchs_last_successful_job_artifacts_are_used() {
    let art = artifact();
    let fakes = Fakes::new("", art.path());
    let work = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(fakes
        .script(work.path(), "base")
        .env_remove("GITHUB_OUTPUT")
        .env("GITLAB_CI", "true")
        .env("CI_API_V4_URL", "https://gitlab.example/api/v4")
        .env("CI_PROJECT_ID", "12")
        .env("CI_JOB_TOKEN", "t")
        .env("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "dev/x")
        .env("CI_DEFAULT_BRANCH", "main"));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, "base");
    assert!(work.path().join("base/rank1.json").is_file());
    let calls = fakes.calls();
    assert!(
        calls.contains("https://gitlab.example/api/v4/projects/12/jobs/artifacts/dev%2Fx/download?job=memory-gate"),
        "{calls}"
    );
}

#[test]
fn an_artifact_with_a_link_or_no_summary_is_refused_for_the_goldens() {
    let art = artifact();
    std::os::unix::fs::symlink("/etc/passwd", art.path().join("evil.json")).unwrap();
    let fakes = Fakes::new("9", art.path());
    let work = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_BASE_REF", "main"));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.ends_with("examples/golden"), "{stdout}");
    assert!(stderr.contains("symbolic link: refused"), "{stderr}");
    let empty = tempfile::tempdir().unwrap();
    let fakes = Fakes::new("9", empty.path());
    let (_, stdout, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_BASE_REF", "main"));
    assert!(stdout.ends_with("examples/golden"), "{stdout}");
    assert!(stderr.contains("holds no summary"), "{stderr}");
}

#[test]
fn a_destination_that_holds_files_is_never_written_over() {
    let art = artifact();
    let fakes = Fakes::new("1", art.path());
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("base")).unwrap();
    std::fs::write(work.path().join("base/rank0.json"), "mine").unwrap();
    let (code, _, stderr) = run(fakes
        .script(work.path(), "base")
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_BASE_REF", "main"));
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("base/rank0.json")).unwrap(),
        "mine"
    );
}

#[test]
fn the_example_workflows_run_in_merge_queues_and_take_the_base_branchs_baselines() {
    let github = std::fs::read_to_string(root().join("examples/github-workflow.yml")).unwrap();
    let on = &github
        [github.find("\non:\n").expect("an on: block")..github.find("\npermissions:").unwrap()];
    assert!(on.contains("\n  merge_group:\n"), "{on}");
    assert!(
        github.contains("github.event.merge_group.base_ref"),
        "{github}"
    );
    assert!(
        github.contains("sh .github/memgate-baseline.sh"),
        "{github}"
    );
    assert!(
        github.contains("baseline: ${{ steps.base.outputs.dir }}"),
        "{github}"
    );
    assert!(github.contains("name: memgate-summaries"), "{github}");
    let gitlab = std::fs::read_to_string(root().join("examples/gitlab-ci.yml")).unwrap();
    assert!(
        gitlab.contains("base-baseline-script: memgate-baseline.sh"),
        "{gitlab}"
    );
    let component = std::fs::read_to_string(root().join("templates/memgate.yml")).unwrap();
    assert!(
        component.contains(r#"sh "$MEMGATE_BASE_SCRIPT""#),
        "{component}"
    );
    assert!(component.contains("- memgate-summaries/"), "{component}");
}
