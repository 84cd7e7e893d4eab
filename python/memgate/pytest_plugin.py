"""pytest plugin (entry point ``pytest11``): a memory budget per test.

    @pytest.mark.memgate(allocated_peak="2 GiB", phase={"Optimizer.step#AdamW.step": {"allocated_peak": "1 GiB"}})
    def test_train_step(): ...

The test runs under :func:`memgate.record`; its snapshot is then judged
like ``memgate check`` judges a target whose budget is the marker's
keywords: a figure id in snake_case (``allocated_peak``), ``category=``
and ``phase=`` mappings (any name; inside ``phase=`` a figure is a key in
either spelling, ``"allocated-peak"`` as the TOML writes it too), ``tolerance``, ``noise_floor``,
``rules`` (a rule set, a rules file or a mapping category -> regex),
``baseline``, ``key``, ``device``, ``window``, ``iteration_boundary``,
``require_trace``, ``accept_lower_bounds``, ``same_environment``,
``device_memory``, ``outside_allocator``. Only the figures named are
judged (against their baseline too when there is one). Relative paths are
relative to the test file. The keywords are validated by memgate when the
tests are collected, with or without torch: a mistake stops the session
there, named in the keywords written.

A default budget for every test of the session: ``--memgate-default-budget
"allocated_peak=2 GiB, oom_events=0"`` (ini ``memgate_default_budget``),
comma-separated ``keyword=value`` pairs of the marker's scalar keywords
(a whole number or ``true``/``false`` is read as one, anything else as
text). Every test is then recorded and judged by it; a marked test's
keywords override the default's, one by one. An unmarked test on a machine
with no device runs unjudged, and the session's ``memgate`` section counts
it; only a marked test is skipped there.

Each judged test's figures go into pytest's own JUnit (``--junitxml``) as
properties of its testcase, as ``record_property`` writes them:
``memgate.verdict`` and, per judged check, ``memgate.devN.ID`` (the value,
in bytes for sizes) and ``memgate.devN.ID.status``.

Options (each also an ini key, ``memgate_save_baselines`` …):

``--memgate-save-baselines DIR``
    write each marked test's summary to ``DIR/<name>.json``, ``<name>``
    from its node id (see :func:`node_name`).
``--memgate-baselines DIR``
    compare each marked test against ``DIR/<name>.json`` (a marker's own
    ``baseline=`` wins).
``--memgate-keep DIR`` / ``--memgate-keep-all``
    keep the snapshot (``DIR/<name>.pickle``, and its environment file) of
    each failing test, or of every marked test.
``--memgate-default-budget KEYWORDS``
    the budget of every test, overridden keyword by keyword by a marker.
``--memgate-github``
    also append each marked test's Markdown report to
    ``GITHUB_STEP_SUMMARY`` and its outputs to ``GITHUB_OUTPUT``.

A failed gate fails the test with check's explanation and the sites that
grew most; a check at ``level = "warn"`` that is over its limit is a
:class:`MemgateWarning`. The session ends with a ``memgate`` section: each
marked test's judged figures and verdict, then one headroom per line, each
named by its ceiling (against the budget, against the baseline's
tolerance). Without torch,
or with neither a CUDA device nor torch_npu's NPU, the test is skipped and
nothing is written. Needs pytest 8 (new-style hook wrappers).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any, Dict, Generator, List, Optional, Tuple

import pytest

from . import _native
from ._api import MemgateError, check, summarize
from ._budget import BudgetError, validated_document
from ._documents import Check, Verdict
from ._lines import amount, headroom_lines, size
from ._record import accelerator, environment_path, record

_TOP_SITES = 5
_NAME_LIMIT = 120

_OPTIONS: Tuple[Tuple[str, str, str], ...] = (
    ("save_baselines", "DIR", "write each @pytest.mark.memgate test's summary to DIR/<name>.json"),
    ("baselines", "DIR", "compare each @pytest.mark.memgate test against DIR/<name>.json"),
    ("keep", "DIR", "keep the snapshots of failing @pytest.mark.memgate tests in DIR"),
)

_results = pytest.StashKey[List[Tuple[str, Verdict]]]()
_default = pytest.StashKey[Dict[str, Any]]()
_unjudged = pytest.StashKey[List[str]]()


class MemgateWarning(UserWarning):
    """A check at ``level = "warn"`` over its limit (or grown past its
    tolerance): reported, the test passes."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memgate")
    for name, metavar, help_text in _OPTIONS:
        flag = "--memgate-" + name.replace("_", "-")
        group.addoption(flag, metavar=metavar, default=None, help=f"{help_text} (ini: memgate_{name})")
        parser.addini(f"memgate_{name}", help_text, default=None)
    group.addoption(
        "--memgate-keep-all",
        action="store_true",
        default=None,
        help="with --memgate-keep: keep every marked test's snapshot, passing or not (ini: memgate_keep_all)",
    )
    parser.addini("memgate_keep_all", "keep every marked test's snapshot", type="bool", default=False)
    group.addoption(
        "--memgate-default-budget",
        metavar="KEYWORDS",
        default=None,
        help="budget of every test, e.g. 'allocated_peak=2 GiB, oom_events=0'; a marker's "
        "keywords override it (ini: memgate_default_budget)",
    )
    parser.addini("memgate_default_budget", "budget of every test (keyword=value, ...)", default=None)
    group.addoption(
        "--memgate-github",
        action="store_true",
        default=False,
        help="append each @pytest.mark.memgate test's Markdown report to GITHUB_STEP_SUMMARY "
        "and its outputs to GITHUB_OUTPUT (off: neither is written)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "memgate(**budget): record the test's allocator history and gate it like "
        "`memgate check` (e.g. allocated_peak='2 GiB', baseline='golden/')",
    )
    config.stash[_results] = []
    config.stash[_unjudged] = []
    text = config.getoption("memgate_default_budget") or config.getini("memgate_default_budget")
    try:
        config.stash[_default] = default_budget(str(text)) if text else {}
    except ValueError as e:
        raise pytest.UsageError(f"memgate default budget {text!r}: {e}") from None


def default_budget(text: str) -> Dict[str, Any]:
    """``"allocated_peak=2 GiB, oom_events=0"`` as keywords: a whole
    number or ``true``/``false`` as one, anything else as text."""
    out: Dict[str, Any] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        key, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not key or not value:
            raise ValueError(f"{part!r} is not keyword=value")
        if key in out:
            raise ValueError(f"{key!r} is given twice")
        if re.fullmatch(r"-?[0-9]+", value):
            out[key] = int(value)
        elif value.lower() in ("true", "false"):
            out[key] = value.lower() == "true"
        else:
            out[key] = value
    if not out:
        raise ValueError("names no keyword")
    return out


def _budget_of(item: pytest.Item) -> Optional[Dict[str, Any]]:
    """The session's default budget with the marker's keywords over it;
    `None` for a test with neither."""
    marker = item.get_closest_marker("memgate")
    default = item.config.stash.get(_default, {})
    if marker is None and not default:
        return None
    keywords = dict(default)
    if marker is not None:
        keywords.update(marker.kwargs)
    return keywords


def _setting(config: pytest.Config, name: str) -> Optional[Path]:
    """An option's directory, else its ini value (relative to the ini file)."""
    value = config.getoption(f"memgate_{name}")
    if value:
        return Path(value)
    ini = config.getini(f"memgate_{name}")
    if not ini:
        return None
    base = config.inipath.parent if config.inipath else config.rootpath
    return base / str(ini)


def _keep_all(config: pytest.Config) -> bool:
    value = config.getoption("memgate_keep_all")
    return bool(value) if value is not None else bool(config.getini("memgate_keep_all"))


def node_name(nodeid: str) -> str:
    """A file name for a test: its node id with every character but
    letters, digits, ``.``, ``-`` and ``_`` made ``_`` (no glob
    character, so the name is never a pattern; shortened past 120), then ``-`` and 8 hex digits of the
    id's SHA-256, so two ids never share a name."""
    readable = re.sub(r"[^A-Za-z0-9._\-]", "_", nodeid).strip("._")[:_NAME_LIMIT]
    digest = hashlib.sha256(nodeid.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}"


def _marker_problems(item: pytest.Item) -> List[str]:
    marker = item.get_closest_marker("memgate")
    if marker is not None and marker.args:
        return [f"takes keywords only (e.g. allocated_peak='2 GiB'), not the positional {marker.args!r}"]
    keywords = _budget_of(item)
    if keywords is None:
        return []
    here = Path(str(item.path)).parent
    try:
        validated_document(keywords, name=node_name(item.nodeid), snapshots=["rank*.pickle"], here=here)
    except BudgetError as e:
        return e.problems
    return []


def _budget_source(item: pytest.Item) -> str:
    """Where a test's budget is written, for its problems."""
    if item.get_closest_marker("memgate") is None:
        return "the memgate default budget"
    return "@pytest.mark.memgate"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: List[pytest.Item]) -> None:
    problems = [f"{item.nodeid}: {_budget_source(item)}: {p}" for item in items for p in _marker_problems(item)]
    if problems:
        raise pytest.UsageError("\n".join(problems))


def explanation(verdict: Verdict, top: int = _TOP_SITES) -> str:
    """check's text, each failed check's headroom, then per failing
    device the sites that grew most."""
    lines = [verdict.text.rstrip()]
    shown: List[str] = []
    for where, c in _judged(verdict):
        if c.status == "fail":
            lines += _judged_lines(where, c)
    for target in verdict.targets:
        for snapshot in target.snapshots:
            for device in snapshot.devices:
                if not any(c.status == "fail" for c in device.checks):
                    continue
                grown = device.growing_sites(top)
                shown += [s["site"] for s in grown]
                if grown:
                    lines.append(f"top growing sites, {_shown(snapshot.name)} dev{device.device}:")
                    for site in grown:
                        delta = site["current"] - site["baseline"]
                        was, now = size(site["baseline"]), size(site["current"])
                        lines.append(f"  +{size(delta)}  {_shown(site['site'])}  ({was} -> {now})")
                    continue
                # No baseline to grow from: the biggest sites at the peak.
                live = sorted(
                    (s for s in device.sites or [] if s.get("current")),
                    key=lambda s: s["current"],
                    reverse=True,
                )[:top]
                shown += [s["site"] for s in live]
                if live:
                    lines.append(f"top sites at the peak, {_shown(snapshot.name)} dev{device.device}:")
                    lines += [f"  {size(s['current'])}  {_shown(s['site'])}" for s in live]
    return "\n".join(lines + _no_story_notes(shown))


def _no_story_notes(shown: List[str]) -> List[str]:
    """`note: pre-trace: memory live since …` for each name of memory with
    no story among the sites shown (docs/figures.md#memory-with-no-story),
    in memgate's own words."""
    return [f"note: {name}: {meaning}" for name, meaning in _native.no_story() if name in shown]


def _shown(text: object) -> str:
    """A name from a snapshot or a test as one terminal line: control and
    other unprintable characters written as escapes."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in str(text))


def _judged_lines(where: str, c: Check) -> List[str]:
    """The check's figure, then one line per headroom, each naming what it
    is against (the budget, the baseline's tolerance)."""
    head = f"{where} {_shown(c.id)}: {amount(c, c.current)}"
    return [head] + [f"  {h}" for h in headroom_lines(c)]


def _judged(verdict: Verdict) -> List[Tuple[str, Check]]:
    out = []
    for target in verdict.targets:
        for snapshot in target.snapshots:
            for device in snapshot.devices:
                for c in device.checks:
                    if c.status not in ("skipped", "reported"):
                        out.append((f"{_shown(snapshot.name)} dev{device.device}", c))
    return out


def _save_baseline(snapshot: Path, directory: Path, name: str, scratch: Path) -> None:
    written = summarize(snapshot, scratch / "summary")
    directory.mkdir(parents=True, exist_ok=True)
    for summary_file in sorted((scratch / "summary").glob("*.json")):
        shutil.copyfile(summary_file, directory / f"{name}.json")
    if len(written) != 1:  # record() writes one snapshot per process
        raise MemgateError(2, [f"{snapshot}: {len(written)} summaries, expected one"])


def _keep(snapshot: Path, directory: Path, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    kept = directory / f"{name}.pickle"
    shutil.copyfile(snapshot, kept)
    env = environment_path(snapshot)
    if env.is_file():
        shutil.copyfile(env, environment_path(kept))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("memgate") is not None and accelerator() is None:
        pytest.skip("memgate: no CUDA or Ascend NPU device (torch.cuda / torch_npu) to record")


def _record_figures(item: pytest.Item, verdict: Verdict) -> None:
    """The test's figures as JUnit properties (what ``record_property``
    adds to): the verdict, then each judged check's value and status."""
    item.user_properties.append(("memgate.verdict", verdict.verdict))
    for target in verdict.targets:
        for snapshot in target.snapshots:
            for device in snapshot.devices:
                for c in device.checks:
                    if c.status in ("skipped", "reported"):
                        continue
                    key = f"memgate.dev{device.device}.{_shown(c.id)}"
                    item.user_properties.append((key, c.current))
                    item.user_properties.append((f"{key}.status", c.status))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    budget = _budget_of(item)
    if budget is None:
        return (yield)
    config = item.config
    if accelerator() is None:
        # Only an unmarked test gets here (a marked one was skipped).
        config.stash[_unjudged].append(item.nodeid)
        return (yield)
    here = Path(str(item.path)).parent
    name = node_name(item.nodeid)
    keywords: Dict[str, Any] = budget
    baselines = _setting(config, "baselines")
    if baselines is not None and "baseline" not in keywords:
        own = baselines / f"{name}.json"
        if own.is_file():
            keywords["baseline"] = str(own.resolve())
        else:
            warnings.warn(MemgateWarning(f"memgate: no baseline {own} (write it with --memgate-save-baselines)"))
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch_dir:
        scratch = Path(scratch_dir)
        with record(scratch / "snapshots") as recording:
            result = yield
        try:
            validated_document(keywords, name=name, snapshots=[str(recording.path)], here=here)
        except BudgetError as e:
            pytest.fail("memgate: " + "\n".join(e.problems), pytrace=False)
        try:
            verdict = check(
                snapshots=[str(recording.path)],
                budget=keywords,
                name=name,
                budget_dir=here,
                github=bool(config.getoption("memgate_github")),
            )
        except MemgateError as e:
            pytest.fail(f"memgate could not judge (exit {e.exit_code}):\n{e.message}", pytrace=False)
        config.stash[_results].append((item.nodeid, verdict))
        _record_figures(item, verdict)
        save = _setting(config, "save_baselines")
        if save is not None:
            _save_baseline(recording.path, save, name, scratch)
        keep = _setting(config, "keep")
        if keep is not None and (not verdict.passed or _keep_all(config)):
            _keep(recording.path, keep, name)
        for where, c in _judged(verdict):
            if c.status == "warn":
                warnings.warn(MemgateWarning("memgate: " + "\n".join(_judged_lines(where, c))))
        if not verdict.passed:
            pytest.fail(explanation(verdict), pytrace=False)
    return result


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    results = config.stash.get(_results, [])
    unjudged = config.stash.get(_unjudged, [])
    if not results and not unjudged:
        return
    terminalreporter.section("memgate")
    if unjudged:
        terminalreporter.write_line(
            f"{len(unjudged)} test(s) not judged by the default budget: no CUDA or Ascend NPU device to record"
        )
    for nodeid, verdict in results:
        terminalreporter.write_line(f"{_shown(nodeid)}: {verdict.verdict}")
        for where, c in _judged(verdict):
            first, *rest = _judged_lines(where, c)
            terminalreporter.write_line(f"  {c.status:<5} {first}")
            for line in rest:
                terminalreporter.write_line(f"        {line}")
