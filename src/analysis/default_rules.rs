//! The built-in `default` category table (docs/figures.md#the-default-rules) as data: printed by
//! `memgate profile --print-rules` and compiled by `RuleSet`.
//!
//! For each frame (innermost first) the rows are tried top to bottom; the
//! first row whose patterns all match decides. The row order only matters
//! between rows that can match the *same* frame; across frames, the
//! innermost deciding frame wins, which is why recomputation inside backward
//! (a module `forward` below the autograd engine) counts as activation.

use crate::vocab::NoStory;

/// Category name of rows that mark frames which must never decide.
pub(crate) const SKIP: &str = "skip";

/// Default categories, in report order. The last two are decided by no
/// row (docs/figures.md#memory-with-no-story): `frameless` is memory
/// allocated with no frames that no [phase and lifetime
/// rule](super::frameless) places, `pre-trace` the frameless memory live
/// since before recording began.
pub(crate) const DEFAULT_CATEGORIES: [&str; 8] = [
    "parameter",
    "optimizer-state",
    "gradient",
    "activation",
    "communication",
    "other",
    NoStory::Frameless.id(),
    NoStory::PreTrace.id(),
];

/// One row: both given patterns must match the same frame
/// (case-insensitive regexes, unanchored unless they say so).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DefaultRow {
    pub(crate) category: &'static str,
    pub(crate) name: Option<&'static str>,
    pub(crate) file: Option<&'static str>,
}

const fn name(category: &'static str, pattern: &'static str) -> DefaultRow {
    DefaultRow {
        category,
        name: Some(pattern),
        file: None,
    }
}

const fn file(category: &'static str, pattern: &'static str) -> DefaultRow {
    DefaultRow {
        category,
        name: None,
        file: Some(pattern),
    }
}

const fn both(category: &'static str, n: &'static str, f: &'static str) -> DefaultRow {
    DefaultRow {
        category,
        name: Some(n),
        file: Some(f),
    }
}

pub(crate) const DEFAULT_ROWS: &[DefaultRow] = &[
    // Allocator and unwinder internals sit innermost in every C++ stack, and
    // context managers / decorators say nothing about what memory is for.
    name(SKIP, r"^torch(_npu)?::unwind::"),
    name(SKIP, r"CapturedTraceback"),
    name(SKIP, r"CachingAllocator"),
    name(SKIP, r"gather_with_cpp"),
    name(
        SKIP,
        r"^c10::(StorageImpl|TensorImpl)::~|THPVariable_subclass_dealloc",
    ),
    file(
        SKIP,
        r"torch[/\\]autograd[/\\](grad_mode|profiler)|torch[/\\]utils[/\\]_contextlib\.py",
    ),
    // Optimizers: torch.optim (incl. `_init_group` state creation), fused /
    // foreach kernels, DeepSpeed and Apex optimizers, ZeRO.
    file(
        "optimizer-state",
        r"torch[/\\](distributed[/\\])?optim[/\\]",
    ),
    name(
        "optimizer-state",
        r"^_init_group$|_multi_tensor_|_single_tensor_|_fused_(adamw?|sgd|adagrad)",
    ),
    name(
        "optimizer-state",
        r"FusedAdam|FusedLamb|CPUAdam|DeepSpeedCPU",
    ),
    file(
        "optimizer-state",
        r"deepspeed[/\\](ops[/\\](adam|lamb|adagrad)|runtime[/\\]zero)|apex[/\\]optimizers",
    ),
    // Module forward and functional ops: activations (also when recomputed
    // under backward by activation checkpointing).
    name("activation", r"forward"),
    name("activation", r"^_(wrapped_)?call_impl$"),
    file("activation", r"torch[/\\]nn[/\\]functional\.py"),
    // Autograd backward: Python entry points, the C++ engine, generated
    // `*Backward*` nodes, gradient accumulation.
    name("gradient", r"backward"),
    name(
        "gradient",
        r"autograd::(Engine|python::PythonEngine|Node::|PyNode|CppNode|GraphTask|AccumulateGrad|generated::)|THPEngine|^clip_grad_norm_?$",
    ),
    file("gradient", r"torch[/\\]autograd[/\\]"),
    // Collectives: torch.distributed, c10d process groups, NCCL / HCCL.
    file("communication", r"torch[/\\]distributed[/\\]|nccl|hccl"),
    name("communication", r"c10d|nccl|hccl|ProcessGroup"),
    // Weights: module construction, `.to()` / `.cuda()` moves, parameter
    // init, state-dict and checkpoint loading.
    file("parameter", r"torch[/\\]nn[/\\](parameter|init)\.py"),
    name(
        "parameter",
        r"reset_parameters|init_weights|initialize_parameters|^materialize$|load_state_dict|from_pretrained|_load_pretrained_model",
    ),
    both(
        "parameter",
        r"^(_apply|convert|to|cuda|npu|xpu|half|float|double|bfloat16|to_empty|type)$",
        r"torch[/\\]nn[/\\]modules[/\\]module\.py",
    ),
    name("parameter", r"^__init__$"),
    file("parameter", r"torch[/\\]serialization\.py|safetensors"),
];
