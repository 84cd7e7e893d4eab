#!/usr/bin/env python3
"""Write a large, realistic allocator snapshot for benchmarking memgate.

    python3 bench/gen_large.py [OUT] [--entries N] [--annotations]
                               [--shape shared|torch] [--devices N]
                                   (default /tmp/memgate-large.pickle, 2,000,000)

``--annotations`` adds record_function annotations (``external_annotations``,
torch >= 2.5): 200 iterations, each a ``ProfilerStep#k`` span holding
``## forward ##``, ``## backward ##`` and ``Optimizer.step#AdamW.step`` spans
(40% / 40% / 20% of its entries), for the time-structure benchmarks.

Shape: torch 2.11 style (time_us, compile_context, user_metadata,
allocator_settings), one device, C++ + Python stacks.  The trace is a run of
alloc / free_requested / free_completed triples with segment_alloc /
segment_free events, and the segments/blocks at the end are exactly the
state the trace leaves behind (blocks tile their segments, live blocks share
their stack list with their alloc entry).  Frames are shared like real output:
a few hundred distinct frame dicts, a few thousand distinct stack lists reused
by identity.

``--shape torch`` writes the trace the way torch does (issue 33): one
frames list per ``alloc`` / ``segment_alloc`` built from the shared frame
dicts (``EMPTY_LIST MEMOIZE MARK BINGET... APPENDS``), ``free_requested`` /
``free_completed`` reading their allocation's list back, ``segment_free``
without frames, live blocks and segments sharing their entry's list (so
written first, in ``segments``, and read back by the trace); with it
annotations are on and the entries are split over two devices unless
``--devices N`` says otherwise.  The default (``--shape shared``) is the
benchmark file memgate's figures were first measured on, byte for byte.

The pickle (protocol 4, with FRAME opcodes, MEMOIZE of every dict/list/str like
CPython's pickler) is written by a streaming emitter, so memory stays bounded
(the trace is first generated into compact arrays, ~60 MB for 2 M entries).
The result loads with ``pickle.load`` into the same object graph
``pickle.dump(obj, f, protocol=4)`` would have produced.  stdlib only, seeded.
"""
from __future__ import annotations

import math
import os
import random
import struct
import sys
import time
from array import array

KiB, MiB = 1 << 10, 1 << 20
N_DEFAULT = 2_000_000
N_FRAMES = 320
N_ALLOC_STACKS = 2600
N_FREE_STACKS = 500
SEG_LARGE, SLOT_LARGE = 20 * MiB, 2 * MiB
SEG_SMALL, SLOT_SMALL = 2 * MiB, 64 * KiB

A_ALLOC, A_FREQ, A_FCOMP, A_SALLOC, A_SFREE = range(5)
ACTION_NAMES = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"]


# ---------------------------------------------------------------------------
# frames and stacks
# ---------------------------------------------------------------------------

def make_frames(rng):
    torch = "/usr/local/lib/python3.12/site-packages/torch"
    alloc_prefix = [
        ("torch::unwind::unwind()", "??"),
        ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
        ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
        ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp"),
        ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", ""),
        ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
    ]
    free_prefix = alloc_prefix[:3] + [
        ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator::Native::(anonymous namespace)::Block*)", "CUDACachingAllocator.cpp"),
        ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::free(void*)", ""),
        ("c10::StorageImpl::~StorageImpl()", ""),
        ("c10::TensorImpl::~TensorImpl()", "??"),
        ("THPVariable_subclass_dealloc(_object*)", "python_variable.cpp"),
    ]
    tail = [("PyEval_EvalCode", "??"), ("run_mod", ""), ("_PyRun_SimpleFileObject", "??"), ("Py_RunMain", "??"),
            ("Py_BytesMain", "??"), ("__libc_start_main", "??"), ("_start", "??")]
    ops = ["mm", "addmm", "bmm", "mul_Tensor", "add_Tensor", "gelu", "native_layer_norm", "_softmax", "embedding",
           "empty_strided", "zeros_like", "clone", "cat", "index_select", "_to_copy", "scaled_dot_product_attention",
           "_foreach_mul_Scalar", "_fused_adam_", "copy_", "native_dropout", "mean_dim", "sum_dim_IntList"]
    cpp_mid = []
    for op in ops:
        cpp_mid += [
            (f"at::(anonymous namespace)::wrapper_CUDA_{op}(at::Tensor const&, at::Tensor const&)", "RegisterCUDA_0.cpp"),
            (f"at::_ops::{op}::redispatch(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)", "??"),
            (f"torch::autograd::VariableType::(anonymous namespace)::{op}(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)", f"VariableType_{len(op) % 5}.cpp"),
            (f"at::_ops::{op}::call(at::Tensor const&, at::Tensor const&)", "??"),
            (f"torch::autograd::generated::{op.strip('_').capitalize()}Backward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "Functions.cpp"),
        ]
    engine = [
        ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "function.h"),
        ("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&)", "engine.cpp"),
        ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", "engine.cpp"),
        ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "engine.cpp"),
    ]
    pyfiles = [f"{torch}/nn/modules/module.py", f"{torch}/nn/modules/linear.py", f"{torch}/nn/functional.py",
               f"{torch}/optim/adamw.py", f"{torch}/optim/optimizer.py", f"{torch}/autograd/graph.py",
               f"{torch}/_tensor.py", f"{torch}/utils/checkpoint.py", f"{torch}/distributed/distributed_c10d.py",
               "/workspace/llm/model.py", "/workspace/llm/layers/attention.py", "/workspace/llm/layers/mlp.py",
               "/workspace/llm/train.py", "/workspace/llm/data.py"]
    pynames = ["forward", "_call_impl", "_wrapped_call_impl", "step", "_init_group", "_multi_tensor_adamw",
               "backward", "_engine_run_backward", "all_reduce", "recompute_fn", "train_step", "main", "<module>",
               "get_batch", "attention", "mlp", "loss_fn", "zero_grad", "checkpoint", "wrapper"]
    py_frames = set()
    while len(py_frames) < N_FRAMES - len(alloc_prefix) - len(free_prefix) - len(tail) - len(cpp_mid) - len(engine) - 2:
        f = rng.choice(pyfiles)
        py_frames.add((rng.choice(pynames), f, rng.randrange(20, 2400)))
    py_frames = sorted(py_frames)

    def fd(name, filename, line=0):
        return {"name": name, "filename": filename, "line": line}

    glue = [fd("_PyEval_EvalFrameDefault", "??"), fd("_PyFunction_Vectorcall", "??")]
    P = {"alloc_prefix": [fd(*x) for x in alloc_prefix], "free_prefix": [fd(*x) for x in free_prefix],
         "tail": [fd(*x) for x in tail], "cpp_mid": [fd(*x) for x in cpp_mid], "engine": [fd(*x) for x in engine],
         "py": [fd(*x) for x in py_frames], "glue": glue}
    return P


def make_stacks(rng, P, n, free):
    stacks = []
    prefix = P["free_prefix"] if free else P["alloc_prefix"]
    for _ in range(n):
        s = list(prefix)
        k = rng.randrange(0, 4)
        start = rng.randrange(0, len(P["cpp_mid"]) - k)
        s += P["cpp_mid"][start:start + k]
        if rng.random() < 0.3:
            s += P["engine"]
        for f in rng.sample(P["py"], rng.randrange(2, 12)):
            s.append(f)
            s += P["glue"]
        s += P["tail"]
        stacks.append(s)
    return stacks


# ---------------------------------------------------------------------------
# allocator-ish simulation into compact arrays
# ---------------------------------------------------------------------------

class Seg:
    __slots__ = ("addr", "total", "slot", "free", "live", "kind", "stack", "owner")

    def __init__(self, addr, total, slot, kind, stack):
        self.addr, self.total, self.slot, self.kind, self.stack = addr, total, slot, kind, stack
        n = total // slot
        self.free = [addr + (n - 1 - i) * slot for i in range(n)]  # pop() gives lowest address
        self.live = 0
        self.owner = {}  # slot addr -> (req, stack)


def simulate(n_entries, rng, n_alloc_stacks, n_free_stacks, base=0x7F4A00000000):
    act = bytearray()
    addr = array("q")
    size = array("q")
    stk = array("i")
    segs = {}                          # addr -> Seg
    avail = {"large": {}, "small": {}}  # pool -> {seg addr: Seg} with free slots
    live = []                          # [(slot addr, Seg)]
    cursor = [base]

    def emit(a, ad, sz, st):
        act.append(a)
        addr.append(ad)
        size.append(sz)
        stk.append(st)

    def new_seg(kind, total, slot, st):
        a = cursor[0]
        cursor[0] += total + rng.choice((0, 0, 2 * MiB, 20 * MiB))
        s = Seg(a, total, slot, kind, st)
        segs[a] = s
        emit(A_SALLOC, a, total, st)
        return s

    def do_alloc():
        st = int(n_alloc_stacks * rng.random() ** 2.5)
        r = rng.random()
        if r < 0.55:
            kind, req = "small", rng.choice((4, 512, 2048, 8192, 16384, 32768, 65536, rng.randrange(1, SLOT_SMALL + 1)))
        elif r < 0.995:
            kind, req = "large", rng.choice((SLOT_LARGE, SLOT_LARGE, 1536 * KiB, rng.randrange(MiB + 1, SLOT_LARGE + 1)))
        else:
            kind, req = "huge", rng.choice((64, 96, 128, 256)) * MiB - rng.choice((0, 0, 512, 4096))
        if kind == "huge":
            tot = (req + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)
            s = new_seg("large", tot, tot, st)
        else:
            pool = avail[kind]
            if pool:
                s = pool[next(reversed(pool))]
            else:
                s = new_seg(kind, SEG_LARGE if kind == "large" else SEG_SMALL,
                            SLOT_LARGE if kind == "large" else SLOT_SMALL, st)
                pool[s.addr] = s
        a = s.free.pop()
        if not s.free and s.kind != "huge":
            avail[s.kind].pop(s.addr, None)
        s.live += 1
        s.owner[a] = (req, st)
        live.append((a, s))
        emit(A_ALLOC, a, req, st)

    def do_free():
        i = rng.randrange(len(live))
        live[i], live[-1] = live[-1], live[i]
        a, s = live.pop()
        req, _ = s.owner.pop(a)
        fst = n_alloc_stacks + rng.randrange(n_free_stacks)
        emit(A_FREQ, a, req, fst)
        emit(A_FCOMP, a, req, fst)
        s.free.append(a)
        s.live -= 1
        if s.slot != s.total:
            avail[s.kind][s.addr] = s

    def empty_cache():
        for a in list(segs):
            s = segs[a]
            if s.live == 0:
                emit(A_SFREE, a, s.total, -1)
                del segs[a]
                avail[s.kind].pop(a, None)

    i = 0
    while len(act) < n_entries:
        left = n_entries - len(act)
        if left <= 2:
            # finish exactly on n_entries without creating a segment
            if left == 2 and live:
                do_free()
            else:
                pool = avail["small"] or avail["large"]
                if not pool:
                    raise SystemExit("cannot finish the trace exactly; try another --entries")
                do_alloc_existing(pool, live, emit, rng, n_alloc_stacks)
            continue
        target = 1800 + 1400 * math.sin(len(act) / 90_000.0) + 600 * math.sin(len(act) / 7_000.0)
        if live and (len(live) > target + 200 or (len(live) > 10 and rng.random() < 0.5 - 0.3 * (target - len(live)) / target)):
            do_free()
        else:
            do_alloc()
        i += 1
        if i % 40_000 == 0 and left > 100 + len(segs):
            empty_cache()
    assert len(act) == n_entries
    return act, addr, size, stk, segs


def do_alloc_existing(pool, live, emit, rng, n_alloc_stacks):
    s = pool[next(reversed(pool))]
    a = s.free.pop()
    if not s.free:
        pool.pop(s.addr, None)
    st = int(n_alloc_stacks * rng.random() ** 2.5)
    req = rng.randrange(s.slot // 2 + 1, s.slot + 1)
    s.live += 1
    s.owner[a] = (req, st)
    live.append((a, s))
    emit(A_ALLOC, a, req, st)


# ---------------------------------------------------------------------------
# streaming protocol-4 writer (CPython pickler semantics)
# ---------------------------------------------------------------------------

class Writer:
    FRAME_TARGET = 64 * 1024

    def __init__(self, f):
        self.f = f
        self.buf = bytearray()
        self.memo = {}       # id(obj) -> index
        self.keep = []
        self.n = 0

    def commit(self, force=False):
        if self.buf and (force or len(self.buf) >= self.FRAME_TARGET):
            self.f.write(b"\x95" + struct.pack("<Q", len(self.buf)))
            self.f.write(self.buf)
            self.buf = bytearray()

    def memoize(self, obj):
        self.buf += b"\x94"
        self.memo[id(obj)] = self.n
        self.keep.append(obj)
        self.n += 1

    def get_bytes(self, idx):
        return (b"h" + bytes((idx,))) if idx < 256 else (b"j" + struct.pack("<I", idx))

    @staticmethod
    def int_bytes(v):
        if 0 <= v < 256:
            return b"K" + bytes((v,))
        if 0 <= v < 65536:
            return b"M" + struct.pack("<H", v)
        if -(1 << 31) <= v < (1 << 31):
            return b"J" + struct.pack("<i", v)
        nb = (v.bit_length() >> 3) + 1
        raw = v.to_bytes(nb, "little", signed=True)
        if v < 0 and nb > 1 and raw[-1] == 0xFF and (raw[-2] & 0x80):
            raw = raw[:-1]
        return b"\x8a" + bytes((len(raw),)) + raw

    def obj(self, o):
        b = self.buf
        i = self.memo.get(id(o))
        if i is not None:
            b += self.get_bytes(i)
            return
        if o is None:
            b += b"N"
        elif o is True:
            b += b"\x88"
        elif o is False:
            b += b"\x89"
        elif isinstance(o, int):
            b += self.int_bytes(o)
        elif isinstance(o, float):
            b += b"G" + struct.pack(">d", o)
        elif isinstance(o, str):
            e = o.encode("utf-8", "surrogatepass")
            b += (b"\x8c" + bytes((len(e),)) + e) if len(e) < 256 else (b"X" + struct.pack("<I", len(e)) + e)
            self.memoize(o)
        elif isinstance(o, tuple):
            if len(o) == 2:
                self.obj(o[0])
                self.obj(o[1])
                self.buf += b"\x86"
                self.memoize(o)
            else:
                raise TypeError("only 2-tuples")
        elif isinstance(o, list):
            b += b"]"
            self.memoize(o)
            self.items(o)
        elif isinstance(o, dict):
            b += b"}"
            self.memoize(o)
            kv = list(o.items())
            for j in range(0, len(kv), 1000):
                chunk = kv[j:j + 1000]
                if len(chunk) > 1:
                    self.buf += b"("
                    for k, v in chunk:
                        self.obj(k)
                        self.obj(v)
                    self.buf += b"u"
                else:
                    self.obj(chunk[0][0])
                    self.obj(chunk[0][1])
                    self.buf += b"s"
        else:
            raise TypeError(type(o))
        self.commit()

    def items(self, lst):
        for j in range(0, len(lst), 1000):
            chunk = lst[j:j + 1000]
            if len(chunk) > 1:
                self.buf += b"("
                for x in chunk:
                    self.obj(x)
                self.buf += b"e"
            elif chunk:
                self.obj(chunk[0])
                self.buf += b"a"


def parse_args(argv):
    opts = {"out": "/tmp/memgate-large.pickle", "n": N_DEFAULT, "annotate": None, "shape": "shared",
            "devices": None}
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--entries":
            opts["n"] = int(args.pop(0))
        elif a == "--annotations":
            opts["annotate"] = True
        elif a == "--shape":
            opts["shape"] = args.pop(0)
            if opts["shape"] not in ("shared", "torch"):
                raise SystemExit("--shape is shared or torch")
        elif a == "--devices":
            opts["devices"] = int(args.pop(0))
        elif a.startswith("-"):
            # `--help`, or an option misspelt: never a file name to write.
            raise SystemExit(__doc__)
        else:
            opts["out"] = a
    torch = opts["shape"] == "torch"
    # torch's shape comes with annotations and two devices unless told otherwise
    if opts["annotate"] is None:
        opts["annotate"] = torch
    if opts["devices"] is None:
        opts["devices"] = 2 if torch else 1
    return opts


def build_segments(segs, stacks, device, torch, empty):
    """The final segments of one device, sorted by address; blocks tile each
    segment.  In torch's shape every live block and segment gets a list of
    its own (shared with its trace entries, as torch shares a traceback's
    list), returned as {address: list} maps for blocks and segments."""
    seg_objs, block_lists, seg_lists = [], {}, {}
    for a in sorted(segs):
        s = segs[a]
        blocks = []
        free = set(s.free)
        cur = None
        alloc_sz = req_sz = 0
        for sa in range(s.addr, s.addr + s.total, s.slot):
            if sa in free:
                if cur is not None:
                    cur["size"] += s.slot
                else:
                    cur = {"address": sa, "size": s.slot, "requested_size": 0, "state": "inactive", "frames": empty}
                    blocks.append(cur)
            else:
                cur = None
                req, st = s.owner[sa]
                frames = list(stacks[st]) if torch else stacks[st]
                block_lists[sa] = frames
                blocks.append({"address": sa, "size": s.slot, "requested_size": req, "state": "active_allocated",
                               "frames": frames})
                alloc_sz += s.slot
                req_sz += req
        frames = list(stacks[s.stack]) if torch else stacks[s.stack]
        seg_lists[s.addr] = frames
        seg_objs.append({"device": device, "address": s.addr, "total_size": s.total, "allocated_size": alloc_sz,
                         "active_size": alloc_sz, "requested_size": req_sz, "stream": 0,
                         "segment_type": "small" if s.kind == "small" else "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": frames, "blocks": blocks})
    return seg_objs, block_lists, seg_lists


def annotation_marks(total, annotate):
    """Entry index -> annotation events placed just before it: 200
    iterations, each a ProfilerStep#k span holding forward / backward /
    optimizer spans (40% / 40% / 20% of its entries)."""
    marks = {}
    if not annotate:
        return marks
    per = max(1, total // 200)
    for k, start in enumerate(range(0, total, per)):
        step = f"ProfilerStep#{k}"
        cut = [start, start + per * 2 // 5, start + per * 4 // 5, min(start + per, total)]
        marks.setdefault(cut[0], []).extend([(step, "START"), ("## forward ##", "START")])
        marks.setdefault(cut[1], []).extend([("## forward ##", "END"), ("## backward ##", "START")])
        marks.setdefault(cut[2], []).extend([("## backward ##", "END"), ("Optimizer.step#AdamW.step", "START")])
        marks.setdefault(cut[3], []).extend([("Optimizer.step#AdamW.step", "END"), (step, "END")])
    return marks


class TorchFrames:
    """The `frames` of trace entries in torch's shape: a fresh list per
    alloc / segment_alloc (frame dicts shared), the final allocation of a
    live block or segment reusing the list its segment entry holds, frees
    reusing their allocation's list; segment_free has no frames."""

    def __init__(self, w, stacks, sim, block_lists, seg_lists):
        act, addr = sim[0], sim[1]
        self.w, self.stacks = w, stacks
        self.stack_bytes = {}
        self.open = {}      # (kind, address) -> memo bytes of the allocation's list
        # index of the entry that made each live block / segment -> its list
        last = {}
        for j, a in enumerate(act):
            if a == A_ALLOC or a == A_SALLOC:
                last[(a, addr[j])] = j
        self.final = {}
        for kind, lists in ((A_ALLOC, block_lists), (A_SALLOC, seg_lists)):
            for ad, lst in lists.items():
                self.final[last[(kind, ad)]] = lst

    def fresh(self, st):
        w = self.w
        w.buf += b"]\x94("
        idx = w.n
        w.n += 1
        sb = self.stack_bytes.get(st)
        if sb is None:
            for f in self.stacks[st]:
                w.obj(f)
            sb = self.stack_bytes[st] = b"".join(w.get_bytes(w.memo[id(f)]) for f in self.stacks[st])
        else:
            w.buf += sb
        w.buf += b"e"
        return w.get_bytes(idx)

    def write(self, j, a, ad, st, key):
        """Write `frames` of entry j (action a at address ad, stack st)."""
        if a == A_SFREE:
            return
        kind = A_SALLOC if a == A_SALLOC else A_ALLOC
        key("frames")
        if a == A_ALLOC or a == A_SALLOC:
            lst = self.final.get(j)
            if lst is not None:
                self.w.obj(lst)
                self.open[(kind, ad)] = self.w.get_bytes(self.w.memo[id(lst)])
            else:
                self.open[(kind, ad)] = self.fresh(st)
        else:
            self.w.buf += self.open[(kind, ad)]


def write_trace(w, sim, stacks, marks, anns, device, torch_frames):
    """One device's trace, streamed (the same bytes CPython would write)."""
    act, addr, size, stk = sim[:4]
    w.buf += b"]"
    w.memoize([])
    names = [sys.intern(x) for x in ACTION_NAMES]
    tclock = 1_760_000_000_000_000
    randrange = random.Random(7).randrange
    get = w.get_bytes
    memo = w.memo
    int_bytes = Writer.int_bytes
    kcache = {}

    def key(k):
        kb = kcache.get(k)
        if kb is None:
            i = memo.get(id(k))
            if i is None:       # first use: written and memoized in place
                w.obj(k)
                i = memo[id(k)]
                kcache[k] = get(i)
                return
            kb = kcache[k] = get(i)
        w.buf += kb

    total = len(act)
    m = 0
    for j in range(total):
        for name, stage in marks.get(j, ()):
            anns.append({"name": name, "stage": stage, "device": device, "time_us": tclock + 1})
        if j % 1000 == 0:
            m = min(1000, total - j)
            if m > 1:
                w.buf += b"("
        w.buf += b"}\x94("
        w.n += 1  # the entry dict (never referenced again)
        key("action")
        w.obj(names[act[j]])
        key("addr")
        w.buf += int_bytes(addr[j])
        key("size")
        w.buf += int_bytes(size[j])
        key("stream")
        w.buf += b"K\x00"
        tclock += randrange(2, 180)
        key("time_us")
        w.buf += int_bytes(tclock)
        key("compile_context")
        w.buf += b"\x8c\x03N/A\x94"
        w.n += 1  # a fresh 'N/A' str per entry, as torch writes it
        key("user_metadata")
        w.obj("")
        st = stk[j]
        if torch_frames is not None:
            torch_frames.write(j, act[j], addr[j], st, key)
        elif st >= 0:
            key("frames")
            w.obj(stacks[st])
        w.buf += b"u"
        if j % 1000 == m - 1:
            w.buf += b"e" if m > 1 else b"a"
            w.commit()
    for name, stage in marks.get(total, ()):
        anns.append({"name": name, "stage": stage, "device": device, "time_us": tclock + 1})


SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}}


def write_file(out, devs, stacks, opts):
    torch = opts["shape"] == "torch"
    tmp = out + ".tmp"
    with open(tmp, "wb", buffering=1 << 20) as f:
        w = Writer(f)
        f.write(b"\x80\x04")
        w.buf += b"}"
        w.memoize({})
        w.buf += b"("
        w.obj("segments")
        w.obj([s for d in devs for s in d["segs"]])
        w.obj("device_traces")
        w.buf += b"]"
        w.memoize([])
        if len(devs) > 1:
            w.buf += b"("
        anns = []
        for d, dev in enumerate(devs):
            tf = TorchFrames(w, stacks, dev["sim"], dev["blocks"], dev["seglists"]) if torch else None
            marks = annotation_marks(len(dev["sim"][0]), opts["annotate"])
            write_trace(w, dev["sim"], stacks, marks, anns, d, tf)
        # close device_traces: one item -> APPEND, several -> APPENDS
        w.buf += b"e" if len(devs) > 1 else b"a"
        w.obj("allocator_settings")
        w.obj(SETTINGS)
        if anns:
            w.obj("external_annotations")
            w.obj(anns)
        w.buf += b"u"
        w.buf += b"."
        w.commit(force=True)
    os.replace(tmp, out)


def main(argv):
    opts = parse_args(argv)
    out, n, torch = opts["out"], opts["n"], opts["shape"] == "torch"
    t0 = time.time()
    rng = random.Random(20240611)
    P = make_frames(rng)
    stacks = make_stacks(rng, P, N_ALLOC_STACKS, False) + make_stacks(rng, P, N_FREE_STACKS, True)
    empty = []
    devs = []
    nd = opts["devices"]
    for d in range(nd):
        per = n // nd + (n % nd if d == nd - 1 else 0)
        sim = simulate(per, rng, N_ALLOC_STACKS, N_FREE_STACKS, 0x7F4A00000000 + d * (1 << 40))
        segs, blocks, seglists = build_segments(sim[4], stacks, d, torch, empty)
        devs.append({"sim": sim, "segs": segs, "blocks": blocks, "seglists": seglists})
    t1 = time.time()
    write_file(out, devs, stacks, opts)
    t2 = time.time()
    sz = os.path.getsize(out)
    seg_objs = [s for d in devs for s in d["segs"]]
    n_live = sum(1 for s in seg_objs for b in s["blocks"] if b["state"] == "active_allocated")
    print(f"wrote {out}: {sz} bytes ({sz / 1e6:.1f} MB), {n} trace entries on {nd} device(s), "
          f"{opts['shape']} shape, {len(seg_objs)} segments, "
          f"{sum(len(s['blocks']) for s in seg_objs)} blocks ({n_live} live), "
          f"{N_FRAMES} frame dicts, {len(stacks)} stack lists; simulate {t1 - t0:.1f}s, write {t2 - t1:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
