"""record() on any accelerator (torch.accelerator, torch.get_device_module,
torch_npu), with pinned host memory and user metadata passed through."""

import json
import sys

import pytest

import memgate
from fakes import fake_torch, fake_torch_accelerator, fake_torch_npu


@pytest.fixture
def snapshot(examples):
    return str(examples / "snapshots" / "rank0.pickle")


def install(monkeypatch, torch, torch_npu=None):
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch_npu", torch_npu)


def test_on_xpu_torch_accelerator_finds_torch_xpu_and_the_snapshot_is_written(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    torch = fake_torch_accelerator(snapshot, "xpu")
    install(monkeypatch, torch)
    with memgate.record(tmp_path, max_entries=77) as rec:
        assert torch.xpu.memory.calls == [("record", "all", 77)]
    written = tmp_path / "rank0.pickle"
    assert rec.backend == "xpu" and rec.path == written
    assert torch.xpu.memory.calls[1:] == [("dump", str(written)), ("record", None, None)]
    with open(written, "rb") as got, open(snapshot, "rb") as want:
        assert got.read() == want.read()
    env = json.loads(rec.environment.read_text())
    assert env["backend"] == "xpu" and env["device"]["name"] == "Fake XPU"


def test_a_generic_device_module_from_get_device_module_records_without_torch_accelerator(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    torch = fake_torch_accelerator(snapshot, "musa", accelerator=False)
    assert not hasattr(torch, "accelerator")
    install(monkeypatch, torch)
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.backend == "musa"
    assert [c[0] for c in torch.musa.memory.calls] == ["record", "dump", "record"]
    assert (tmp_path / "rank0.pickle").is_file()


def test_on_an_npu_torch_accelerator_names_the_module_torch_npu_registered(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    npu = fake_torch_npu(snapshot).npu
    torch = fake_torch_accelerator(snapshot, "npu", module=npu)
    # torch_npu itself is not importable here: the module comes from torch.
    install(monkeypatch, torch, None)
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.backend == "npu"
    assert [c[0] for c in npu.memory.calls] == ["record", "dump", "record"]


def test_on_cuda_torch_accelerator_gives_torch_cuda(monkeypatch, tmp_path, snapshot, no_rank_env):
    torch = fake_torch_accelerator(snapshot, "cuda")
    install(monkeypatch, torch)
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.backend == "cuda"
    assert [c[0] for c in torch.cuda.memory.calls] == ["record", "dump", "record"]


def test_no_current_accelerator_and_no_npu_is_refused_before_anything_is_written(
    monkeypatch, tmp_path, snapshot
):
    torch = fake_torch_accelerator(snapshot, "xpu")
    torch.accelerator.is_available = lambda: False
    install(monkeypatch, torch)
    with pytest.raises(memgate.MemgateError, match="no accelerator with a memory recorder"):
        with memgate.record(tmp_path / "out"):
            pass
    assert torch.xpu.memory.calls == []
    assert not (tmp_path / "out").exists()


def test_record_pinned_host_memory_is_passed_through_only_when_asked(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    torch = fake_torch_accelerator(snapshot, "xpu")
    install(monkeypatch, torch)
    with memgate.record(tmp_path / "a", record_pinned_host_memory=True):
        pass
    with memgate.record(tmp_path / "b"):
        pass
    # The fake names `enabled` and `max_entries`; the rest are logged.
    assert torch.xpu.memory.options == [{"record_pinned_host_memory": True}, {}, {}, {}]


def test_pinned_host_memory_on_a_torch_that_lacks_it_is_refused_before_recording(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    torch = fake_torch_accelerator(snapshot, "xpu", pinned=False)
    install(monkeypatch, torch)
    with pytest.raises(memgate.MemgateError, match="needs torch 2.14"):
        with memgate.record(tmp_path, record_pinned_host_memory=True):
            pass
    assert torch.xpu.memory.calls == []


def test_metadata_tags_the_block_and_is_cleared_on_exit_a_dict_as_its_json_text(
    monkeypatch, tmp_path, snapshot, no_rank_env
):
    torch = fake_torch(snapshot)
    install(monkeypatch, torch)
    with memgate.record(tmp_path / "a", metadata={"owner": "vision", "step": 3}):
        assert torch.cuda.memory.calls[-1] == ("metadata", '{"owner":"vision","step":3}')
    assert torch.cuda.memory.calls[-3:] == [
        ("dump", str(tmp_path / "a" / "rank0.pickle")),
        ("metadata", ""),
        ("record", None, None),
    ]
    with memgate.record(tmp_path / "b", metadata="text-encoder"):
        assert torch.cuda.memory.calls[-1] == ("metadata", "text-encoder")


def test_metadata_that_is_neither_a_string_nor_a_dict_is_refused(monkeypatch, tmp_path, snapshot):
    install(monkeypatch, fake_torch(snapshot))
    with pytest.raises(memgate.MemgateError, match="not a string or a dict"):
        with memgate.record(tmp_path, metadata=["vision"]):
            pass
