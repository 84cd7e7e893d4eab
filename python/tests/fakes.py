"""Fake ``torch`` / ``torch_npu`` modules for record() and the plugin.

``_dump_snapshot`` writes a real snapshot: a copy of a bundled example
pickle, so memgate has something true to judge. Every call is logged in
the memory module's ``calls``.
"""

import os
import shutil
import types
from typing import Optional


def _memory(snapshot: str, pinned: bool = True) -> types.ModuleType:
    """A memory module; ``pinned=False`` is a torch before 2.14, whose
    ``_record_memory_history`` takes no ``record_pinned_host_memory``. The
    keyword arguments of each ``_record_memory_history`` call are logged in
    ``options``."""
    memory = types.ModuleType("memory")
    memory.calls = []
    memory.options = []

    def _record_memory_history(enabled="all", max_entries=None, **kwargs):
        if not pinned and "record_pinned_host_memory" in kwargs:
            raise TypeError("_record_memory_history() got an unexpected keyword argument 'record_pinned_host_memory'")
        memory.calls.append(("record", enabled, max_entries))
        memory.options.append(kwargs)

    def _dump_snapshot(filename="dump_snapshot.pickle"):
        memory.calls.append(("dump", os.fspath(filename)))
        shutil.copyfile(snapshot, filename)

    def _set_memory_metadata(metadata):
        memory.calls.append(("metadata", metadata))

    memory._record_memory_history = _record_memory_history
    memory._dump_snapshot = _dump_snapshot
    memory._set_memory_metadata = _set_memory_metadata
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


def _device(snapshot: str, device_type: str, pinned: bool = True) -> types.ModuleType:
    """``torch.<device_type>``: a device module with a memory recorder."""
    module = types.ModuleType(f"torch.{device_type}")
    module.memory = _memory(snapshot, pinned)
    module.current_device = lambda: 0
    module.get_device_name = lambda device=None: f"Fake {device_type.upper()}"
    module.get_device_properties = lambda device: types.SimpleNamespace(total_memory=64 << 30)
    return module


def fake_torch_accelerator(
    snapshot: str,
    device_type: str,
    accelerator: bool = True,
    module: Optional[types.ModuleType] = None,
    pinned: bool = True,
) -> types.ModuleType:
    """A torch whose current accelerator is ``device_type`` and whose CUDA
    is unavailable: told by ``torch.accelerator`` (torch 2.6+), or with
    ``accelerator=False`` only by ``torch.get_device_module()``. ``module``
    is the device module ``get_device_module`` returns (``torch_npu``'s, for
    an NPU), else a fresh ``torch.<device_type>``."""
    torch = types.ModuleType("torch")
    torch.__version__ = "2.15.0+fake"
    torch.version = types.SimpleNamespace(cuda=None)
    torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    device = module if module is not None else _device(snapshot, device_type, pinned)
    if module is None:
        setattr(torch, device_type, device)

    def get_device_module(device_name=None):
        if device_name is None or device_name == device_type:
            return device
        raise RuntimeError(f"no device module for {device_name!r}")

    torch.get_device_module = get_device_module
    if accelerator:
        torch.accelerator = types.SimpleNamespace(
            is_available=lambda: True,
            current_accelerator=lambda: types.SimpleNamespace(type=device_type),
        )
    torch.distributed = types.SimpleNamespace(is_available=lambda: False, is_initialized=lambda: False)
    return torch
