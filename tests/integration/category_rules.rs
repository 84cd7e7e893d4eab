//! The built-in rule sets on realistic call stacks (innermost frame first),
//! Python-only and with the C++ frames torch records under
//! `_record_memory_history(stacks="all")`.

use memgate::analysis::{PatternBudget, RuleSet};

const TORCH: &str = "/opt/conda/lib/python3.11/site-packages/torch";

fn t(rel: &str) -> String {
    format!("{TORCH}/{rel}")
}

/// The innermost frames of every CUDA allocation with C++ stacks.
fn cuda_alloc() -> Vec<(String, String)> {
    [
        ("torch::unwind::unwind()", "??"),
        ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
        ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
        (
            "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
            "CUDACachingAllocator.cpp",
        ),
        ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
    ]
    .iter()
    .map(|(n, f)| (n.to_string(), f.to_string()))
    .collect()
}

fn stack(frames: &[(&str, String)]) -> Vec<(String, String)> {
    frames
        .iter()
        .map(|(n, f)| (n.to_string(), f.clone()))
        .collect()
}

fn with_cpp(cpp: &[(&str, &str)], rest: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut v = cuda_alloc();
    v.extend(cpp.iter().map(|(n, f)| (n.to_string(), f.to_string())));
    v.extend(rest);
    v
}

fn default_category(frames: &[(String, String)]) -> String {
    let rules = RuleSet::builtin_default();
    let pairs: Vec<(&str, &str)> = frames
        .iter()
        .map(|(n, f)| (n.as_str(), f.as_str()))
        .collect();
    rules.category_of(&pairs).to_string()
}

fn mosaic_category(frames: &[(String, String)]) -> String {
    let rules = RuleSet::mosaic();
    let pairs: Vec<(&str, &str)> = frames
        .iter()
        .map(|(n, f)| (n.as_str(), f.as_str()))
        .collect();
    rules.category_of(&pairs).to_string()
}

fn train_tail() -> Vec<(String, String)> {
    stack(&[
        ("train_step", "/workspace/train.py".into()),
        ("main", "/workspace/train.py".into()),
        ("<module>", "/workspace/train.py".into()),
    ])
}

fn backward_py() -> Vec<(String, String)> {
    let mut v = stack(&[
        ("_engine_run_backward", t("autograd/graph.py")),
        ("backward", t("autograd/__init__.py")),
        ("backward", t("_tensor.py")),
    ]);
    v.extend(train_tail());
    v
}

const ENGINE: &[(&str, &str)] = &[
    ("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", "function.h"),
    ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*)", "engine.cpp"),
    ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "engine.cpp"),
    ("torch::autograd::Engine::execute(...)", "engine.cpp"),
    ("torch::autograd::python::PythonEngine::execute(...)", "python_engine.cpp"),
    ("THPEngine_run_backward(_object*, _object*, _object*)", "python_engine.cpp"),
];

fn module_forward() -> Vec<(String, String)> {
    let mut v = stack(&[
        ("forward", t("nn/modules/linear.py")),
        ("_call_impl", t("nn/modules/module.py")),
        ("_wrapped_call_impl", t("nn/modules/module.py")),
        ("forward", "/workspace/model.py".into()),
        ("_call_impl", t("nn/modules/module.py")),
    ]);
    v.extend(train_tail());
    v
}

#[test]
fn a_module_forward_is_an_activation_with_and_without_cpp_frames() {
    assert_eq!(default_category(&module_forward()), "activation");
    let cpp = with_cpp(
        &[
            ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??"),
            ("at::(anonymous namespace)::wrapper_CUDA_mm(at::Tensor const&, at::Tensor const&)", "RegisterCUDA_0.cpp"),
            ("torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)", "VariableType_2.cpp"),
            ("torch::autograd::THPVariable_linear(_object*, _object*, _object*)", "python_nn_functions.cpp"),
        ],
        module_forward(),
    );
    assert_eq!(default_category(&cpp), "activation");
}

#[test]
fn adam_state_created_in_init_group_is_optimizer_state_although_a_training_step_called_it() {
    let mut py = stack(&[
        ("_init_group", t("optim/adam.py")),
        ("step", t("optim/adam.py")),
        ("_use_grad", t("optim/optimizer.py")),
        ("wrapper", t("optim/optimizer.py")),
    ]);
    py.extend(train_tail());
    assert_eq!(default_category(&py), "optimizer-state");
    let cpp = with_cpp(
        &[
            ("at::native::zeros_like(at::Tensor const&, ...)", "??"),
            (
                "torch::autograd::THPVariable_zeros_like(_object*, _object*, _object*)",
                "python_torch_functions_2.cpp",
            ),
        ],
        py,
    );
    assert_eq!(default_category(&cpp), "optimizer-state");
}

#[test]
fn loss_backward_is_gradient_from_python_and_from_the_cpp_autograd_engine() {
    assert_eq!(default_category(&backward_py()), "gradient");
    let mut cpp_frames = vec![
        (
            "at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
            "??",
        ),
        (
            "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)",
            "Functions.cpp",
        ),
    ];
    cpp_frames.extend_from_slice(ENGINE);
    assert_eq!(
        default_category(&with_cpp(&cpp_frames, backward_py())),
        "gradient"
    );
    // The autograd device thread has no Python frames at all.
    let mut thread = vec![
        (
            "at::native::clone(at::Tensor const&, std::optional<c10::MemoryFormat>)",
            "??",
        ),
        (
            "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)",
            "accumulate_grad.cpp",
        ),
    ];
    thread.extend_from_slice(&ENGINE[..3]);
    thread.push(("start_thread", "??"));
    assert_eq!(default_category(&with_cpp(&thread, Vec::new())), "gradient");
}

#[test]
fn activation_recomputed_inside_backward_counts_as_activation() {
    let mut py = stack(&[
        ("forward", t("nn/modules/linear.py")),
        ("_call_impl", t("nn/modules/module.py")),
        ("forward", "/workspace/model.py".into()),
        ("recompute_fn", t("utils/checkpoint.py")),
        ("unpack_hook", t("utils/checkpoint.py")),
    ]);
    py.extend(backward_py());
    assert_eq!(default_category(&py), "activation");
    let mut cpp: Vec<(&str, &str)> = vec![(
        "torch::autograd::VariableType::(anonymous namespace)::mm(...)",
        "VariableType_2.cpp",
    )];
    let rest = {
        let mut v = py.clone();
        v.insert(
            5,
            (
                "torch::autograd::SavedVariable::unpack(std::shared_ptr<torch::autograd::Node>) const".into(),
                "saved_variable.cpp".into(),
            ),
        );
        v
    };
    cpp.push((
        "torch::autograd::THPVariable_linear(_object*, _object*, _object*)",
        "python_nn_functions.cpp",
    ));
    assert_eq!(default_category(&with_cpp(&cpp, rest)), "activation");
}

#[test]
fn module_construction_and_moves_to_the_device_are_parameters() {
    let mut init = stack(&[
        ("__init__", t("nn/modules/linear.py")),
        ("__init__", "/workspace/model.py".into()),
        ("build_model", "/workspace/train.py".into()),
    ]);
    init.extend(train_tail());
    assert_eq!(default_category(&init), "parameter");
    let to = with_cpp(
        &[
            ("at::native::_to_copy(at::Tensor const&, ...)", "??"),
            (
                "torch::autograd::THPVariable_to(_object*, _object*, _object*)",
                "python_variable_methods.cpp",
            ),
        ],
        stack(&[
            ("convert", t("nn/modules/module.py")),
            ("_apply", t("nn/modules/module.py")),
            ("to", t("nn/modules/module.py")),
            ("build_model", "/workspace/train.py".into()),
        ]),
    );
    assert_eq!(default_category(&to), "parameter");
    let cuda = stack(&[
        ("<lambda>", t("nn/modules/module.py")),
        ("_apply", t("nn/modules/module.py")),
        ("cuda", t("nn/modules/module.py")),
        ("main", "/workspace/train.py".into()),
    ]);
    assert_eq!(default_category(&cuda), "parameter");
    let reset = stack(&[
        ("_compute_inv_freq", "/workspace/model.py".into()),
        ("reset_parameters", "/workspace/model.py".into()),
        ("__init__", "/workspace/model.py".into()),
    ]);
    assert_eq!(default_category(&reset), "parameter");
    let load = stack(&[
        ("_load_from_state_dict", t("nn/modules/module.py")),
        ("load", t("nn/modules/module.py")),
        ("load_state_dict", t("nn/modules/module.py")),
        ("load_checkpoint", "/workspace/train.py".into()),
    ]);
    assert_eq!(default_category(&load), "parameter");
}

#[test]
fn a_batch_moved_with_to_is_not_a_parameter() {
    let batch = with_cpp(
        &[
            ("at::native::_to_copy(at::Tensor const&, ...)", "??"),
            (
                "torch::autograd::THPVariable_to(_object*, _object*, _object*)",
                "python_variable_methods.cpp",
            ),
        ],
        stack(&[
            ("get_batch", "/workspace/data.py".into()),
            ("train_step", "/workspace/train.py".into()),
        ]),
    );
    assert_eq!(default_category(&batch), "other");
}

#[test]
fn nccl_and_hccl_collectives_are_communication() {
    let nccl = with_cpp(
        &[
            ("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, c10d::AllreduceOptions const&)", "ProcessGroupNCCL.cpp"),
            ("c10d::Reducer::run_comm_hook(c10d::GradBucket&)", "reducer.cpp"),
        ],
        stack(&[("all_reduce", t("distributed/distributed_c10d.py"))]),
    );
    assert_eq!(default_category(&nccl), "communication");
    // A DDP hook inside the autograd engine: the innermost NCCL frame wins.
    let mut ddp = vec![(
        "c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, c10d::AllreduceOptions const&)",
        "ProcessGroupNCCL.cpp",
    )];
    ddp.extend_from_slice(ENGINE);
    assert_eq!(
        default_category(&with_cpp(&ddp, Vec::new())),
        "communication"
    );
    let hccl = stack(&[
        ("c10d_npu::ProcessGroupHCCL::allreduce(std::vector<at::Tensor>&, c10d::AllreduceOptions const&)", "ProcessGroupHCCL.cpp".into()),
        ("allreduce_grads", "/workspace/train.py".into()),
    ]);
    assert_eq!(default_category(&hccl), "communication");
    let py = stack(&[
        (
            "all_gather_into_tensor",
            t("distributed/distributed_c10d.py"),
        ),
        ("_unshard", t("distributed/fsdp/_runtime_utils.py")),
    ]);
    assert_eq!(default_category(&py), "communication");
}

#[test]
fn allocator_internals_never_decide_and_no_frames_is_frameless() {
    assert_eq!(default_category(&cuda_alloc()), "other");
    assert_eq!(default_category(&[]), "frameless");
    let decorated = stack(&[
        ("evaluate", "/workspace/eval.py".into()),
        ("decorate_context", t("utils/_contextlib.py")),
        ("main", "/workspace/eval.py".into()),
    ]);
    assert_eq!(
        default_category(&decorated),
        "other",
        "torch.no_grad is not autograd work"
    );
}

#[test]
fn default_matching_is_case_insensitive_and_mosaic_matching_is_not() {
    let s = stack(&[("Forward", "/workspace/model.py".into())]);
    assert_eq!(default_category(&s), "activation");
    assert_eq!(mosaic_category(&s), "UNKNOWN");
}

#[test]
fn mosaic_checks_fsdp_on_the_whole_stack_then_the_innermost_matching_frame() {
    let fsdp = stack(&[
        ("forward", "/workspace/model.py".into()),
        (
            "_pre_forward",
            t("distributed/fsdp/fully_sharded_data_parallel.py"),
        ),
    ]);
    assert_eq!(mosaic_category(&fsdp), "FSDP");
    let inner_backward = stack(&[
        ("mm_backward", "x.py".into()),
        ("forward", "/workspace/model.py".into()),
    ]);
    assert_eq!(mosaic_category(&inner_backward), "BACKWARD");
    assert_eq!(
        mosaic_category(&stack(&[("_init_group", t("optim/adam.py"))])),
        "OPTIMIZER"
    );
    assert_eq!(
        mosaic_category(&stack(&[("get_params", "a.py".into())])),
        "PARAMETER"
    );
    assert_eq!(
        mosaic_category(&stack(&[("dist_mean", "a.py".into())])),
        "NET"
    );
    assert_eq!(
        mosaic_category(&stack(&[("validate_process_group_x", "a.py".into())])),
        "NET_SETUP"
    );
    assert_eq!(
        mosaic_category(&stack(&[("compute_grad_stats", "a.py".into())])),
        "STATS"
    );
    assert_eq!(mosaic_category(&cuda_alloc()), "UNKNOWN");
    assert_eq!(mosaic_category(&[]), "UNKNOWN");
}

#[test]
fn rules_from_spec_accept_default_mosaic_and_refuse_a_missing_file() {
    assert_eq!(RuleSet::from_spec("default").unwrap().source(), "default");
    assert_eq!(
        RuleSet::from_spec("mosaic").unwrap().categories()[0],
        "FSDP"
    );
    let e = RuleSet::from_spec("/no/such/rules.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read"), "{e}");
}

#[test]
fn a_custom_rule_matches_any_frame_name_or_file_before_the_defaults() {
    let custom = vec![PatternBudget::default()
        .rule("moe-expert", "expert", "test")
        .unwrap()];
    let rules = RuleSet::with_custom(custom, RuleSet::builtin_default()).unwrap();
    let mut s = module_forward();
    s.push(("route".into(), "/workspace/moe/expert_parallel.py".into()));
    let pairs: Vec<(&str, &str)> = s.iter().map(|(n, f)| (n.as_str(), f.as_str())).collect();
    assert_eq!(rules.category_of(&pairs), "moe-expert");
    assert_eq!(rules.categories()[0], "moe-expert");
    assert!(rules.categories().iter().any(|c| c == "activation"));
}
