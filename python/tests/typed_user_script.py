"""What a user writes, checked by `mypy --strict` (tests/test_typing.py)."""

from __future__ import annotations

from typing import List

import memgate


def gate(snapshot: str) -> List[str]:
    with memgate.record("snapshots", summarize=True) as rec:
        pass
    report = memgate.profile(rec.path, rules={"attn": "attention", "hccl": "hccl"}, group_by="annotation")
    axis: memgate.XAxis = "entries"
    memgate.diff(snapshot, rec.path, html="diff.html", x=axis)
    device = report.snapshots[0].devices[0]
    peak: int = device.figures["allocated_peak"] + device.figures.allocated_peak
    categories = device.categories
    attn: int = categories.at_allocated_peak["attn"] if categories is not None else 0
    verdict = memgate.check(
        snapshots=[snapshot],
        budget={"allocated_peak": "2 GiB", "phase": {"Optimizer.step#AdamW.step": {"allocated_peak": "1 GiB"}}},
    )
    status: memgate.Status = verdict.verdict
    limit = memgate.parse_size("8 GiB")
    return [str(f) for f in verdict.failures()] + [status, str(peak + limit + attn)]
