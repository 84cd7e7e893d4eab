"""record() against fake torch / torch_npu modules."""

import json
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
    assert sorted(p.name for p in tmp_path.iterdir()) == [".rank3.env.json", "rank3.pickle"]


def test_the_rank_comes_from_rank_then_local_rank(monkeypatch, tmp_path, snapshot, no_rank_env):
    install(monkeypatch, fake_torch(snapshot))
    monkeypatch.setenv("LOCAL_RANK", "2")
    with memgate.record(tmp_path):
        pass
    monkeypatch.setenv("RANK", "7")
    with memgate.record(tmp_path):
        pass
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["rank2.pickle", "rank7.pickle"]


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
    assert "no CUDA device (torch.cuda.is_available() is False) and no Ascend NPU" in str(e.value)
    assert not (tmp_path / "out").exists()
    assert torch.cuda.memory.calls == []


def test_without_torch_it_says_torch_is_not_installed(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(memgate.MemgateError, match="torch is not installed"):
        with memgate.record(tmp_path):
            pass


def test_the_environment_is_written_beside_the_snapshot(monkeypatch, tmp_path, snapshot, no_rank_env):
    install(monkeypatch, fake_torch(snapshot, rank=3))
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.environment == tmp_path / ".rank3.env.json"
    env = json.loads(rec.environment.read_text())
    assert env == {
        "schema_version": 1,
        "kind": "memgate-environment",
        "backend": "cuda",
        "rank": 3,
        "world_size": 8,
        "torch": "2.5.1+fake",
        "cuda": "12.4",
        "cann": None,
        "device": {"index": 0, "name": "Fake GPU 80GB", "total_memory": 80 << 30},
        "allocator": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    }


def test_a_broken_device_query_leaves_null_not_a_lost_snapshot(monkeypatch, tmp_path, snapshot, no_rank_env):
    torch = fake_torch(snapshot)

    def broken(device):
        raise RuntimeError("driver gone")

    torch.cuda.get_device_properties = broken
    install(monkeypatch, torch)
    with memgate.record(tmp_path) as rec:
        pass
    assert rec.path.is_file()
    assert json.loads(rec.environment.read_text())["device"]["total_memory"] is None


@pytest.mark.parametrize("where", ["beside", "elsewhere"])
def test_summarize_writes_the_summary_in_process(monkeypatch, tmp_path, snapshot, no_rank_env, where):
    install(monkeypatch, fake_torch(snapshot))
    out = tmp_path / "summaries"
    with memgate.record(tmp_path / "snaps", summarize=True if where == "beside" else out) as rec:
        pass
    expected = (tmp_path / "snaps" if where == "beside" else out) / "rank0.json"
    assert rec.summary == expected
    summary = json.loads(expected.read_text())
    assert summary["kind"] == "memgate-summary"


def test_summarize_refuses_what_is_not_a_flag_or_a_directory(monkeypatch, tmp_path, snapshot, no_rank_env):
    install(monkeypatch, fake_torch(snapshot))
    with pytest.raises(memgate.MemgateError, match="summarize"):
        with memgate.record(tmp_path, summarize=1):  # type: ignore[arg-type]
            pass
