#!/usr/bin/env python3
"""Parse `memgate check --metrics` files with an independent OpenMetrics parser.

    python3 .ci/parse_metrics.py VERDICT FILE [VERDICT FILE ...]

Needs prometheus_client (in .ci/run's venv). For each file: it parses as
OpenMetrics (prometheus_client.openmetrics.parser), the state set
`memgate_verdict` is VERDICT (`none`: there is none, as from `peak`), every
sample's name and labels are unique, and every figure that has a baseline or
a limit also has a current value.
"""
import sys

from prometheus_client.openmetrics.parser import text_string_to_metric_families

LABELS = ("snapshot", "device", "figure")


def check(path, verdict):
    with open(path, encoding="utf-8") as f:
        families = {fam.name: fam for fam in text_string_to_metric_families(f.read())}
    if verdict == "none":
        assert "memgate_verdict" not in families, families.keys()
    else:
        states = {s.labels["memgate_verdict"]: s.value for s in families["memgate_verdict"].samples}
        assert states == {v: float(v == verdict) for v in ("pass", "warn", "fail", "error")}, states
    keys = set()
    current = set()
    samples = 0
    for fam in families.values():
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in keys, f"{path}: {key} twice"
            keys.add(key)
            samples += 1
        if fam.name in ("memgate_figure_bytes", "memgate_figure"):
            current |= {tuple(s.labels[k] for k in LABELS) for s in fam.samples}
    for name in ("memgate_baseline_bytes", "memgate_limit_bytes", "memgate_baseline", "memgate_limit"):
        for s in families[name].samples if name in families else []:
            assert tuple(s.labels[k] for k in LABELS) in current, f"{path}: {s} has no current value"
    if "memgate_figure_bytes" in families:
        assert families["memgate_figure_bytes"].unit == "bytes"
    print(f"ok: {path} parses as OpenMetrics: {len(families)} families, {samples} samples, verdict {verdict}")


def main(args):
    if not args or len(args) % 2:
        sys.exit(__doc__)
    for verdict, path in zip(args[::2], args[1::2]):
        check(path, verdict)


if __name__ == "__main__":
    main(sys.argv[1:])
