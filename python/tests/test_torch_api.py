"""record() against the real torch API: every torch (and torch_npu)
function it calls exists and takes the arguments it passes
(``inspect.signature(...).bind``). The fake torch of fakes.py can drift
from torch; this cannot. Needs a real torch (CPU is enough; .ci/run
installs one into a cached venv) and skips loudly without it.

``CALLS`` is what record() calls; the first test checks, on a tracing
fake, that record() calls nothing else, so a new call cannot escape the
real-API check.
"""

import importlib
import inspect
import sys
import types

import pytest

import memgate
from fakes import fake_torch

# (module, dotted attribute, args, kwargs) of every call record() makes.
CALLS = [
    ("torch", "cuda.is_available", (), {}),
    ("torch", "cuda.memory._record_memory_history", (), {"max_entries": 100_000}),
    ("torch", "cuda.memory._record_memory_history", (), {"enabled": None}),
    ("torch", "cuda.memory._dump_snapshot", ("rank0.pickle",), {}),
    ("torch", "cuda.current_device", (), {}),
    ("torch", "cuda.get_device_name", (0,), {}),
    ("torch", "cuda.get_device_properties", (0,), {}),
    ("torch", "distributed.is_available", (), {}),
    ("torch", "distributed.is_initialized", (), {}),
    ("torch", "distributed.get_rank", (), {}),
    ("torch", "distributed.get_world_size", (), {}),
    ("torch_npu", "npu.is_available", (), {}),
    ("torch_npu", "npu.memory._record_memory_history", (), {"max_entries": 100_000}),
    ("torch_npu", "npu.memory._record_memory_history", (), {"enabled": None}),
    ("torch_npu", "npu.memory._dump_snapshot", ("rank0.pickle",), {}),
    ("torch_npu", "npu.current_device", (), {}),
    ("torch_npu", "npu.get_device_name", (0,), {}),
    ("torch_npu", "npu.get_device_properties", (0,), {}),
]


class Tracer:
    """Wraps a fake module: records the dotted name of every call."""

    def __init__(self, target, name, calls):
        self._target, self._name, self._calls = target, name, calls

    def __getattr__(self, attr):
        value = getattr(self._target, attr)
        name = f"{self._name}.{attr}"
        if callable(value) and not isinstance(value, types.ModuleType):
            def call(*args, **kwargs):
                self._calls.add(name)
                return value(*args, **kwargs)
            return call
        if isinstance(value, (types.ModuleType, types.SimpleNamespace)):
            return Tracer(value, name, self._calls)
        return value


def test_record_calls_only_what_calls_lists(monkeypatch, tmp_path, examples, no_rank_env):
    calls = set()
    torch = fake_torch(str(examples / "snapshots" / "rank0.pickle"), rank=0)
    monkeypatch.setitem(sys.modules, "torch", Tracer(torch, "torch", calls))
    monkeypatch.setitem(sys.modules, "torch_npu", None)
    with memgate.record(tmp_path):
        pass
    listed = {f"{module}.{attr}" for module, attr, _, _ in CALLS}
    assert calls and calls <= listed, sorted(calls - listed)


def _real(name):
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        pytest.skip(f"SKIPPED LOUDLY: {name} is not installed ({e}); record()'s calls were NOT checked against it")
    if not getattr(module, "__file__", None):
        pytest.skip(f"SKIPPED LOUDLY: {name} is a fake here; record()'s calls were NOT checked against it")
    return module


@pytest.mark.parametrize("module_name", ["torch", "torch_npu"])
def test_every_call_of_record_exists_in_the_real_api_with_its_signature(module_name):
    module = _real(module_name)
    problems = []
    for owner, dotted, args, kwargs in CALLS:
        if owner != module_name:
            continue
        target = module
        try:
            for part in dotted.split("."):
                target = getattr(target, part)
        except AttributeError:
            problems.append(f"{owner}.{dotted} does not exist in {owner} {module.__version__}")
            continue
        try:
            inspect.signature(target).bind(*args, **kwargs)
        except TypeError as e:
            problems.append(f"{owner}.{dotted}{inspect.signature(target)} cannot take {args} {kwargs}: {e}")
        except ValueError:
            pass  # a builtin without a signature: existence is what can be checked
    assert not problems, "\n".join(problems)


def test_the_device_properties_record_reads_exist(monkeypatch):
    torch = _real("torch")
    # total_memory is read from get_device_properties(); on CPU there is no
    # device to ask, so the attribute is checked on the properties type.
    props = getattr(torch.cuda, "_CudaDeviceProperties", None)
    if props is None:
        pytest.skip("SKIPPED LOUDLY: this torch has no torch.cuda._CudaDeviceProperties; total_memory NOT checked")
    assert hasattr(props, "total_memory")
    assert isinstance(torch.__version__, str) and hasattr(torch.version, "cuda")
