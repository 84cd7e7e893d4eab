"""record(): allocator history on, one snapshot per rank on exit.

The same code on CUDA (``torch.cuda.memory``) and on Ascend NPUs
(``torch_npu.npu.memory``): both offer ``_record_memory_history`` and
``_dump_snapshot``. torch is imported only when record() is used.
"""

from __future__ import annotations

import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Tuple, Union

from ._api import MemgateError

__all__ = ["Recording", "accelerator", "current_rank", "record"]


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
) -> Iterator[Recording]:
    """Records the allocator history of the block and dumps it on exit.

    ``path_or_dir`` is a directory (created if missing) that receives
    ``rank{N}.pickle``, the name ``memgate check``'s default
    ``key = '(rank\\d+)'`` matches, or a file ending in ``.pickle`` /
    ``.pkl`` in which ``{rank}`` is replaced by the rank. ``max_entries``
    caps the trace (PyTorch keeps the newest). The snapshot is dumped
    even when the block raises (an OOM is worth seeing), then recording
    stops. Raises :class:`MemgateError` when there is no CUDA or Ascend
    NPU device.
    """
    found = accelerator()
    if found is None:
        raise MemgateError(2, ["record(): no CUDA or Ascend NPU device (torch.cuda / torch_npu)"])
    backend, memory = found
    rank = current_rank()
    target = _snapshot_path(path_or_dir, rank)
    target.parent.mkdir(parents=True, exist_ok=True)
    memory._record_memory_history(max_entries=max_entries)
    try:
        yield Recording(path=target, rank=rank, backend=backend)
    finally:
        try:
            memory._dump_snapshot(str(target))
        finally:
            memory._record_memory_history(enabled=None)
