"""Fake ``torch`` / ``torch_npu`` modules for record() and the plugin.

``_dump_snapshot`` writes a real snapshot: a copy of a bundled example
pickle, so memgate has something true to judge. Every call is logged in
the memory module's ``calls``.
"""

import os
import shutil
import types
from typing import Optional


def _memory(snapshot: str) -> types.ModuleType:
    memory = types.ModuleType("memory")
    memory.calls = []

    def _record_memory_history(enabled="all", max_entries=None, **kwargs):
        memory.calls.append(("record", enabled, max_entries))

    def _dump_snapshot(filename="dump_snapshot.pickle"):
        memory.calls.append(("dump", os.fspath(filename)))
        shutil.copyfile(snapshot, filename)

    memory._record_memory_history = _record_memory_history
    memory._dump_snapshot = _dump_snapshot
    return memory


def fake_torch(snapshot: str, cuda: bool = True, rank: Optional[int] = None) -> types.ModuleType:
    """``torch`` with ``cuda.is_available() == cuda``; ``rank`` set makes
    torch.distributed initialised with that rank."""
    torch = types.ModuleType("torch")
    torch.__version__ = "2.5.1+fake"
    torch.version = types.SimpleNamespace(cuda="12.4")
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: cuda,
        memory=_memory(snapshot),
        current_device=lambda: 0,
        get_device_name=lambda device=None: "Fake GPU 80GB",
        get_device_properties=lambda device: types.SimpleNamespace(total_memory=80 << 30),
    )
    torch.distributed = types.SimpleNamespace(
        is_available=lambda: True,
        is_initialized=lambda: rank is not None,
        get_rank=lambda: rank,
        get_world_size=lambda: 8,
    )
    return torch


def fake_torch_npu(snapshot: str) -> types.ModuleType:
    """``torch_npu`` with one NPU."""
    torch_npu = types.ModuleType("torch_npu")
    torch_npu.npu = types.SimpleNamespace(is_available=lambda: True, memory=_memory(snapshot))
    return torch_npu
