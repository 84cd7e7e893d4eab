"""record(): allocator history on, one snapshot per rank on exit.

The same code on CUDA (``torch.cuda.memory``) and on Ascend NPUs
(``torch_npu.npu.memory``): both offer ``_record_memory_history`` and
``_dump_snapshot``. torch is imported only when record() is used.

Beside each snapshot ``DIR/rank0.pickle`` record() writes its environment,
``DIR/.rank0.env.json`` (hidden, so a directory of snapshots or summaries
used as a baseline never takes it for one)::

    {"schema_version": 1, "kind": "memgate-environment",
     "backend": "cuda" | "npu", "rank": 0, "world_size": 1 | null,
     "torch": "2.5.1", "cuda": "12.4" | null, "cann": "8.0" | null,
     "device": {"index": 0, "name": "NVIDIA H100 80GB HBM3",
                "total_memory": 85029158912} | null,
     "allocator": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}}

Every value that cannot be read is ``null`` (``allocator`` holds the
allocator variables that are set). Every memgate command reads it
(docs/figures.md#environment): summaries keep it, and ``check`` names each
difference from the baseline's.
"""

from __future__ import annotations

import importlib
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple, Union

from ._api import MemgateError

__all__ = ["ENV_SUFFIX", "Recording", "accelerator", "current_rank", "environment", "environment_path", "record"]

ENV_SUFFIX = ".env.json"
_ALLOCATOR_VARIABLES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_NPU_ALLOC_CONF")


def _import(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def accelerator() -> Optional[Tuple[str, Any]]:
    """``("cuda", torch.cuda.memory)`` or ``("npu", torch_npu.npu.memory)``
    for the first backend with a device, else ``None`` (no torch, or no
    GPU or NPU)."""
    torch = _import("torch")
    if torch is None:
        return None
    if torch.cuda.is_available():
        return "cuda", torch.cuda.memory
    torch_npu = _import("torch_npu")
    if torch_npu is not None and torch_npu.npu.is_available():
        return "npu", torch_npu.npu.memory
    return None


def _missing() -> str:
    """Why there is no accelerator, in the user's terms."""
    if _import("torch") is None:
        return "torch is not installed (record() needs torch, and torch_npu for Ascend NPUs)"
    return "no CUDA device (torch.cuda.is_available() is False) and no Ascend NPU (torch_npu not installed or no NPU)"


def _call(f: Any, *args: Any) -> Any:
    """``f(*args)``, or ``None`` when it is missing or fails: the
    environment is informative, never a reason to lose the snapshot."""
    try:
        return f(*args) if callable(f) else None
    except Exception:  # noqa: BLE001 - a broken driver query must not lose the snapshot
        return None


def environment(backend: str, rank: int) -> Dict[str, Any]:
    """What record() writes beside a snapshot (the module's docstring
    gives the schema)."""
    torch = _import("torch")
    module = getattr(torch, "cuda", None) if backend == "cuda" else getattr(_import("torch_npu"), "npu", None)
    index = _call(getattr(module, "current_device", None))
    device = None
    if isinstance(index, int):
        props = _call(getattr(module, "get_device_properties", None), index)
        device = {
            "index": index,
            "name": _call(getattr(module, "get_device_name", None), index),
            "total_memory": getattr(props, "total_memory", None),
        }
    dist = getattr(torch, "distributed", None)
    world_size = None
    if _call(getattr(dist, "is_available", None)) and _call(getattr(dist, "is_initialized", None)):
        world_size = _call(getattr(dist, "get_world_size", None))
    elif os.environ.get("WORLD_SIZE", "").strip().isdigit():
        world_size = int(os.environ["WORLD_SIZE"])
    version = getattr(torch, "version", None)
    torch_npu = _import("torch_npu") if backend == "npu" else None
    return {
        "schema_version": 1,
        "kind": "memgate-environment",
        "backend": backend,
        "rank": rank,
        "world_size": world_size,
        "torch": getattr(torch, "__version__", None),
        "cuda": getattr(version, "cuda", None),
        "cann": getattr(getattr(torch_npu, "version", None), "cann", None),
        "device": device,
        "allocator": {k: os.environ[k] for k in _ALLOCATOR_VARIABLES if k in os.environ},
    }


def environment_path(snapshot: Path) -> Path:
    """``DIR/.rank0.env.json`` for ``DIR/rank0.pickle``."""
    return snapshot.with_name(f".{snapshot.stem}{ENV_SUFFIX}")


def current_rank() -> int:
    """The process's rank: torch.distributed's when it is initialised,
    else ``RANK``, else ``LOCAL_RANK``, else 0."""
    torch = _import("torch")
    dist = getattr(torch, "distributed", None) if torch is not None else None
    if dist is not None and dist.is_available() and dist.is_initialized():
        return int(dist.get_rank())
    for name in ("RANK", "LOCAL_RANK"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return int(value)
            except ValueError:
                raise MemgateError(2, [f"{name}={value!r} is not a rank number"]) from None
    return 0


@dataclass(frozen=True)
class Recording:
    """What record() yields: the snapshot file it writes on exit, the rank
    and the backend (``cuda`` or ``npu``)."""

    path: Path
    rank: int
    backend: str
    #: ``DIR/.rank0.env.json``: the environment (see the module's docstring).
    environment: Path
    #: ``summarize=True``: where the summary is written on exit.
    summary: Optional[Path] = None


def _snapshot_path(path_or_dir: Union[str, "os.PathLike[str]"], rank: int) -> Path:
    path = Path(os.fsdecode(path_or_dir))
    if path.suffix in (".pickle", ".pkl"):
        return Path(str(path).replace("{rank}", str(rank)))
    return path / f"rank{rank}.pickle"


@contextmanager
def record(
    path_or_dir: Union[str, "os.PathLike[str]"],
    *,
    max_entries: int = 100_000,
    summarize: Union[bool, str, "os.PathLike[str]"] = False,
) -> Iterator[Recording]:
    """Records the allocator history of the block and dumps it on exit.

    ``path_or_dir`` is a directory (created if missing) that receives
    ``rank{N}.pickle``, the name ``memgate check``'s default
    ``key = '(rank\\d+)'`` matches, or a file ending in ``.pickle`` /
    ``.pkl`` in which ``{rank}`` is replaced by the rank. ``max_entries``
    caps the trace (PyTorch keeps the newest). The snapshot is dumped
    even when the block raises (an OOM is worth seeing), then recording
    stops; its environment is written beside it (``.rank0.env.json``).
    ``summarize=True`` also writes the snapshot's summary on exit, in
    process, to the snapshot's directory (or to the directory
    ``summarize`` names), so that only summaries need to travel from a
    large job. Raises :class:`MemgateError` when torch is not installed or
    there is no CUDA or Ascend NPU device.
    """
    found = accelerator()
    if found is None:
        raise MemgateError(2, [f"record(): {_missing()}"])
    if isinstance(summarize, bool):
        summary_dir = None
    elif isinstance(summarize, (str, os.PathLike)):
        summary_dir = Path(os.fsdecode(summarize))
    else:
        raise MemgateError(2, [f"summarize: {summarize!r} is not True, False or a directory"])
    backend, memory = found
    rank = current_rank()
    target = _snapshot_path(path_or_dir, rank)
    target.parent.mkdir(parents=True, exist_ok=True)
    if summarize is True:
        summary_dir = target.parent
    env_path = environment_path(target)
    summary = summary_dir / f"{target.stem}.json" if summary_dir is not None else None
    memory._record_memory_history(max_entries=max_entries)
    try:
        yield Recording(path=target, rank=rank, backend=backend, environment=env_path, summary=summary)
    finally:
        try:
            memory._dump_snapshot(str(target))
        finally:
            memory._record_memory_history(enabled=None)
        env_path.write_text(json.dumps(environment(backend, rank), indent=2) + "\n", encoding="utf-8")
        if summary_dir is not None:
            from ._api import summarize as write_summary

            write_summary(target, summary_dir)
