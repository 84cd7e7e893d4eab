"""The analysis commands as functions returning typed documents.

Each function runs the memgate command in-process (the Rust core, through
``memgate._native``) with ``--format json`` and parses what it printed, so
the figures are exactly the command line's. Snapshots are read as data:
nothing in a pickle is executed.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import (
    Any,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
    cast,
)

from . import _native
from ._budget import BudgetError, validated_document
from ._documents import (
    DiffReport,
    InspectReport,
    PeakReport,
    PhasesReport,
    ProfileReport,
    Summary,
    Verdict,
    _Document,
)

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Iterable[PathLike]]
#: A rule set (``"default"``, ``"mosaic"``), a rules file, or a mapping
#: category -> regex on the frames (tried in the mapping's order, as a
#: rules file's ``[categories]``).
Rules = Union[PathLike, Mapping[str, str]]
GroupBy = Literal["category", "annotation", "compile-context"]
#: The x axis an ``html`` page's charts open on (``--x``): ``"entries"``
#: (allocation order), ``"time"``, or ``"auto"`` (entries when the rise to
#: the allocated peak takes under 1% of the time axis). The page has a
#: control to switch.
XAxis = Literal["auto", "entries", "time"]
_X_AXES = ("auto", "entries", "time")

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

    Every argument the functions refuse is one too (exit code 2): a flag
    that is not a ``bool``, a number that is not an ``int``, a path that is
    not a ``str``, ``bytes`` or ``os.PathLike`` or is not UTF-8.

    A failed gate is not an error: ``check`` returns a :class:`Verdict`
    whose ``passed`` is false.
    """

    def __init__(self, exit_code: int, messages: Sequence[str], verdict: Optional[Verdict] = None):
        self.exit_code = exit_code
        self.messages = list(messages)
        self.verdict = verdict
        self.message = "\n".join(self.messages) or f"memgate exited {exit_code}"
        super().__init__(self.message)


def _refuse(what: str) -> MemgateError:
    return MemgateError(2, [what])


def _path(value: Any, what: str) -> str:
    """A path argument as the str memgate takes: UTF-8, or refused."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise _refuse(f"{what}: {value!r} is not a path (str, bytes or os.PathLike)")
    try:
        text = os.fsdecode(value)
        text.encode("utf-8")
    except (TypeError, UnicodeError):
        raise _refuse(f"{what}: {value!r} is not a UTF-8 path; memgate takes UTF-8 paths only") from None
    return text


def _text(value: Any, what: str) -> str:
    """A plain string argument (a rule set, an annotation name)."""
    if not isinstance(value, str):
        raise _refuse(f"{what}: {value!r} is not a str")
    try:
        value.encode("utf-8")
    except UnicodeError:
        raise _refuse(f"{what}: {value!r} is not valid UTF-8") from None
    return value


def _flag(value: Any, what: str) -> bool:
    """``True`` or ``False`` only: ``"false"`` is truthy, and a gate must
    not pass because a string said no."""
    if not isinstance(value, bool):
        raise _refuse(f"{what}: {value!r} is not True or False")
    return value


def _count(value: Any, what: str) -> str:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _refuse(f"{what}: {value!r} is not a whole number >= 0")
    return str(value)


def _paths(paths: Paths, what: str = "snapshot") -> List[str]:
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    try:
        items = list(paths)
    except TypeError:
        raise _refuse(f"{what}: {paths!r} is not a path or an iterable of paths") from None
    out = [_path(p, what) for p in items]
    if not out:
        raise MemgateError(2, ["no snapshot given"])
    return out


def _run(args: Sequence[str], github: bool = False, private: Sequence[str] = ()) -> Tuple[int, bytes, List[str]]:
    """The command's exit code, stdout and errors; the report files in
    ``private`` are the call's scratch files, written without a ``wrote``
    line on stderr (they are gone when the call returns)."""
    try:
        return _native.run(["memgate", *args], github, list(private))
    except (TypeError, ValueError) as e:  # every argument is checked above: a last guard
        raise MemgateError(2, [f"memgate could not take the arguments: {e}"]) from None


D = TypeVar("D", bound=_Document)


def _document(cls: Type[D], data: Any, **extra: Any) -> D:
    try:
        return cast(D, cls.from_dict(data, **extra))
    except (TypeError, KeyError, ValueError) as e:
        raise MemgateError(2, [f"memgate printed an unexpected {cls.__name__} document: {e}"]) from None


def _rules(rules: Any) -> List[str]:
    """The rule arguments: ``--rules`` with a name or path as given, or for
    a mapping ``--categories`` with its JSON (the mapping's order kept), so
    the rule set is named by its rules, never by a temporary file."""
    if not isinstance(rules, Mapping):
        return [f"--rules={_path(rules, 'rules')}"]
    for k, v in rules.items():
        _text(k, "rules key")
        _text(v, f"rules[{k!r}]")
    return [f"--categories={json.dumps(dict(rules), ensure_ascii=False)}"]


def _page(html: Optional[PathLike], x: Any) -> List[str]:
    """The ``--html`` page and its ``--x`` axis; an axis other than
    ``"auto"`` without a page is refused (it would change nothing)."""
    if not isinstance(x, str) or x not in _X_AXES:
        raise _refuse(f"x: {x!r} is not one of {', '.join(map(repr, _X_AXES))}")
    if html is None:
        if x != "auto":
            raise _refuse(f"x={x!r} chooses the axis of an html page: give html= as well")
        return []
    return [f"--html={_path(html, 'html')}", f"--x={x}"]


def _json_command(args: Sequence[str]) -> Any:
    code, out, errors = _run(args)
    if code != 0:
        raise MemgateError(code, errors)
    try:
        return json.loads(out)
    except ValueError as e:  # memgate always prints one document
        raise MemgateError(2, [f"memgate printed no JSON document: {e}"]) from None


def peak(paths: Paths, *, top: int = 10, rules: Rules = "default") -> PeakReport:
    """``memgate peak --format json PATHS``: the figures of every device of
    every snapshot (files or glob patterns, expanded by memgate)."""
    args = ["peak", "--format=json", f"--top={_count(top, 'top')}", *_rules(rules), "--"]
    return _document(PeakReport, _json_command(args + _paths(paths)))


def profile(
    paths: Paths,
    *,
    top: int = 10,
    rules: Rules = "default",
    group_by: GroupBy = "category",
    html: Optional[PathLike] = None,
    x: XAxis = "auto",
) -> ProfileReport:
    """``memgate profile --format json``; ``group_by`` is ``category``,
    ``annotation`` or ``compile-context``; ``rules`` a rule set, a rules
    file or a mapping category -> regex (Mosaic's custom profile).
    ``html`` also writes the interactive page there, its charts on the
    ``x`` axis (:data:`XAxis`)."""
    args = ["profile", "--format=json", f"--top={_count(top, 'top')}", *_rules(rules), *_page(html, x)]
    args += [f"--group-by={_text(group_by, 'group_by')}", "--"]
    return _document(ProfileReport, _json_command(args + _paths(paths)))


def phases(
    paths: Paths,
    *,
    annotation: Union[str, Sequence[str]] = (),
    iteration_boundary: Optional[str] = None,
    rules: PathLike = "default",
    all: bool = False,
) -> PhasesReport:
    """``memgate phases --format json``: the summary per name, annotation
    events, phase spans, iterations, steady-state peak and leak per
    iteration; each list cut at 20 with the count of the rest unless
    ``all``. ``annotation`` is one annotation name (a ``str``) or several."""
    args = ["phases", "--format=json", f"--rules={_path(rules, 'rules')}"]
    if _flag(all, "all"):
        args.append("--all")
    names = [annotation] if isinstance(annotation, str) else annotation
    try:
        names = list(names)
    except TypeError:
        raise _refuse(f"annotation: {annotation!r} is not a str or a sequence of str") from None
    for a in names:
        args.append(f"--annotation={_text(a, 'annotation')}")
    if iteration_boundary is not None:
        args.append(f"--iteration-boundary={_text(iteration_boundary, 'iteration_boundary')}")
    return _document(PhasesReport, _json_command(args + ["--"] + _paths(paths)))


def inspect(paths: Paths) -> InspectReport:
    """``memgate inspect --format json``: what is in each snapshot."""
    return _document(InspectReport, _json_command(["inspect", "--format=json", "--"] + _paths(paths)))


def diff(
    base: PathLike,
    new: PathLike,
    *,
    top: int = 20,
    rules: Rules = "default",
    html: Optional[PathLike] = None,
    x: XAxis = "auto",
) -> DiffReport:
    """``memgate diff --format json BASE NEW`` (snapshots or summaries);
    ``html`` also writes the comparison page there, its charts on the
    ``x`` axis (:data:`XAxis`)."""
    args = ["diff", "--format=json", f"--top={_count(top, 'top')}", *_rules(rules), *_page(html, x), "--"]
    return _document(DiffReport, _json_command(args + [_path(base, "base"), _path(new, "new")]))


def _json_files(directory: str) -> Dict[str, Tuple[int, int, int]]:
    """``NAME.json`` -> (device, inode, mtime) of each summary-named file."""
    found = {}
    try:
        with os.scandir(directory) as entries:
            for e in entries:
                if e.name.endswith(".json") and e.is_file(follow_symlinks=False):
                    st = e.stat(follow_symlinks=False)
                    found[e.name] = (st.st_dev, st.st_ino, st.st_mtime_ns)
    except FileNotFoundError:
        pass
    except OSError as e:
        raise MemgateError(2, [f"{directory}: {e.strerror}"]) from None
    return found


def summarize(
    paths: Paths,
    output: Optional[PathLike] = None,
    *,
    top: int = 50,
    rules: Rules = "default",
) -> List[Summary]:
    """``memgate summarize -o OUTPUT PATHS``: one summary per snapshot,
    written to ``OUTPUT/<stem>.json`` (the golden baseline files) and
    returned. Without ``output`` nothing is kept on disk."""
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch:
        target = _path(output, "output") if output is not None else scratch
        args = ["summarize", f"--output={target}", f"--top={_count(top, 'top')}"]
        args += [*_rules(rules), "--"]
        args += _paths(paths)
        # The files memgate wrote are the ones it (re)placed: its summaries
        # are written whole and renamed into place, so each is a new file.
        # (Its `wrote PATH` lines escape the names for a terminal.)
        before = _json_files(target)
        code, out, errors = _run(args)
        if code != 0:
            raise MemgateError(code, errors)
        after = _json_files(target)
        written = sorted(name for name, st in after.items() if before.get(name) != st)
        lines = [line for line in out.decode("utf-8", "replace").splitlines() if line.startswith("wrote ")]
        if len(written) != len(lines):
            raise MemgateError(
                2, [f"{target}: memgate wrote {len(lines)} summaries, {len(written)} files changed there"]
            )
        # memgate's order (the inputs'): where a name needs no escape the
        # line spells it; the others keep their sorted order after those.
        order = {line[len("wrote ") :]: i for i, line in enumerate(lines)}
        written.sort(key=lambda name: order.get(os.path.join(target, name), len(lines)))
        summaries = []
        for name in written:
            path = os.path.join(target, name)
            try:
                with open(path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError) as e:
                raise MemgateError(2, [f"{path}: cannot read the summary memgate wrote: {e}"]) from None
            summaries.append(_document(Summary, data))
        return summaries


_STDOUT = "-"


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
    github: bool = False,
    budget: Optional[Mapping[str, Any]] = None,
    name: str = "budget",
    budget_dir: Optional[PathLike] = None,
    html: Optional[PathLike] = None,
    x: XAxis = "auto",
) -> Verdict:
    """``memgate check``: judge the snapshots against ``config``'s budgets
    and baselines (``memgate.toml`` in the current directory by default).

    Returns the :class:`Verdict`; ``verdict.passed`` is what exit code 0
    means and ``verdict.exit_code`` is the command line's code (0 or 1).
    ``snapshots`` and ``baseline`` replace every target's; the reports
    are written where ``junit``, ``markdown`` and ``json_report`` say
    (``"-"``: printed on ``sys.stdout``, one report at most). The flags
    are ``bool``s. ``github=True`` does what the command line does on
    GitHub Actions: appends the Markdown to ``GITHUB_STEP_SUMMARY``, the
    outputs to ``GITHUB_OUTPUT`` and puts ``::error`` annotations in the
    text; without it the call writes neither file whatever the
    environment says. Raises :class:`MemgateError` when the gate could not
    judge (exit 2) or an argument is refused.

    ``budget`` replaces the file: a mapping of the pytest marker's
    keywords (``{"allocated_peak": "2 GiB", "phase": {"Optimizer.step":
    {"allocated_peak": "1 GiB"}}}``), validated by memgate (every problem
    raised at once, in those keyword names), judging ``snapshots``; only
    the figures it names are judged. ``name`` is its target's name.
    Relative paths in it are relative to ``budget_dir`` (default: the
    current directory). The mapping reaches memgate as data, read by the
    budget file's own reader: no file is written.

    ``html`` also writes the run's page there, its charts on the ``x``
    axis (:data:`XAxis`).
    """
    target_name = _text(name, "name")
    flags = {
        "--warn-only": _flag(warn_only, "warn_only"),
        "--require-baseline": _flag(require_baseline, "require_baseline"),
        "--comment-size": _flag(comment_size, "comment_size"),
    }
    github = _flag(github, "github")
    # option -> (parameter name, value)
    reports = {"junit": ("junit", junit), "markdown": ("markdown", markdown), "json": ("json_report", json_report)}
    to_stdout = [k for k, (_, v) in reports.items() if isinstance(v, str) and v == _STDOUT]
    if len(to_stdout) > 1:
        names = " and ".join(reports[k][0] for k in to_stdout)
        raise _refuse(f"only one report can go to stdout (`-`), not {names}")
    with tempfile.TemporaryDirectory(prefix="memgate-") as scratch:
        # The verdict is always read from a file (the report's, or one in
        # the scratch directory); a report for stdout is written there
        # first, then printed.
        paths = {}
        for k, (name, v) in reports.items():
            if k in to_stdout:
                paths[k] = os.path.join(scratch, f"stdout.{k}")
            elif v is not None:
                paths[k] = _path(v, name)
        json_path = paths.setdefault("json", os.path.join(scratch, "verdict.json"))
        args = ["check"] + [f"--{k}={v}" for k, v in paths.items()] + _page(html, x)
        if budget is not None:
            if config is not None:
                raise _refuse("check(): give a config file or a budget mapping, not both")
            if snapshots is None:
                raise _refuse("check(): a budget mapping needs the snapshots it judges")
            if not isinstance(budget, Mapping):
                raise _refuse(f"budget: {budget!r} is not a mapping")
            here = os.getcwd() if budget_dir is None else _path(budget_dir, "budget_dir")
            try:
                document = validated_document(budget, name=target_name, snapshots=_paths(snapshots), here=here)
            except BudgetError as e:
                raise MemgateError(2, e.problems) from None
            args.append(f"--budget-json={document}")
        if config is not None:
            args.append(f"--config={_path(config, 'config')}")
        if baseline is not None:
            args.append(f"--baseline={_path(baseline, 'baseline')}")
        args += [flag for flag, on in flags.items() if on]
        args.append("--")
        if snapshots is not None:
            args += _paths(snapshots)
        # The scratch files (the verdict read back, a report printed on
        # stdout) are removed with the directory: no `wrote` line names them.
        private = [p for p in paths.values() if os.path.dirname(p) == scratch]
        code, out, errors = _run(args, github, private)
        text = out.decode("utf-8", "replace")
        verdict = None
        if os.path.isfile(json_path):
            try:
                with open(json_path, encoding="utf-8") as f:
                    data = json.load(f)
            except (OSError, ValueError) as e:
                raise MemgateError(2, [f"{json_path}: cannot read the verdict memgate wrote: {e}"]) from None
            verdict = _document(Verdict, data, exit_code=code, text=text)
        for k in to_stdout:
            if os.path.isfile(paths[k]):
                with open(paths[k], encoding="utf-8", errors="replace") as f:
                    sys.stdout.write(f.read())
                sys.stdout.flush()
        if code not in (0, 1) or verdict is None:
            if not errors:
                # Could not judge a check (an unreadable snapshot is a status
                # in the verdict): the text says which.
                errors = [line for line in text.splitlines() if line.strip()]
            raise MemgateError(code if code not in (0, 1) else 2, errors, verdict)
        return verdict
