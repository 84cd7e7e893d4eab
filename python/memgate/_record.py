"""record(): allocator history on, one snapshot per rank on exit.

The same code on every accelerator whose memory module offers
``_record_memory_history`` and ``_dump_snapshot`` (CUDA, XPU, MTIA, MUSA,
MLU, Ascend NPU...). The device module is found the way PyTorch finds it
now: ``torch.accelerator.current_accelerator()`` when torch has it, then
``torch.get_device_module()``, then CUDA on an older torch, then
``torch_npu``. torch is imported only when record() is used.

Beside each snapshot ``DIR/rank0.pickle`` record() writes its environment,
``DIR/.rank0.env.json`` (hidden, so a directory of snapshots or summaries
used as a baseline never takes it for one)::

    {"schema_version": 1, "kind": "memgate-environment",
     "backend": "cuda" | "npu" | "xpu" | ..., "rank": 0, "world_size": 1 | null,
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


def _memory_of(module: Any) -> Any:
    """``module.memory`` when it can record and dump a snapshot, else ``None``."""
    memory = getattr(module, "memory", None)
    if callable(getattr(memory, "_record_memory_history", None)) and callable(getattr(memory, "_dump_snapshot", None)):
        return memory
    return None


def _device_module(torch: Any, device_type: str) -> Any:
    """``torch.get_device_module(device_type)``, else ``torch.<device_type>``."""
    get = getattr(torch, "get_device_module", None)
    module = _call(get, device_type) if callable(get) else None
    return module if module is not None else getattr(torch, device_type, None)


def _current_type(torch: Any) -> Optional[str]:
    """The current accelerator's type (``"cuda"``, ``"xpu"``, ``"npu"``...):
    ``torch.accelerator`` when torch has it, else ``torch.get_device_module()``'s
    name, else ``"cuda"`` when CUDA is available (torch before 2.6)."""
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        if not _call(getattr(acc, "is_available", None)):
            return None
        device = _call(getattr(acc, "current_accelerator", None))
        return getattr(device, "type", None)
    get = getattr(torch, "get_device_module", None)
    module = _call(get) if callable(get) else None
    if module is not None:
        return str(getattr(module, "__name__", "")).rpartition(".")[2] or None
    cuda = getattr(torch, "cuda", None)
    return "cuda" if cuda is not None and _call(getattr(cuda, "is_available", None)) else None


def accelerator() -> Optional[Tuple[str, Any]]:
    """``(device_type, memory module)`` of the current accelerator, e.g.
    ``("cuda", torch.cuda.memory)``, ``("xpu", torch.xpu.memory)`` or
    ``("npu", torch_npu.npu.memory)``; ``None`` when there is none (no
    torch, or no accelerator with a memory recorder)."""
    torch = _import("torch")
    if torch is None:
        return None
    device_type = _current_type(torch)
    if device_type:
        memory = _memory_of(_device_module(torch, device_type))
        if memory is not None:
            return device_type, memory
    torch_npu = _import("torch_npu")
    npu = getattr(torch_npu, "npu", None)
    if npu is not None and _call(getattr(npu, "is_available", None)):
        memory = _memory_of(npu)
        if memory is not None:
            return "npu", memory
    return None


def _missing() -> str:
    """Why there is no accelerator, in the user's terms."""
    if _import("torch") is None:
        return "torch is not installed (record() needs torch, and torch_npu for Ascend NPUs)"
    return (
        "no accelerator with a memory recorder: torch.accelerator finds none, "
        "no CUDA device (torch.cuda.is_available() is False) and no Ascend NPU "
        "(torch_npu not installed or no NPU)"
    )


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
    module = _device_module(torch, backend) if torch is not None else None
    if backend == "npu" and module is None:
        module = getattr(_import("torch_npu"), "npu", None)
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
    and the backend (the accelerator's type: ``cuda``, ``npu``, ``xpu``...)."""

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


def _metadata_text(metadata: Union[None, str, Dict[str, Any]]) -> Optional[str]:
    """What ``_set_memory_metadata`` is given: the string, or a dict's
    compact JSON text (what torch 2.15 stores for a dict, and what torch
    2.10-2.14, which take only strings, can hold)."""
    if metadata is None or isinstance(metadata, str):
        return metadata
    if isinstance(metadata, dict):
        try:
            return json.dumps(metadata, separators=(",", ":"), sort_keys=True)
        except (TypeError, ValueError) as e:
            raise MemgateError(2, [f"record(): metadata is not JSON: {e}"]) from None
    raise MemgateError(2, [f"record(): metadata {metadata!r} is not a string or a dict"])


def _start(memory: Any, max_entries: int, pinned: bool) -> None:
    """History on; ``record_pinned_host_memory`` passed only when asked
    for, so an older torch that lacks it still records the device."""
    if not pinned:
        memory._record_memory_history(max_entries=max_entries)
        return
    try:
        memory._record_memory_history(max_entries=max_entries, record_pinned_host_memory=True)
    except TypeError:
        raise MemgateError(
            2, ["record(): record_pinned_host_memory=True needs torch 2.14 or later (this torch does not take it)"]
        ) from None


def _set_metadata(memory: Any, text: str) -> None:
    """``_set_memory_metadata(text)`` (record() checked that it exists)."""
    memory._set_memory_metadata(text)


@contextmanager
def record(
    path_or_dir: Union[str, "os.PathLike[str]"],
    *,
    max_entries: int = 100_000,
    summarize: Union[bool, str, "os.PathLike[str]"] = False,
    record_pinned_host_memory: bool = False,
    metadata: Union[None, str, Dict[str, Any]] = None,
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
    large job. ``record_pinned_host_memory=True`` records pinned host memory
    too (torch 2.14+: the snapshot's ``host_segments`` and ``host_traces``,
    docs/figures.md#pinned-host-memory). ``metadata`` (a string, or a dict
    written as its JSON text) tags every allocation of the block's thread
    through ``_set_memory_metadata`` (torch 2.10+), for ``memgate profile
    --group-by user-metadata[.KEY]``; it is cleared on exit. Raises
    :class:`MemgateError` when torch is not installed, there is no
    accelerator, or this torch lacks what an option needs.
    """
    found = accelerator()
    if found is None:
        raise MemgateError(2, [f"record(): {_missing()}"])
    tag = _metadata_text(metadata)
    if tag is not None and not callable(getattr(found[1], "_set_memory_metadata", None)):
        raise MemgateError(2, ["record(): metadata needs torch 2.10 or later (no _set_memory_metadata)"])
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
    _start(memory, max_entries, record_pinned_host_memory)
    try:
        if tag is not None:
            _set_metadata(memory, tag)
        yield Recording(path=target, rank=rank, backend=backend, environment=env_path, summary=summary)
    finally:
        try:
            memory._dump_snapshot(str(target))
        finally:
            try:
                if tag is not None:
                    _set_metadata(memory, "")
            finally:
                memory._record_memory_history(enabled=None)
        env_path.write_text(json.dumps(environment(backend, rank), indent=2) + "\n", encoding="utf-8")
        if summary_dir is not None:
            from ._api import summarize as write_summary

            write_summary(target, summary_dir)
