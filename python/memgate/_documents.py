"""Typed views of memgate's JSON documents (the ``--format json`` output).

Each class is a frozen dataclass built from one JSON object: keys are
kebab-case in JSON and snake_case here (``allocated-peak`` ->
``allocated_peak``); a key the document lacks is ``None``. Every other JSON
object, at any depth, is a :class:`Record`: a ``dict`` with memgate's keys
(kebab-case ids, category and phase names as written) whose keys are also
reachable by their snake_case spelling, as an attribute or an item
(``device.figures.allocated_peak``, ``device.categories.at_allocated_peak``,
``device.figures["allocated_peak"]`` are ``…["allocated-peak"]``). The
closed sets are ``Literal`` types (:data:`Status`).
``to_dict()`` returns the JSON object the instance was built from, every key
included, even those this version of the classes does not name.
"""

from __future__ import annotations

import copy
import dataclasses
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple

__all__ = [
    "Failure",
    "Figures",
    "Iterations",
    "Record",
    "Status",
    "AnalysedDevice",
    "AnalysedSnapshot",
    "Check",
    "CheckedDevice",
    "CheckedSnapshot",
    "Delta",
    "DeviceDiff",
    "DiffReport",
    "InspectReport",
    "PeakReport",
    "PhasesDevice",
    "PhasesReport",
    "PhasesSnapshot",
    "ProfileReport",
    "SiteDelta",
    "Summary",
    "RanksVerdict",
    "TargetVerdict",
    "Verdict",
]


#: A check's, a snapshot's, a target's and the run's status.
Status = Literal["reported", "pass", "skipped", "warn", "waived", "fail", "error"]


class Record(Dict[str, Any]):
    """A JSON object as memgate wrote it (a ``dict``, kebab-case keys),
    each key also reachable by its snake_case spelling: as an attribute
    (``r.at_allocated_peak``) or an item (``r["at_allocated_peak"]``). A
    ``dict`` method's name is the method (``r.items()``); its key is
    ``r["items"]``. Nested objects are Records too."""

    def __missing__(self, key: str) -> Any:
        kebab = key.replace("_", "-")
        if kebab != key and dict.__contains__(self, kebab):
            return dict.__getitem__(self, kebab)
        raise KeyError(key)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no key {name!r} (nor {name.replace('_', '-')!r}) in this record") from None

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (
            isinstance(key, str) and dict.__contains__(self, key.replace("_", "-"))
        )


def _records(value: Any) -> Any:
    """Every JSON object in ``value`` as a :class:`Record`."""
    if isinstance(value, dict):
        return Record((k, _records(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_records(v) for v in value]
    return value


class Figures(Record):
    """A device's figures, keyed by memgate's kebab-case ids, which take
    their snake_case spelling too: ``figures.allocated_peak``,
    ``figures["allocated_peak"]``."""


def _figures(value: Any) -> Figures:
    return Figures(value)


def _list_of(cls: Any) -> Callable[[Any], Any]:
    return lambda values: [cls.from_dict(v) for v in values]


def _of(convert: Optional[Callable[[Any], Any]] = None, key: Optional[str] = None) -> Any:
    """A field read from JSON key ``key`` (default: the kebab-case name)."""
    return field(metadata={"convert": convert, "key": key})


class _Document:
    """from_dict / to_dict shared by every document class."""

    @classmethod
    def from_dict(cls, data: Dict[str, Any], **extra: Any) -> Any:
        """Builds the instance from a JSON object; ``extra`` sets the fields
        that are not in the JSON (``Verdict.exit_code`` and ``text``)."""
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__} is built from a JSON object, not {type(data).__name__}")
        values = dict(extra)
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.metadata.get("skip"):
                continue
            key = f.metadata.get("key") or f.name.replace("_", "-")
            value = data.get(key)
            convert = f.metadata.get("convert")
            if convert is not None and value is not None:
                value = convert(value)
            values[f.name] = value
        obj = cls(**values)
        object.__setattr__(obj, "_source", data)
        return obj

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object, as memgate wrote it."""
        source = getattr(self, "_source", None)
        if source is not None:
            return copy.deepcopy(source)
        out: Dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            if f.metadata.get("skip"):
                continue
            key = f.metadata.get("key") or f.name.replace("_", "-")
            out[key] = _plain(getattr(self, f.name))
        return out


def _plain(value: Any) -> Any:
    if isinstance(value, _Document):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return copy.deepcopy(value)


# --- peak, profile, summarize: figures per device --------------------------


@dataclass(frozen=True)
class AnalysedDevice(_Document):
    """One device's figures (ids as in ``memgate.toml``), categories, and
    the stacks and sites live at the peak."""

    device: int = _of()
    figures: Figures = _of(_figures)
    # Figures read as a share of another, as a fraction of it:
    # ``cached-free-at-reserved-peak`` of the reserved peak
    # (docs/figures.md#cached-free-at-reserved-peak).
    shares: Optional[Record] = _of(_records)
    categories: Optional[Record] = _of(_records)
    peak_entry: Optional[Record] = _of(_records)
    peak_time_us: Optional[Record] = _of(_records)
    trace_complete: Optional[bool] = _of()
    stacks_at_peak: Optional[List[Record]] = _of(_records)
    sites_at_peak: Optional[List[Record]] = _of(_records)
    time: Optional[Record] = _of(_records)
    peak_phase: Optional[Record] = _of(_records)
    oom: Optional[List[Record]] = _of(_records)
    window: Optional[Record] = _of(_records)
    # The stacks live at the peak ``peak(at=…)`` names.
    stacks_at_moment: Optional[Record] = _of(_records)
    # Inconsistencies found while analysing (the figures are still given).
    warnings: Optional[List[str]] = _of()
    # Where it was recorded: allocator settings, torch generation, and what
    # record() wrote beside the snapshot (docs/figures.md#environment).
    environment: Optional[Dict[str, Any]] = _of()
    # Repeated runs folded into one (``summarize --repeats``): each figure's
    # runs, min, median, max and statistic, by figure id (docs/gate.md).
    spreads: Optional[Dict[str, Any]] = _of()


@dataclass(frozen=True)
class AnalysedSnapshot(_Document):
    path: str = _of()
    devices: List[AnalysedDevice] = _of(_list_of(AnalysedDevice))
    # The devices a --window places nothing on: {device, window, problem}.
    window_not_placed: Optional[List[Record]] = _of(_records)


def _figure_metrics(snapshots: List[AnalysedSnapshot]) -> Dict[str, float]:
    """``SNAPSHOT/deviceN/FIGURE`` → value, the snapshot as its path given."""
    return {
        f"{_escaped(s.path)}/device{d.device}/{figure}": value
        for s in snapshots
        for d in s.devices
        for figure, value in d.figures.items()
        if value is not None
    }


@dataclass(frozen=True)
class PeakReport(_Document):
    """``memgate peak --format json``."""

    schema_version: int = _of(key="schema_version")
    snapshots: List[AnalysedSnapshot] = _of(_list_of(AnalysedSnapshot))

    def metrics(self) -> Dict[str, float]:
        """Every figure as a flat ``{SNAPSHOT/deviceN/FIGURE: value}`` dict
        for W&B, MLflow or TensorBoard (docs/dashboards.md)."""
        return _figure_metrics(self.snapshots)


@dataclass(frozen=True)
class ProfileReport(_Document):
    """``memgate profile --format json``."""

    schema_version: int = _of(key="schema_version")
    snapshots: List[AnalysedSnapshot] = _of(_list_of(AnalysedSnapshot))


@dataclass(frozen=True)
class Summary(_Document):
    """One golden summary file (``memgate summarize``)."""

    schema_version: int = _of(key="schema_version")
    kind: str = _of()
    provenance: Record = _of(_records)
    devices: List[AnalysedDevice] = _of(_list_of(AnalysedDevice))


# --- inspect ----------------------------------------------------------------


@dataclass(frozen=True)
class InspectReport(_Document):
    """``memgate inspect --format json``; each snapshot stays a dict."""

    schema_version: int = _of(key="schema_version")
    snapshots: List[Record] = _of(_records)


# --- phases -----------------------------------------------------------------


@dataclass(frozen=True)
class Iterations(_Document):
    """A device's iterations: what starts one, each one (``items``, cut at
    20 unless ``phases(all=True)``), the steady-state peak and the leak."""

    boundary: str = _of()
    items: List[Record] = _of(_records)
    steady_state_peak: Optional[int] = _of()
    leak: Optional[Record] = _of(_records)


@dataclass(frozen=True)
class PhasesDevice(_Document):
    """One device of ``memgate phases``: the summary per name, then each
    list cut at 20 (``phases(all=True)``: every item) with the count of
    the rest (``*_left_out``)."""

    device: int = _of()
    summary: List[Record] = _of(_records)
    summary_left_out: int = _of()
    annotations: List[Record] = _of(_records)
    annotations_left_out: int = _of()
    phases: List[Record] = _of(_records)
    phases_left_out: int = _of()
    iterations: Optional[Iterations] = _of(Iterations.from_dict)
    iterations_left_out: int = _of()
    warnings: Optional[List[str]] = _of()


@dataclass(frozen=True)
class PhasesSnapshot(_Document):
    path: str = _of()
    devices: List[PhasesDevice] = _of(_list_of(PhasesDevice))


@dataclass(frozen=True)
class PhasesReport(_Document):
    """``memgate phases --format json``."""

    schema_version: int = _of(key="schema_version")
    snapshots: List[PhasesSnapshot] = _of(_list_of(PhasesSnapshot))


# --- diff -------------------------------------------------------------------


@dataclass(frozen=True)
class Delta(_Document):
    """A figure or category: base, new, and the change."""

    id: str = _of()
    base: Optional[int] = _of()
    new: Optional[int] = _of()
    delta: Optional[int] = _of()
    percent: Optional[float] = _of()


@dataclass(frozen=True)
class SiteDelta(_Document):
    site: str = _of()
    change: str = _of()
    base: Optional[int] = _of()
    new: Optional[int] = _of()
    delta: Optional[int] = _of()


@dataclass(frozen=True)
class DeviceDiff(_Document):
    device: int = _of()
    in_base: bool = _of()
    in_new: bool = _of()
    # The allocated and dynamic peaks that moved, both sides explained.
    peak_moved: Optional[List[Record]] = _of(_records)
    figures: List[Delta] = _of(_list_of(Delta))
    categories: List[Delta] = _of(_list_of(Delta))
    sites: List[SiteDelta] = _of(_list_of(SiteDelta))


@dataclass(frozen=True)
class DiffReport(_Document):
    """``memgate diff --format json``."""

    schema_version: int = _of(key="schema_version")
    base: str = _of()
    new: str = _of()
    devices: List[DeviceDiff] = _of(_list_of(DeviceDiff))


# --- check ------------------------------------------------------------------


@dataclass(frozen=True)
class Check(_Document):
    """One judged figure: ``status`` is pass, warn, fail, error, reported (no budget
    and no baseline: given, not judged) or skipped (a device not judged)."""

    id: str = _of()
    status: Status = _of()
    unit: Optional[Literal["bytes", "count"]] = _of()
    current: Optional[float] = _of()
    baseline: Optional[float] = _of()
    budget: Optional[float] = _of()
    tolerance: Optional[float] = _of()
    findings: List[Record] = _of(_records)
    config_line: Optional[Record] = _of(_records)
    budget_written: Optional[str] = _of()
    """The budget as the budget file (or mapping) wrote it, e.g. ``"0.2 GB"``."""
    headroom: Optional[Record] = _of(_records)
    """``left`` (in the check's unit) and ``fraction_used`` of the budget."""
    echo_of: Optional[str] = _of()
    """The id of the check whose finding this one moved with (same bytes, same peak)."""
    regression: Optional[Record] = _of(_records)
    """On a finding's lead check: the figures that moved together, the change and its cause."""


@dataclass(frozen=True)
class CheckedDevice(_Document):
    device: int = _of()
    trace_complete: Optional[bool] = _of()
    checks: List[Check] = _of(_list_of(Check))
    categories: Optional[Any] = _of(_records)
    sites: Optional[List[Record]] = _of(_records)
    peak_phase: Optional[Record] = _of(_records)
    oom: Optional[List[Record]] = _of(_records)
    window: Optional[Record] = _of(_records)
    warnings: Optional[List[str]] = _of()

    def growing_sites(self, top: int = 5) -> List[Record]:
        """The sites that grew most over the baseline, largest first."""
        grown = []
        for site in self.sites or []:
            base, current = site.get("baseline"), site.get("current")
            if base is not None and current is not None and current > base:
                grown.append(site)
        grown.sort(key=lambda s: s["current"] - s["baseline"], reverse=True)
        return grown[:top]


@dataclass(frozen=True)
class CheckedSnapshot(_Document):
    name: str = _of()
    path: Optional[str] = _of()
    status: Status = _of()
    baseline: Optional[str] = _of()
    # Why the snapshot could not be judged (status ``error``).
    error: Optional[str] = _of()
    devices: List[CheckedDevice] = _of(_list_of(CheckedDevice))


@dataclass(frozen=True)
class RanksVerdict(_Document):
    """A target's figures across its ranks (docs/ranks.md): the rank
    table (``ranks``, ``groups``) and the checks on it."""

    status: Status = _of()
    figures: List[str] = _of()
    ranks: List[Dict[str, Any]] = _of()
    groups: List[Dict[str, Any]] = _of()
    checks: List[Check] = _of(_list_of(Check))


@dataclass(frozen=True)
class TargetVerdict(_Document):
    name: str = _of()
    status: Status = _of()
    snapshots: List[CheckedSnapshot] = _of(_list_of(CheckedSnapshot))
    # With `[target.ranks]` (the marker's and check()'s `ranks=`).
    ranks: Optional[RanksVerdict] = _of(RanksVerdict.from_dict)


@dataclass(frozen=True)
class Verdict(_Document):
    """``memgate check --json``, with the exit code ``check`` returned and
    its terminal text (one line per failed or warned check)."""

    schema_version: int = _of(key="schema_version")
    kind: str = _of()
    verdict: Status = _of()
    generated_at: Optional[int] = _of()
    config: Optional[str] = _of()
    tolerance: Optional[float] = _of()
    noise_floor: Optional[int] = _of()
    counts: Record = _of(_records)
    targets: List[TargetVerdict] = _of(_list_of(TargetVerdict))
    # Every [[waiver]] and what became of it (docs/gate.md#waivers).
    waivers: Optional[List[Record]] = _of(_records)
    exit_code: int = field(default=0, metadata={"key": None, "skip": True})
    text: str = field(default="", metadata={"key": None, "skip": True})

    @property
    def passed(self) -> bool:
        """What exit code 0 means: no check failed (warnings allowed)."""
        return self.exit_code == 0

    def metrics(self) -> Dict[str, float]:
        """Every measured figure of the run as a flat ``{name: value}`` dict
        for W&B, MLflow or TensorBoard, named as ``check --bencher`` and
        ``--benchmark-json`` name them: ``TARGET/SNAPSHOT/deviceN/FIGURE``
        (docs/dashboards.md). The ``baseline`` and ``window`` checks measure
        nothing, and a figure that is only a lower bound is left out."""
        out: Dict[str, float] = {}
        for t in self.targets:
            for s in t.snapshots:
                for d in s.devices:
                    for c in d.checks:
                        if c.id in ("baseline", "window") or c.current is None or _lower_bound(c):
                            continue
                        n, snapshot = 1, _escaped(s.name)
                        while True:
                            name = f"{_escaped(t.name)}/{snapshot}/device{d.device}/{_escaped(c.id)}"
                            if name not in out:
                                break
                            n += 1
                            snapshot = f"{_escaped(s.name)} ({n})"
                        out[name] = c.current
        return out

    def failures(self, *, warnings: bool = False) -> List["Failure"]:
        """Every failed check (and warned one with ``warnings=True``), and
        every snapshot that could not be judged, in report order."""
        wanted: Tuple[str, ...] = ("fail", "error", "warn") if warnings else ("fail", "error")
        out: List[Failure] = []
        for t in self.targets:
            for s in t.snapshots:
                if s.status == "error" and not s.devices:
                    out.append(Failure(t.name, s.name, None, None, s.error))
                for d in s.devices:
                    out += [Failure(t.name, s.name, d.device, c, None) for c in d.checks if c.status in wanted]
            if t.ranks is not None:
                # The checks across ranks, as the reports name them.
                out += [Failure(t.name, "ranks", None, c, None) for c in t.ranks.checks if c.status in wanted]
        return out


def _lower_bound(c: Check) -> bool:
    """Whether the check's current value is only a lower bound."""
    return any(f.get("kind") == "lower-bound" and f.get("current") for f in c.findings or [])


_BIDI = {0x200E, 0x200F, 0x061C, 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_SHORT = {"\t": "\\t", "\r": "\\r", "\n": "\\n"}


def _escaped(name: str) -> str:
    """A name as memgate's reports write it for a terminal: control and
    bidirectional characters as Rust escapes (``\\n``, ``\\u{1b}``)."""
    return "".join(
        _SHORT.get(ch) or f"\\u{{{ord(ch):x}}}"
        if unicodedata.category(ch) == "Cc" or ord(ch) in _BIDI
        else ch
        for ch in name
    )


@dataclass(frozen=True)
class Failure:
    """One entry of :meth:`Verdict.failures`: where, and the check (or,
    for a snapshot that could not be judged, ``check`` is ``None`` and
    ``error`` says why)."""

    target: str
    snapshot: str
    device: Optional[int]
    check: Optional[Check]
    error: Optional[str]

    def __str__(self) -> str:
        """Its line as the terminal tags it: ``FAIL budget/rank0 dev0
        allocated-peak: 212.10 MiB; headroom against the budget 208 MiB:
        -4.10 MiB (-2.0%)``, with the headroom against the baseline's
        tolerance too when there is a baseline."""
        from ._lines import check_line

        where = _escaped(f"{self.target}/{self.snapshot}") + (f" dev{self.device}" if self.device is not None else "")
        if self.check is None:
            return f"ERROR {where}: could not judge: {_escaped(str(self.error))}"
        return check_line(where, self.check)
