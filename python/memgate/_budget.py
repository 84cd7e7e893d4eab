"""Budgets as Python values: the pytest marker's keywords and ``check(budget=…)``.

The keywords become the document ``memgate.toml`` holds (``defaults``,
``target``, ``categories``), passed as JSON to the Rust core, which reads it
with the budget file's own reader and validation (``_native.budget``; no
TOML text is written) and judges with it (``check --budget-json``): any
phase or category name works, and every problem is reported in the keyword
names the user wrote (``allocated_peak``, ``phase['Optimizer.step']['dynamic_peak']``).

Only the figures named are judged (with their baseline comparison when a
baseline is set); without any figure, category or phase keyword the
default figures are.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native

__all__ = ["BudgetError", "budget_document", "keyword_names", "parse_size", "validated_document"]

# keyword -> budget file key, by the table it goes to.
_DEFAULTS = {"tolerance": "tolerance", "noise_floor": "noise-floor"}
_TARGET = {
    "baseline": "baseline",
    "key": "key",
    "device": "device",
    "window": "window",
    "iteration_boundary": "iteration-boundary",
    "require_trace": "require-trace",
    "accept_lower_bounds": "accept-lower-bounds",
    "same_environment": "same-environment",
    "device_memory": "device-memory",
    "outside_allocator": "outside-allocator",
}
# `rules` is a rule set name, a rules file, or a mapping category -> regex.
_RULES = "rules"
_CATEGORY = "category"
_PHASE = "phase"
# `ranks` is the `[target.ranks]` table (docs/ranks.md), its keys in snake_case.
_RANKS = "ranks"
_RANKS_KEYS = {
    "figures": "figures",
    "imbalance": "imbalance",
    "heaviest": "heaviest",
    "stage_imbalance": "stage-imbalance",
    "stages": "stages",
}
_BUILT_IN_RULES = ("default", "mosaic")


def _snake(figure_id: str) -> str:
    return figure_id.replace("-", "_")


_ALL_IDS, _PHASE_IDS = _native.figure_ids()
#: snake_case keyword -> figure id (a keyword argument cannot be kebab-case).
FIGURES: Dict[str, str] = {_snake(f): f for f in _ALL_IDS}
PHASE_FIGURES: Dict[str, str] = {_snake(f): f for f in _PHASE_IDS}


def _figure(name: str, ids: Mapping[str, str]) -> Optional[str]:
    """The figure id a string key names in either spelling, as a keyword
    (``allocated_peak``) or as the TOML, JUnit and JSON write it
    (``allocated-peak``); ``None`` for no figure of ``ids``."""
    if "-" in name and "_" in name:
        return None
    return ids.get(_snake(name))


def keyword_names() -> List[str]:
    """Every keyword the marker (and ``check(budget=…)``) takes; a figure
    may also be spelt as its id (``"allocated-peak"``) where it is a
    string key."""
    return [*FIGURES, _CATEGORY, _PHASE, *_DEFAULTS, _RULES, *_TARGET, _RANKS]


class BudgetError(ValueError):
    """The budget mapping is wrong; ``problems`` lists each, in the
    keyword names written (``allocated_peek: unknown keyword …``)."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def parse_size(text: str) -> int:
    """A size as a budget writes it (``"8 GiB"``, ``"512 MB"``), in bytes,
    by memgate's own parser. ``ValueError`` when it is not a size."""
    if not isinstance(text, str):
        raise ValueError(f"{text!r} is not a size string such as '8 GiB'")
    return int(_native.parse_size(text))


def _unknown(name: str, known: Sequence[str], where: str) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"{where}{name}: unknown keyword{hint}; expected one of: {', '.join(known)}"


def _mapping(value: Any, keyword: str, what: str, problems: List[str]) -> Optional[Mapping[str, Any]]:
    if not isinstance(value, Mapping):
        problems.append(f"{keyword}={value!r}: must be a mapping of {what}")
        return None
    bad = [k for k in value if not isinstance(k, str)]
    if bad:
        problems.append(f"{keyword}: keys must be str, not {bad[0]!r}")
        return None
    return value


def _plain(value: Any) -> Any:
    """A mapping value as JSON takes it; a ``{limit, level}`` table too."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _phase_budget(
    phase: str, figures: Any, budget: Dict[str, Any], origin: Dict[str, str], problems: List[str]
) -> None:
    """One entry of the ``phase`` mapping into ``budget["phase"]``: its
    figures in either spelling (``allocated_peak``, ``allocated-peak``),
    each given once."""
    inner = _mapping(figures, f"phase[{phase!r}]", "figure -> size", problems)
    if inner is None:
        return
    out = budget.setdefault("phase", {}).setdefault(phase, {})
    where = f"phase[{phase!r}]: "
    for figure, limit in inner.items():
        key = _figure(figure, PHASE_FIGURES)
        if key is None:
            problems.append(_unknown(figure, list(PHASE_FIGURES), where))
            continue
        dotted = f"target.budget.phase.{json.dumps(phase, ensure_ascii=False)}.{key}"
        if key in out:
            problems.append(f"{where}{figure}: {key} is given twice (as {origin[dotted]} too)")
            continue
        out[key] = _plain(limit)
        origin[dotted] = f"phase[{phase!r}][{figure!r}]"


def budget_document(
    keywords: Mapping[str, Any],
    *,
    name: str,
    snapshots: Sequence[str],
    here: Union[str, "os.PathLike[str]"],
) -> Tuple[Dict[str, Any], Dict[str, str], List[str]]:
    """The ``memgate.toml`` document of ``keywords``, the keyword each of
    its dotted keys came from, and the problems found before validation
    (unknown keywords, mappings that are not). Relative paths are made
    relative to ``here``."""
    problems: List[str] = []
    origin: Dict[str, str] = {}
    defaults: Dict[str, Any] = {}
    target: Dict[str, Any] = {"name": name, "snapshots": list(snapshots)}
    budget: Dict[str, Any] = {}
    categories: Optional[Dict[str, Any]] = None
    here = os.fspath(here)
    known = keyword_names()
    for keyword, value in keywords.items():
        if value is None:
            problems.append(f"{keyword}=None: leave the keyword out instead")
        elif isinstance(keyword, str) and (key := _figure(keyword, FIGURES)) is not None:
            if key in budget:
                problems.append(f"{keyword}: {key} is given twice (as {origin[f'target.budget.{key}']} too)")
                continue
            budget[key] = _plain(value)
            origin[f"target.budget.{key}"] = keyword
        elif keyword == _CATEGORY:
            table = _mapping(value, keyword, "category name -> size", problems)
            if table is not None:
                budget["category"] = _plain(table)
                for c in table:
                    origin[f"target.budget.category.{c}"] = f"category[{c!r}]"
        elif keyword == _PHASE:
            table = _mapping(value, keyword, "phase name -> {figure: size}", problems)
            for phase, figures in (table or {}).items():
                _phase_budget(phase, figures, budget, origin, problems)
        elif keyword in _DEFAULTS:
            defaults[_DEFAULTS[keyword]] = _plain(value)
            origin[f"defaults.{_DEFAULTS[keyword]}"] = keyword
        elif keyword == _RULES:
            if isinstance(value, Mapping):
                rules = _mapping(value, keyword, "category name -> regex", problems)
                if rules is not None:
                    categories = _plain(rules)
                    for c in rules:
                        origin[f"categories.{c}"] = f"rules[{c!r}]"
            elif isinstance(value, (str, os.PathLike)):
                text = os.fspath(value)
                defaults["rules"] = text if text in _BUILT_IN_RULES else os.path.join(here, text)
                origin["defaults.rules"] = keyword
            else:
                problems.append(f"rules={value!r}: must be 'default', 'mosaic', a rules file or a mapping")
        elif keyword == _RANKS:
            table = _mapping(value, keyword, "ranks key -> value (docs/ranks.md)", problems)
            ranks: Dict[str, Any] = {}
            for k, v in (table or {}).items():
                if k not in _RANKS_KEYS:
                    problems.append(_unknown(k, list(_RANKS_KEYS), "ranks: "))
                    continue
                key = _RANKS_KEYS[k]
                if k == "figures" and isinstance(v, (list, tuple)):
                    # Figure ids in snake_case, as every other keyword.
                    v = [(_figure(f, FIGURES) or f) if isinstance(f, str) else f for f in v]
                ranks[key] = _plain(v)
                origin[f"target.ranks.{key}"] = f"ranks[{k!r}]"
            if table is not None:
                target["ranks"] = ranks
        elif keyword in _TARGET:
            key = _TARGET[keyword]
            if keyword == "baseline" and isinstance(value, (str, os.PathLike)):
                value = os.path.join(here, os.fspath(value))
            target[key] = _plain(value)
            origin[f"target.{key}"] = keyword
        else:
            problems.append(_unknown(keyword, known, ""))
    if budget:
        target["budget"] = budget
    if budget or categories:
        # The figures named, and no others (a category or phase budget
        # judges itself only).
        defaults["figures"] = []
    document: Dict[str, Any] = {}
    if defaults:
        document["defaults"] = defaults
    document["target"] = [target]
    if categories is not None:
        document["categories"] = categories
    return document, origin, problems


_PHASE_KEY = re.compile(r"^(target\.budget\.phase\.)(\".*\")\.([a-z-]+)$")


def _keyword_of(key: str, origin: Mapping[str, str]) -> str:
    if key in origin:
        return origin[key]
    m = _PHASE_KEY.match(key)
    if m:
        # The core quotes the name its own way; the same name, re-quoted.
        try:
            phase = json.loads(m.group(2))
        except ValueError:
            return key
        found = origin.get(f"{m.group(1)}{json.dumps(phase, ensure_ascii=False)}.{m.group(3)}")
        if found:
            return found
    return key


def validated_document(
    keywords: Mapping[str, Any],
    *,
    name: str,
    snapshots: Sequence[str],
    here: Union[str, "os.PathLike[str]"],
) -> str:
    """The budget document of ``keywords`` as JSON text (what ``check
    --budget-json`` takes), validated by memgate; raises
    :class:`BudgetError` listing every problem in keyword names."""
    document, origin, problems = budget_document(keywords, name=name, snapshots=snapshots, here=here)
    if problems:
        raise BudgetError(problems)
    try:
        text = json.dumps(document, allow_nan=False)
        errors = _native.budget(text, "budget", os.fspath(here))
    except (TypeError, ValueError) as e:  # a value JSON cannot carry (NaN, an object)
        raise BudgetError([f"not a budget value: {e}"]) from None
    if errors:
        raise BudgetError([f"{_keyword_of(k, origin)}: {m}" if k else m for k, m in errors])
    return text
