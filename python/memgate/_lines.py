"""A judged check as the terminal reads it: its figure, its budget and its
baseline, and the headroom under each, named by what it is against.

A check may have two ceilings, the budget and the baseline plus its
tolerance, and so two headrooms; each line here names the one it gives
(``headroom against the budget``, ``headroom against the baseline's
tolerance``), so two figures are never read as one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:  # _documents formats its failures with these lines
    from ._documents import Check

__all__ = ["amount", "check_line", "headroom_lines", "size"]


def size(n: float) -> str:
    """Bytes as the terminal writes them: ``512 B``, ``212.10 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n} B"  # unreachable: GiB is the last unit


def amount(check: Check, value: Optional[float]) -> str:
    """A value in the check's unit (bytes or a count)."""
    if value is None:
        return "-"
    return size(value) if check.unit == "bytes" else f"{value:g}"


def _left(check: Check, ceiling: float) -> str:
    """What is left under ``ceiling`` (negative: over it), and as a share
    of it."""
    current = float(check.current or 0)
    left = ceiling - current
    sign = "+" if left >= 0 else "-"
    share = f" ({left / ceiling:+.1%})" if ceiling else ""
    return f"{sign}{amount(check, abs(left))}{share}"


def headroom_lines(check: Check) -> List[str]:
    """One phrase per ceiling the check has, each naming it:
    ``headroom against the budget 208 MiB: -4.10 MiB (-2.0%)`` and
    ``headroom against the baseline's tolerance (200.10 MiB +2%): …``.
    Empty without a current value or a ceiling."""
    if check.current is None:
        return []
    out = []
    if check.budget is not None:
        written = check.budget_written or amount(check, check.budget)
        out.append(f"headroom against the budget {written}: {_left(check, float(check.budget))}")
    if check.baseline is not None and check.tolerance is not None:
        ceiling = check.baseline * (1 + check.tolerance / 100)
        base = f"{amount(check, check.baseline)} +{check.tolerance:g}%"
        out.append(f"headroom against the baseline's tolerance ({base}): {_left(check, ceiling)}")
    return out


def check_line(where: str, check: Check) -> str:
    """``FAIL WHERE ID: CURRENT; headroom against the budget …; headroom
    against the baseline's tolerance …``: the check's status as the
    terminal tags it, its figure and each headroom, named."""
    from ._documents import _escaped

    head = f"{check.status.upper()} {where} {_escaped(check.id)}: "
    if check.current is None:
        return head + check.status
    return "; ".join([head + amount(check, check.current), *headroom_lines(check)])
