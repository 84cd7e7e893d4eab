"""memgate: a CI memory-regression gate for PyTorch allocator snapshots.

The Python face of the memgate command line (the same Rust core, in
process): :func:`peak`, :func:`profile`, :func:`phases`, :func:`inspect`,
:func:`diff`, :func:`summarize` and :func:`check` return typed views of the
documents ``--format json`` prints; :func:`record` writes one allocator
snapshot per rank on CUDA or Ascend NPU; the pytest plugin
(``@pytest.mark.memgate``) gates a test's memory. Every error is a
:class:`MemgateError`. Snapshots are read as data: nothing in a pickle is
executed.
"""

from ._api import GroupBy, MemgateError, Rules, XAxis, check, diff, inspect, peak, phases, profile, summarize
from ._budget import BudgetError, parse_size
from ._documents import (
    AnalysedDevice,
    AnalysedSnapshot,
    Check,
    CheckedDevice,
    CheckedSnapshot,
    Delta,
    DeviceDiff,
    DiffReport,
    Failure,
    Figures,
    InspectReport,
    Iterations,
    PeakReport,
    PhasesDevice,
    PhasesReport,
    PhasesSnapshot,
    ProfileReport,
    Record,
    SiteDelta,
    Status,
    Summary,
    RanksVerdict,
    TargetVerdict,
    Verdict,
)
from . import _name
from ._native import __version__
from ._record import Recording, current_rank, environment, record

# PyPI's `memgate` is another project with this module name (_name.py).
if _name.clash():
    import warnings as _warnings

    _warnings.warn(_name.clash() or "", RuntimeWarning, stacklevel=2)

__all__ = [
    "BudgetError",
    "Failure",
    "Figures",
    "GroupBy",
    "Rules",
    "XAxis",
    "Status",
    "environment",
    "parse_size",
    "AnalysedDevice",
    "AnalysedSnapshot",
    "Check",
    "CheckedDevice",
    "CheckedSnapshot",
    "Delta",
    "DeviceDiff",
    "DiffReport",
    "InspectReport",
    "Iterations",
    "MemgateError",
    "PeakReport",
    "PhasesDevice",
    "PhasesReport",
    "PhasesSnapshot",
    "ProfileReport",
    "Record",
    "Recording",
    "SiteDelta",
    "Summary",
    "RanksVerdict",
    "TargetVerdict",
    "Verdict",
    "__version__",
    "check",
    "current_rank",
    "diff",
    "inspect",
    "peak",
    "phases",
    "profile",
    "record",
    "summarize",
]
