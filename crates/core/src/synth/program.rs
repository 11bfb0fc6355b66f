//! What each rank does in one denoising step of a Wan2.1-like text-to-video run, as a list
//! of instructions for the simulator: NVTX pushes and pops, kernel launches, host work,
//! synchronising calls. All ranks run the same program; the straggler's differs in one step.

/// The kernels the model launches, with a nominal duration.
pub struct KernelSpec {
    pub short: &'static str,
    pub demangled: &'static str,
    pub duration_ns: i64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub registers: u32,
    pub shared_bytes: u32,
    pub nccl: bool,
}

macro_rules! kernel {
    ($short:expr, $demangled:expr, $dur:expr, $grid:expr, $block:expr, $regs:expr, $smem:expr, $nccl:expr) => {
        KernelSpec {
            short: $short,
            demangled: $demangled,
            duration_ns: $dur,
            grid: $grid,
            block: $block,
            registers: $regs,
            shared_bytes: $smem,
            nccl: $nccl,
        }
    };
}

pub const LAYER_NORM: usize = 0;
pub const GEMM_QKV: usize = 1;
pub const SEND_RECV: usize = 2;
pub const FLASH: usize = 3;
pub const GEMM_OUT: usize = 4;
pub const GEMM_UP: usize = 5;
pub const GELU: usize = 6;
pub const GEMM_DOWN: usize = 7;
pub const ADD: usize = 8;
pub const TIME_EMBED: usize = 9;
/// Small fused kernels (torch.compile's Triton) launched at Python speed after a sync.
pub const TRITON_MUL: usize = 10;
pub const TRITON_NORM: usize = 11;
/// A gradient all-reduce (`synth --gradient-all-reduce`).
pub const ALL_REDUCE: usize = 12;

/// Durations are chosen so that a step splits roughly like the seed's trace: about half
/// compute, a third or more NCCL, and the rest idle.
pub const KERNELS: &[KernelSpec] = &[
    kernel!(
        "vectorized_layer_norm_kernel",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float>(int, float, const c10::BFloat16 *, const c10::BFloat16 *, const c10::BFloat16 *, float *, float *, c10::BFloat16 *)",
        40_000,
        [4680, 1, 1],
        [256, 1, 1],
        30,
        0,
        false
    ),
    kernel!(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        1_200_000,
        [132, 1, 1],
        [384, 1, 1],
        168,
        213_000,
        false
    ),
    kernel!(
        "ncclDevKernel_SendRecv",
        "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        3_400_000,
        [4, 1, 1],
        [640, 1, 1],
        96,
        0,
        true
    ),
    kernel!(
        "flash_fwd_kernel",
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, false, false, false, false, true, true, false, false>(flash::Flash_fwd_params)",
        3_500_000,
        [30, 40, 1],
        [128, 1, 1],
        255,
        49_152,
        false
    ),
    kernel!(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
        600_000,
        [132, 1, 1],
        [256, 1, 1],
        168,
        180_000,
        false
    ),
    kernel!(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        2_000_000,
        [132, 1, 1],
        [384, 1, 1],
        168,
        213_000,
        false
    ),
    kernel!(
        "vectorized_elementwise_kernel",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 4)]::operator ()() const::[lambda(c10::BFloat16) (instance 1)], std::array<char *, 2>>(int, T2, T3)",
        8_000,
        [9360, 1, 1],
        [128, 1, 1],
        24,
        0,
        false
    ),
    kernel!(
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize256x128x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas",
        2_000_000,
        [132, 1, 1],
        [384, 1, 1],
        168,
        213_000,
        false
    ),
    kernel!(
        "elementwise_kernel",
        "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16>>(at::TensorIteratorBase &, const at::native::CUDAFunctor_add<c10::BFloat16> &)::[lambda(int) (instance 1)]>(int, T3)",
        6_000,
        [4680, 1, 1],
        [128, 1, 1],
        26,
        0,
        false
    ),
    kernel!(
        "timestep_embedding_kernel",
        "void at::native::vectorized_elementwise_kernel<4, at::native::sin_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)], std::array<char *, 2>>(int, T2, T3)",
        30_000,
        [64, 1, 1],
        [128, 1, 1],
        20,
        0,
        false
    ),
    kernel!(
        "triton_poi_fused_mul_silu_0",
        "triton_poi_fused_mul_silu_0",
        22_000,
        [2048, 1, 1],
        [128, 1, 1],
        32,
        0,
        false
    ),
    kernel!(
        "triton_red_fused_add_native_layer_norm_1",
        "triton_red_fused_add_native_layer_norm_1",
        36_000,
        [18900, 1, 1],
        [256, 1, 1],
        40,
        0,
        false
    ),
    kernel!(
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
        3_400_000,
        [4, 1, 1],
        [640, 1, 1],
        96,
        0,
        true
    ),
];

#[derive(Debug, Clone)]
pub enum Instr {
    Push(String),
    /// An aten op range with its own text, as `emit_nvtx(record_shapes=True)` writes it:
    /// `aten::linear, seq = 41, op_id = 41, sizes = [[…]], input_op_ids = [(40, 0)]` (the
    /// simulator numbers the ops of its rank).
    PushOp {
        op: &'static str,
        sizes: &'static str,
    },
    Pop,
    /// Python time between calls.
    HostWork(i64),
    /// The Python of one aten op before its launches (6 µs, or as the run says: see
    /// `SynthOptions::host_per_op_ns`).
    OpHostWork,
    /// Python time between calls drawn anew each time between the two bounds (from a
    /// random stream of its own, so that the run's other draws stay those of a run
    /// without it).
    HostWorkBetween(i64, i64),
    /// CPU time of exactly this length with no call at all (a straggler's Python stall).
    Stall(i64),
    /// `cudaGraphLaunch` of graph `graph`: its kernels run back to back on the compute
    /// stream. The first launch of a graph captures it (its ops' NVTX ranges and launches,
    /// no GPU work) and instantiates it.
    GraphLaunch {
        graph: u32,
        nodes: &'static [(usize, &'static str)],
    },
    /// `cudaLaunchKernel` of `KERNELS[kernel]`.
    Launch {
        kernel: usize,
    },
    /// `cudaStreamWaitEvent` on an event of another device: the next kernel starts
    /// `extra_ns` after the stream drains, although it was launched long before.
    CrossDeviceWait {
        extra_ns: i64,
    },
    /// `cudaMemcpyAsync` device→host of a few bytes (the `.item()` of the scheduler).
    CopyToHost {
        bytes: u64,
    },
    /// `cudaStreamSynchronize` (or `cudaDeviceSynchronize`): the CPU waits for the GPU.
    Synchronize {
        device_wide: bool,
    },
    /// An OS runtime call that blocks the thread for `ns` (a `read()` of the next batch).
    OsCall {
        name: &'static str,
        ns: i64,
    },
    /// Python time between calls, most of it spent waiting in an OS runtime call (a data
    /// loader's hand-off in `pthread_cond_wait`): the CPU time is as `HostWork`'s.
    HostWorkIn {
        ns: i64,
        os_call: &'static str,
    },
    /// A blocking `cudaMemcpy` device→host of `bytes` taking `ns` on the GPU (a checkpoint
    /// of the weights): the CPU waits in the call until the copy is done, seconds.
    BlockingCopyToHost {
        bytes: u64,
        ns: i64,
    },
}

pub struct StepShape {
    /// Shaped like real PyTorch exports: record_shapes op texts, 1–3 µs launch gaps, a JIT
    /// compile stall and a checkpoint (see `SynthOptions::clean`).
    pub realistic: bool,
    /// The scheduler synchronises after `.item()` (the default; off for a run without it).
    pub step_sync: bool,
    /// A JIT compilation on the launching thread before the step's first block (NVTX
    /// `KernelExecutor::compileFusion > nvrtc_compile`, no launches): how long.
    pub jit_ns: Option<i64>,
    /// A checkpoint of the weights after the step (a blocking copy): how long.
    pub checkpoint_ns: Option<i64>,
    pub blocks: u32,
    pub scheduler_ns: i64,
    pub time_embedding_host_ns: i64,
    pub cross_device_wait_ns: i64,
    /// Present for the straggler rank in the slow step: the pause before `cfg_uncond`.
    pub straggler_pause_ns: Option<i64>,
    /// What the straggler's thread does in its pause.
    pub straggler_stall: StragglerStall,
    /// A `cudaDeviceSynchronize` after each all-to-all, then 2–3 ms of Python before the
    /// next launch (xDiT's Ulysses attention with `use_sync=True`, as in the seed's run).
    pub sync_after_collective: bool,
    /// The blocks' compute replayed as CUDA graphs (torch.compile's reduce-overhead): each
    /// run of kernels between two all-to-alls one `cudaGraphLaunch`.
    pub cuda_graphs: bool,
    /// With `cuda_graphs`: the whole attention, its all-to-alls inside, one graph (one
    /// launch call before kernels and collectives that run after the call has ended).
    pub graph_attention: bool,
    /// Small ops after each all-to-all, each launched after Python of
    /// [`SMALL_OP_HOST_NS`] (kernels of 17–41 µs: after a sync, the GPU waits at each).
    pub small_ops: u32,
    /// With `sync_after_collective`: the syncs left out, the Python after them kept (the
    /// "after" of removing them).
    pub sync_removed: bool,
    /// The collectives are gradient all-reduces launched in a `backward` range, their
    /// results needed only after the next collective (DDP's buckets).
    pub gradient_all_reduce: bool,
}

/// The Python before each small op's launch.
pub const SMALL_OP_HOST_NS: (i64, i64) = (60_000, 100_000);

/// The graphs of a block (with `cuda_graphs`): their kernels and the aten op each was
/// captured in.
pub const GRAPH_QKV: &[(usize, &str)] =
    &[(LAYER_NORM, "aten::layer_norm"), (GEMM_QKV, "aten::linear")];
pub const GRAPH_FLASH: &[(usize, &str)] = &[(FLASH, "aten::_flash_attention_forward")];
pub const GRAPH_OUT: &[(usize, &str)] = &[(GEMM_OUT, "aten::linear")];
pub const GRAPH_FFN: &[(usize, &str)] = &[
    (LAYER_NORM, "aten::layer_norm"),
    (GEMM_UP, "aten::linear"),
    (GELU, "aten::gelu"),
    (GEMM_DOWN, "aten::linear"),
    (ADD, "aten::add"),
];
/// The whole attention as one graph, its two all-to-alls among its nodes.
pub const GRAPH_ATTENTION: &[(usize, &str)] = &[
    (LAYER_NORM, "aten::layer_norm"),
    (GEMM_QKV, "aten::linear"),
    (SEND_RECV, "nccl:all_to_all"),
    (FLASH, "aten::_flash_attention_forward"),
    (SEND_RECV, "nccl:all_to_all"),
    (GEMM_OUT, "aten::linear"),
];
/// Graph ids 1..=5, in this order.
pub const GRAPHS: [&[(usize, &str)]; 5] = [
    GRAPH_QKV,
    GRAPH_FLASH,
    GRAPH_OUT,
    GRAPH_FFN,
    GRAPH_ATTENTION,
];

/// What the straggler's launching thread is doing while the other ranks wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StragglerStall {
    /// It drains its device, then blocks in a `read()` of its next batch before
    /// `cfg_uncond` (an OS runtime call).
    Read,
    /// Plain Python: CPU time with no CUDA or OS call and no NVTX range of its own, inside
    /// the step's first `attention` (its device drained by the last step's sync), just
    /// before its first all-to-all.
    Cpu,
}

/// Python between a synchronised all-to-all and the next launch.
const AFTER_SYNC_HOST_NS: (i64, i64) = (2_000_000, 3_000_000);

/// An aten op range around zero or more launches, as `torch.autograd.profiler.emit_nvtx` does.
fn aten(program: &mut Vec<Instr>, op: &'static str, kernels: &[usize]) {
    aten_sized(program, op, None, kernels);
}

/// An aten op range whose text, in realistic traces, carries its shapes and op id:
/// a distinct text per op instance, as real exports have millions of.
fn aten_sized(
    program: &mut Vec<Instr>,
    op: &'static str,
    sizes: Option<&'static str>,
    kernels: &[usize],
) {
    program.push(match sizes {
        Some(sizes) => Instr::PushOp { op, sizes },
        None => Instr::Push(op.to_string()),
    });
    program.push(Instr::OpHostWork);
    for &k in kernels {
        program.push(Instr::Launch { kernel: k });
    }
    program.push(Instr::Pop);
}

/// The shapes record_shapes writes for the ops that carry them (the others' texts repeat).
const QKV_SIZES: &str = "[[1, 18900, 1536], [4608, 1536], [4608]]";
const OUT_SIZES: &str = "[[1, 18900, 1536], [1536, 1536], [1536]]";
const UP_SIZES: &str = "[[1, 18900, 1536], [8960, 1536], [8960]]";
const DOWN_SIZES: &str = "[[1, 18900, 8960], [1536, 8960], [1536]]";
const SMALL_OP_SIZES: &str = "[[1, 18900, 1536], [1536]]";
const FLASH_SIZES: &str = "[[1, 18900, 12, 128], [1, 18900, 12, 128], [1, 18900, 12, 128], [], []]";

/// A transformer block whose compute replays as CUDA graphs (the op ranges are gone: they
/// were recorded once, at capture), launched between its two all-to-alls.
fn graph_block(p: &mut Vec<Instr>, block: u32, shape: &StepShape) {
    let launch = |p: &mut Vec<Instr>, graph: u32| {
        p.push(Instr::HostWork(20_000));
        p.push(Instr::GraphLaunch {
            graph,
            nodes: GRAPHS[graph as usize - 1],
        });
    };
    p.push(Instr::Push(format!("transformer_block_{block}")));
    p.push(Instr::Push("attention".into()));
    if shape.graph_attention {
        launch(p, 5);
        // A graph holds no sync: the one after each all-to-all moves after the block's.
        if shape.sync_after_collective {
            p.push(Instr::Synchronize { device_wide: true });
            p.push(Instr::HostWorkBetween(
                AFTER_SYNC_HOST_NS.0,
                AFTER_SYNC_HOST_NS.1,
            ));
        }
    } else {
        launch(p, 1);
        all_to_all(p, shape);
        launch(p, 2);
        all_to_all(p, shape);
        launch(p, 3);
    }
    p.push(Instr::Pop);
    p.push(Instr::Push("ffn".into()));
    launch(p, 4);
    p.push(Instr::Pop);
    p.push(Instr::Pop);
}

/// One all-to-all of the Ulysses attention; with `use_sync`, the device drained after it
/// and Python before the next launch.
fn all_to_all(program: &mut Vec<Instr>, shape: &StepShape) {
    let (range, kernel) = if shape.gradient_all_reduce {
        ("nccl:all_reduce", ALL_REDUCE)
    } else {
        ("nccl:all_to_all", SEND_RECV)
    };
    if shape.gradient_all_reduce {
        program.push(Instr::Push("backward".into()));
    }
    if shape.sync_after_collective {
        program.push(Instr::Push(range.into()));
        program.push(Instr::OpHostWork);
        program.push(Instr::Launch { kernel });
        if !shape.sync_removed {
            program.push(Instr::Synchronize { device_wide: true });
        }
        program.push(Instr::Pop);
        program.push(Instr::HostWorkBetween(
            AFTER_SYNC_HOST_NS.0,
            AFTER_SYNC_HOST_NS.1,
        ));
    } else {
        aten(program, range, &[kernel]);
    }
    if shape.gradient_all_reduce {
        program.push(Instr::Pop);
    }
    for k in 0..shape.small_ops {
        program.push(Instr::HostWorkBetween(
            SMALL_OP_HOST_NS.0,
            SMALL_OP_HOST_NS.1,
        ));
        // Shaped ops, as record_shapes writes them: a text of their own each.
        let sized = shape.realistic.then_some(SMALL_OP_SIZES);
        if k % 2 == 0 {
            aten_sized(program, "aten::mul", sized, &[TRITON_MUL]);
        } else {
            aten_sized(program, "aten::native_layer_norm", sized, &[TRITON_NORM]);
        }
    }
}

pub fn step_program(step: u32, shape: &StepShape) -> Vec<Instr> {
    let mut p = Vec::with_capacity(shape.blocks as usize * 2 * 40 + 32);
    let sized = |sizes: &'static str| shape.realistic.then_some(sizes);
    p.push(Instr::Push(format!("denoising_step_{step}")));
    p.push(Instr::Push("time_embedding".into()));
    aten(&mut p, "aten::sin", &[TIME_EMBED]);
    // Python builds the conditioning on the CPU while the GPU has drained: host-bound gap.
    p.push(Instr::HostWork(shape.time_embedding_host_ns));
    p.push(Instr::Pop);
    if let Some(ns) = shape.jit_ns {
        // nvFuser compiles a fusion on first use: the launching thread is busy, nothing runs.
        p.push(Instr::Push("KernelExecutor::compileFusion".into()));
        p.push(Instr::Push("nvrtc_compile".into()));
        p.push(Instr::HostWork(ns * 97 / 100));
        p.push(Instr::Pop);
        p.push(Instr::HostWork(ns * 3 / 100));
        p.push(Instr::Pop);
    }
    for branch in ["cfg_cond", "cfg_uncond"] {
        p.push(Instr::Push(branch.into()));
        if branch == "cfg_uncond" {
            if let Some(pause) = shape
                .straggler_pause_ns
                .filter(|_| shape.straggler_stall == StragglerStall::Read)
            {
                // The rank drains its device, then waits on disk for its next batch: a
                // blocking read() on the launching thread (OS runtime trace).
                p.push(Instr::Synchronize { device_wide: true });
                p.push(Instr::OsCall {
                    name: "read",
                    ns: pause,
                });
            }
            p.push(Instr::CrossDeviceWait {
                extra_ns: shape.cross_device_wait_ns,
            });
        }
        for block in 0..shape.blocks {
            if shape.cuda_graphs {
                graph_block(&mut p, block, shape);
                continue;
            }
            p.push(Instr::Push(format!("transformer_block_{block}")));
            p.push(Instr::Push("attention".into()));
            aten(&mut p, "aten::layer_norm", &[LAYER_NORM]);
            aten_sized(&mut p, "aten::linear", sized(QKV_SIZES), &[GEMM_QKV]);
            aten(&mut p, "aten::view", &[]);
            if branch == "cfg_cond"
                && block == 0
                && shape.straggler_stall == StragglerStall::Cpu
                && let Some(pause) = shape.straggler_pause_ns
            {
                p.push(Instr::Stall(pause));
            }
            all_to_all(&mut p, shape);
            aten(&mut p, "aten::transpose", &[]);
            aten_sized(
                &mut p,
                "aten::_flash_attention_forward",
                sized(FLASH_SIZES),
                &[FLASH],
            );
            aten(&mut p, "aten::contiguous", &[]);
            all_to_all(&mut p, shape);
            // With NCCL on a stream of its own, an exchange's result is needed by the compute
            // launched after the next exchange (see `sim`): each overlaps what follows it.
            aten_sized(&mut p, "aten::linear", sized(OUT_SIZES), &[GEMM_OUT]);
            p.push(Instr::Pop);
            p.push(Instr::Push("ffn".into()));
            aten(&mut p, "aten::layer_norm", &[LAYER_NORM]);
            aten_sized(&mut p, "aten::linear", sized(UP_SIZES), &[GEMM_UP]);
            aten(&mut p, "aten::gelu", &[GELU]);
            aten(&mut p, "aten::reshape", &[]);
            aten_sized(&mut p, "aten::linear", sized(DOWN_SIZES), &[GEMM_DOWN]);
            aten(&mut p, "aten::add", &[ADD]);
            p.push(Instr::Pop);
            p.push(Instr::Pop);
        }
        p.push(Instr::Pop);
    }
    p.push(Instr::Push("scheduler_step".into()));
    p.push(Instr::Push("aten::item".into()));
    p.push(Instr::CopyToHost { bytes: 4 });
    if shape.step_sync {
        p.push(Instr::Synchronize { device_wide: false });
    }
    p.push(Instr::Pop);
    p.push(Instr::HostWorkIn {
        ns: shape.scheduler_ns,
        os_call: "pthread_cond_wait",
    });
    p.push(Instr::Pop);
    p.push(Instr::Pop);
    if let Some(ns) = shape.checkpoint_ns {
        // torch.save of the weights between steps: the thread waits seconds in cudaMemcpy.
        p.push(Instr::Push("checkpoint_save".into()));
        p.push(Instr::BlockingCopyToHost {
            bytes: 10 << 30,
            ns,
        });
        p.push(Instr::Pop);
    }
    p
}
