"""record() against fake torch / torch_npu modules."""

import sys

import pytest

import memgate
from fakes import fake_torch, fake_torch_npu


@pytest.fixture
def snapshot(examples):
    return str(examples / "snapshots" / "rank0.pickle")


def install(monkeypatch, torch, torch_npu=None):
    monkeypatch.setitem(sys.modules, "torch", torch)
    if torch_npu is None:
        # An absent module: import raises ImportError.
        monkeypatch.setitem(sys.modules, "torch_npu", None)
    else:
        monkeypatch.setitem(sys.modules, "torch_npu", torch_npu)


def test_on_cuda_it_records_then_dumps_rank0_and_stops(monkeypatch, tmp_path, snapshot, no_rank_env):
    torch = fake_torch(snapshot)
    install(monkeypatch, torch)
    with memgate.record(tmp_path / "out", max_entries=1234) as rec:
        assert torch.cuda.memory.calls == [("record", "all", 1234)]
    written = tmp_path / "out" / "rank0.pickle"
    assert rec.path == written and rec.rank == 0 and rec.backend == "cuda"
    assert torch.cuda.memory.calls[1:] == [("dump", str(written)), ("record", None, None)]
    # What it wrote is a snapshot memgate reads.
    assert memgate.peak(written).snapshots[0].devices[0].figures["allocated-peak"] > 0


def test_on_ascend_it_uses_torch_npu(monkeypatch, tmp_path, snapshot, no_rank_env):
    torch, torch_npu = fake_torch(snapshot, cuda=False), fake_torch_npu(snapshot)
    install(monkeypatch, torch, torch_npu)
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.backend == "npu"
    assert torch.cuda.memory.calls == []
    assert [c[0] for c in torch_npu.npu.memory.calls] == ["record", "dump", "record"]
    assert (tmp_path / "rank0.pickle").is_file()


def test_the_rank_comes_from_torch_distributed_first(monkeypatch, tmp_path, snapshot):
    monkeypatch.setenv("RANK", "5")
    install(monkeypatch, fake_torch(snapshot, rank=3))
    with memgate.record(tmp_path):
        pass
    assert [p.name for p in tmp_path.iterdir()] == ["rank3.pickle"]


def test_the_rank_comes_from_rank_then_local_rank(monkeypatch, tmp_path, snapshot, no_rank_env):
    install(monkeypatch, fake_torch(snapshot))
    monkeypatch.setenv("LOCAL_RANK", "2")
    with memgate.record(tmp_path):
        pass
    monkeypatch.setenv("RANK", "7")
    with memgate.record(tmp_path):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank2.pickle", "rank7.pickle"]


def test_a_pickle_path_is_used_as_given_with_the_rank_filled_in(monkeypatch, tmp_path, snapshot, no_rank_env):
    monkeypatch.setenv("RANK", "1")
    install(monkeypatch, fake_torch(snapshot))
    with memgate.record(tmp_path / "run-{rank}.pickle") as rec:
        pass
    assert rec.path == tmp_path / "run-1.pickle"
    assert rec.path.is_file()


def test_the_snapshot_is_dumped_when_the_block_raises(monkeypatch, tmp_path, snapshot, no_rank_env):
    torch = fake_torch(snapshot)
    install(monkeypatch, torch)
    with pytest.raises(RuntimeError, match="out of memory"):
        with memgate.record(tmp_path):
            raise RuntimeError("CUDA out of memory")
    assert (tmp_path / "rank0.pickle").is_file()
    assert torch.cuda.memory.calls[-1] == ("record", None, None)


def test_without_a_device_it_raises_and_writes_nothing(monkeypatch, tmp_path, snapshot):
    torch = fake_torch(snapshot, cuda=False)
    install(monkeypatch, torch)
    with pytest.raises(memgate.MemgateError) as e:
        with memgate.record(tmp_path / "out"):
            pass
    assert e.value.exit_code == 2
    assert "no CUDA or Ascend NPU device" in str(e.value)
    assert not (tmp_path / "out").exists()
    assert torch.cuda.memory.calls == []


def test_without_torch_it_raises(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(memgate.MemgateError):
        with memgate.record(tmp_path):
            pass
