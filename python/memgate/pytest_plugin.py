"""pytest plugin (entry point ``pytest11``): a memory budget per test.

    @pytest.mark.memgate(allocated_peak="2 GiB", baseline="golden/")
    def test_train_step(): ...

The test runs under :func:`memgate.record`; its snapshot is then judged
like ``memgate check`` judges a target whose budget is the marker's figure
keywords (``allocated_peak`` is ``allocated-peak``, any figure id of
``memgate.toml``'s ``[target.budget]``). ``baseline``, ``tolerance``,
``noise_floor``, ``rules`` and ``key`` are the target's and defaults'
keys; relative paths are relative to the test file. A failed gate fails
the test with check's explanation and the sites that grew most. Without
torch, or with neither a CUDA device nor torch_npu's NPU, the test is
skipped and nothing is written. ``--memgate-github`` (off by default) also
appends each marked test's Markdown report to ``GITHUB_STEP_SUMMARY`` and
its outputs to ``GITHUB_OUTPUT``, as ``memgate check`` does on GitHub
Actions; without it no GitHub file is written whatever the environment
says. Needs pytest 8 (new-style hook wrappers).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ._api import MemgateError, check
from ._documents import Verdict
from ._record import accelerator, record

_DEFAULTS_KEYS = ("tolerance", "noise_floor", "rules")
_TARGET_KEYS = ("baseline", "key", "device")
_TOP_SITES = 5


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("memgate").addoption(
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


def _toml(value: Any) -> str:
    """A TOML value: strings and numbers, or a table {limit, level}."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"memgate marker: {value!r} is not a budget value")


def budget_file(name: str, snapshots: Path, here: Path, marker_kwargs: Dict[str, Any]) -> str:
    """The memgate.toml of one marked test."""
    defaults: List[str] = []
    target = [f"name = {_toml(name)}", f"snapshots = {_toml(str(snapshots / 'rank*.pickle'))}"]
    budget: List[str] = []
    for keyword, value in marker_kwargs.items():
        key = keyword.replace("_", "-")
        if keyword in ("baseline",):
            value = str(here / value)
        if keyword in _DEFAULTS_KEYS:
            if keyword == "rules" and value not in ("default", "mosaic"):
                value = str(here / value)
            defaults.append(f"{key} = {_toml(value)}")
        elif keyword in _TARGET_KEYS:
            target.append(f"{key} = {_toml(value)}")
        else:
            budget.append(f"{key} = {_toml(value)}")
    lines = []
    if defaults:
        lines += ["[defaults]", *defaults, ""]
    lines += ["[[target]]", *target, ""]
    if budget:
        lines += ["[target.budget]", *budget, ""]
    return "\n".join(lines)


def explanation(verdict: Verdict, top: int = _TOP_SITES) -> str:
    """check's text, then per failing device the sites that grew most."""
    lines = [verdict.text.rstrip()]
    for target in verdict.targets:
        for snapshot in target.snapshots:
            for device in snapshot.devices:
                if not any(c.status == "fail" for c in device.checks):
                    continue
                grown = device.growing_sites(top)
                if grown:
                    lines.append(f"top growing sites, {snapshot.name} dev{device.device}:")
                    for site in grown:
                        delta = site["current"] - site["baseline"]
                        was, now = _size(site["baseline"]), _size(site["current"])
                        lines.append(f"  +{_size(delta)}  {site['site']}  ({was} -> {now})")
                    continue
                # No baseline to grow from: the biggest sites at the peak.
                live = sorted(
                    (s for s in device.sites or [] if s.get("current")),
                    key=lambda s: s["current"],
                    reverse=True,
                )[:top]
                if live:
                    lines.append(f"top sites at the peak, {snapshot.name} dev{device.device}:")
                    lines += [f"  {_size(s['current'])}  {s['site']}" for s in live]
    return "\n".join(lines)


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"  # unreachable: GiB is the last unit


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("memgate") is not None and accelerator() is None:
        pytest.skip("memgate: no CUDA or Ascend NPU device (torch.cuda / torch_npu) to record")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):  # type: ignore[no-untyped-def]
    marker = item.get_closest_marker("memgate")
    if marker is None:
        return (yield)
    if marker.args:
        raise pytest.UsageError("@pytest.mark.memgate takes keywords only, e.g. allocated_peak='2 GiB'")
    here = Path(str(item.path)).parent
    name = re.sub(r"[^\w.\-\[\]]+", "_", item.nodeid)
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch:
        snapshots = Path(scratch) / "snapshots"
        with record(snapshots):
            result = yield
        config = Path(scratch) / "memgate.toml"
        config.write_text(budget_file(name, snapshots, here, dict(marker.kwargs)), encoding="utf-8")
        try:
            verdict = check(config=config, github=bool(item.config.getoption("memgate_github")))
        except MemgateError as e:
            pytest.fail(f"memgate could not judge (exit {e.exit_code}):\n{e.message}", pytrace=False)
        if not verdict.passed:
            pytest.fail(explanation(verdict), pytrace=False)
    return result
