"""The analysis commands as functions returning typed documents.

Each function runs the memgate command in-process (the Rust core, through
``memgate._native``) with ``--format json`` and parses what it printed, so
the figures are exactly the command line's. Snapshots are read as data:
nothing in a pickle is executed.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from . import _native
from ._documents import (
    DiffReport,
    InspectReport,
    PeakReport,
    PhasesReport,
    ProfileReport,
    Summary,
    Verdict,
)

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Iterable[PathLike]]

__all__ = [
    "MemgateError",
    "check",
    "diff",
    "inspect",
    "peak",
    "phases",
    "profile",
    "summarize",
]


class MemgateError(Exception):
    """memgate could not judge: a bad argument or budget file, a missing,
    unreadable, truncated or non-snapshot input (the command line's exit
    code 2). ``exit_code`` is that code, ``messages`` the errors one by
    one (what the command line prints after ``error:``), and ``verdict``
    the :class:`Verdict` when ``check`` wrote one.

    A failed gate is not an error: ``check`` returns a :class:`Verdict`
    whose ``passed`` is false.
    """

    def __init__(self, exit_code: int, messages: Sequence[str], verdict: Optional[Verdict] = None):
        self.exit_code = exit_code
        self.messages = list(messages)
        self.verdict = verdict
        self.message = "\n".join(self.messages) or f"memgate exited {exit_code}"
        super().__init__(self.message)


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    out = [os.fsdecode(p) for p in paths]
    if not out:
        raise MemgateError(2, ["no snapshot given"])
    return out


def _run(args: Sequence[str]) -> Tuple[int, bytes, List[str]]:
    return _native.run(["memgate", *args])


def _json_command(args: Sequence[str]) -> dict:
    code, out, errors = _run(args)
    if code != 0:
        raise MemgateError(code, errors)
    try:
        return json.loads(out)
    except ValueError as e:  # memgate always prints one document
        raise MemgateError(2, [f"memgate printed no JSON document: {e}"]) from None


def peak(paths: Paths, *, top: int = 10, rules: str = "default") -> PeakReport:
    """``memgate peak --format json PATHS``: the figures of every device of
    every snapshot (files or glob patterns, expanded by memgate)."""
    args = ["peak", "--format", "json", "--top", str(top), "--rules", rules, "--"]
    return PeakReport.from_dict(_json_command(args + _paths(paths)))


def profile(
    paths: Paths,
    *,
    top: int = 10,
    rules: str = "default",
    group_by: str = "category",
) -> ProfileReport:
    """``memgate profile --format json``; ``group_by`` is ``category``,
    ``annotation`` or ``compile-context``."""
    args = ["profile", "--format", "json", "--top", str(top), "--rules", rules]
    args += ["--group-by", group_by, "--"]
    return ProfileReport.from_dict(_json_command(args + _paths(paths)))


def phases(
    paths: Paths,
    *,
    annotation: Sequence[str] = (),
    iteration_boundary: Optional[str] = None,
    rules: str = "default",
) -> PhasesReport:
    """``memgate phases --format json``: annotation events, phase spans,
    iterations, steady-state peak and leak per iteration."""
    args = ["phases", "--format", "json", "--rules", rules]
    for a in annotation:
        args += ["--annotation", a]
    if iteration_boundary is not None:
        args += ["--iteration-boundary", iteration_boundary]
    return PhasesReport.from_dict(_json_command(args + ["--"] + _paths(paths)))


def inspect(paths: Paths) -> InspectReport:
    """``memgate inspect --format json``: what is in each snapshot."""
    return InspectReport.from_dict(_json_command(["inspect", "--format", "json", "--"] + _paths(paths)))


def diff(base: PathLike, new: PathLike, *, top: int = 20, rules: str = "default") -> DiffReport:
    """``memgate diff --format json BASE NEW`` (snapshots or summaries)."""
    args = ["diff", "--format", "json", "--top", str(top), "--rules", rules, "--"]
    return DiffReport.from_dict(_json_command(args + [os.fsdecode(base), os.fsdecode(new)]))


def summarize(
    paths: Paths,
    output: Optional[PathLike] = None,
    *,
    top: int = 50,
    rules: str = "default",
) -> List[Summary]:
    """``memgate summarize -o OUTPUT PATHS``: one summary per snapshot,
    written to ``OUTPUT/<stem>.json`` (the golden baseline files) and
    returned. Without ``output`` nothing is kept on disk."""
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch:
        target = os.fsdecode(output) if output is not None else scratch
        args = ["summarize", "-o", target, "--top", str(top), "--rules", rules, "--"]
        code, out, errors = _run(args + _paths(paths))
        if code != 0:
            raise MemgateError(code, errors)
        summaries = []
        for line in out.decode("utf-8", "replace").splitlines():
            if line.startswith("wrote "):
                with open(line[len("wrote ") :], encoding="utf-8") as f:
                    summaries.append(Summary.from_dict(json.load(f)))
        return summaries


def check(
    config: Optional[PathLike] = None,
    snapshots: Optional[Paths] = None,
    baseline: Optional[PathLike] = None,
    *,
    junit: Optional[PathLike] = None,
    markdown: Optional[PathLike] = None,
    json_report: Optional[PathLike] = None,
    warn_only: bool = False,
    require_baseline: bool = False,
    comment_size: bool = False,
) -> Verdict:
    """``memgate check``: judge the snapshots against ``config``'s budgets
    and baselines (``memgate.toml`` in the current directory by default).

    Returns the :class:`Verdict`; ``verdict.passed`` is what exit code 0
    means and ``verdict.exit_code`` is the command line's code (0 or 1).
    ``snapshots`` and ``baseline`` replace every target's; the reports
    are written where ``junit``, ``markdown`` and ``json_report`` say.
    Raises :class:`MemgateError` when the gate could not judge (exit 2).
    """
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch:
        json_path = os.fsdecode(json_report) if json_report is not None else os.path.join(scratch, "verdict.json")
        args = ["check", "--json", json_path]
        if config is not None:
            args += ["--config", os.fsdecode(config)]
        if baseline is not None:
            args += ["--baseline", os.fsdecode(baseline)]
        if junit is not None:
            args += ["--junit", os.fsdecode(junit)]
        if markdown is not None:
            args += ["--markdown", os.fsdecode(markdown)]
        for flag, on in (
            ("--warn-only", warn_only),
            ("--require-baseline", require_baseline),
            ("--comment-size", comment_size),
        ):
            if on:
                args.append(flag)
        args.append("--")
        if snapshots is not None:
            args += _paths(snapshots)
        code, out, errors = _run(args)
        text = out.decode("utf-8", "replace")
        verdict = None
        if Path(json_path).is_file() and json_path != "-":
            with open(json_path, encoding="utf-8") as f:
                verdict = Verdict.from_dict(json.load(f), exit_code=code, text=text)
        if code not in (0, 1) or verdict is None:
            if not errors:
                # Could not judge a check (an unreadable snapshot is a status
                # in the verdict): the text says which.
                errors = [line for line in text.splitlines() if line.strip()]
            raise MemgateError(code, errors, verdict)
        return verdict
