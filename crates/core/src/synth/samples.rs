//! `synth --cpu-samples`: CPU samples of each rank's main thread at 1 kHz, and a backtrace
//! on every OS runtime call, as nsys records them by default. A sample's stack says what
//! the thread was doing then, read from the rows the rank wrote: the OS runtime call or
//! CUDA call it was in, else its innermost NVTX range (the JIT compile, the straggler's
//! Python, the host-bound conditioning, the steady loop's aten ops). The innermost frame of
//! each is its own, so the truth knows what every gap's samples should name.

use super::sim::{ApiRow, NvtxRow, OsrtRow, Rows};

/// 1 kHz, nsys's default sampling rate.
pub const SAMPLE_PERIOD_NS: i64 = 1_000_000;

/// (symbol, module).
pub type Frame = (&'static str, &'static str);

const PYTHON: &str = "/usr/lib/x86_64-linux-gnu/libpython3.10.so.1.0";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const CUDART: &str = "/opt/conda/lib/libcudart.so.12";
const TORCH_CUDA: &str = "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so";
const TORCH_PYTHON: &str = "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_python.so";
const PIPELINE: &str = "/app/wan/pipeline.py";
const MODEL: &str = "/app/wan/model.py";

/// The frames every stack of the main thread ends in (outermost last).
const OUTER: [Frame; 3] = [
    ("generate", "/app/wan/generate.py"),
    ("_PyEval_EvalFrameDefault", PYTHON),
    ("__libc_start_main", LIBC),
];

/// The innermost frames of an OS runtime call's backtrace.
pub fn os_call_frames(name: &str) -> Vec<Frame> {
    match name {
        "read" => vec![
            ("__libc_read", LIBC),
            ("load_next_batch", "/app/wan/data_loader.py"),
            ("denoise", PIPELINE),
        ],
        "pthread_cond_wait" => vec![
            ("pthread_cond_wait@@GLIBC_2.3.2", LIBC),
            ("scheduler_wait", "/app/wan/scheduler.py"),
            ("denoise", PIPELINE),
        ],
        "poll" => vec![
            ("__poll", LIBC),
            ("0x7f3fc3d255f7", "/usr/lib64/libcuda.so.1"),
        ],
        _ => vec![("syscall", LIBC), ("denoise", PIPELINE)],
    }
}

/// The innermost frames of a CUDA call.
fn cuda_call_frames(name: &'static str) -> Vec<Frame> {
    let caller: Frame = if name.contains("Synchronize") {
        ("at::cuda::stream_synchronize", TORCH_CUDA)
    } else if name.contains("Memcpy") {
        ("at::native::copy_", TORCH_CUDA)
    } else {
        ("c10::cuda::launch_kernel", TORCH_CUDA)
    };
    vec![(name, CUDART), caller, ("denoise", PIPELINE)]
}

/// The innermost frames of Python inside a range (outside any call).
fn range_frames(text: &str) -> Vec<Frame> {
    let op = text.split(',').next().unwrap_or(text);
    match op {
        "nvrtc_compile" => vec![
            ("nvrtcCompileProgram", "/opt/conda/lib/libnvrtc.so.12"),
            (
                "nvfuser::KernelExecutor::compileFusion",
                "/opt/conda/lib/libnvfuser_codegen.so",
            ),
            ("denoise", PIPELINE),
        ],
        "KernelExecutor::compileFusion" => vec![
            (
                "nvfuser::KernelExecutor::compileFusion",
                "/opt/conda/lib/libnvfuser_codegen.so",
            ),
            ("denoise", PIPELINE),
        ],
        "time_embedding" => vec![("build_conditioning", PIPELINE), ("denoise", PIPELINE)],
        "attention" => vec![
            ("slow_attention_mask", "/app/wan/attention.py"),
            ("forward", MODEL),
            ("denoise", PIPELINE),
        ],
        "scheduler_step" => vec![
            ("scheduler_step", "/app/wan/scheduler.py"),
            ("denoise", PIPELINE),
        ],
        op if op.starts_with("aten::") => vec![
            ("torch::autograd::THPVariable_op", TORCH_PYTHON),
            ("forward", MODEL),
            ("denoise", PIPELINE),
        ],
        _ => vec![("forward", MODEL), ("denoise", PIPELINE)],
    }
}

/// Which of a step's rows cover a time, found by halving.
pub struct StepIndex<'r> {
    api: Vec<&'r ApiRow>,
    osrt: Vec<&'r OsrtRow>,
    /// Ranges by start.
    nvtx: Vec<&'r NvtxRow>,
    /// Ranges of at least `LONG_NS`, by start: few, scanned whole.
    long: Vec<&'r NvtxRow>,
}

/// Ranges this long are looked for among all; shorter ones among those just before.
const LONG_NS: i64 = 100_000;
/// Short ranges looked at before a time.
const SHORT_LOOKED_AT: usize = 64;

impl<'r> StepIndex<'r> {
    pub fn new(rows: &'r Rows) -> Self {
        let mut api: Vec<&ApiRow> = rows.api.iter().collect();
        api.sort_by_key(|r| r.start);
        let mut osrt: Vec<&OsrtRow> = rows.osrt.iter().filter(|r| r.tid_offset == 0).collect();
        osrt.sort_by_key(|r| r.start);
        let mut nvtx: Vec<&NvtxRow> = rows.nvtx.iter().filter(|r| r.nccl.is_none()).collect();
        nvtx.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let long = nvtx
            .iter()
            .copied()
            .filter(|r| r.end - r.start >= LONG_NS)
            .collect();
        StepIndex {
            api,
            osrt,
            nvtx,
            long,
        }
    }

    /// The main thread's stack at `t`, innermost first.
    pub fn stack_at(&self, t: i64) -> Vec<Frame> {
        let mut frames = if let Some(o) = covering(&self.osrt, t, |r| (r.start, r.end)) {
            os_call_frames(o.name)
        } else if let Some(a) = covering(&self.api, t, |r| (r.start, r.end)) {
            cuda_call_frames(a.name)
        } else if let Some(text) = self.innermost_range(t) {
            range_frames(text)
        } else {
            Vec::new()
        };
        frames.extend(OUTER);
        frames
    }

    fn innermost_range(&self, t: i64) -> Option<&str> {
        let n = self.nvtx.partition_point(|r| r.start <= t);
        let short = self.nvtx[n.saturating_sub(SHORT_LOOKED_AT)..n]
            .iter()
            .rev()
            .find(|r| r.end > t);
        let long = self
            .long
            .iter()
            .filter(|r| r.start <= t && r.end > t)
            .max_by_key(|r| r.start);
        match (short, long) {
            (Some(s), Some(l)) if l.start > s.start => Some(&l.text),
            (Some(s), _) => Some(&s.text),
            (None, l) => l.map(|l| l.text.as_str()),
        }
    }
}

/// The row of `rows` (sorted by start, disjoint) that covers `t`.
fn covering<'a, T>(rows: &[&'a T], t: i64, span: impl Fn(&T) -> (i64, i64)) -> Option<&'a T> {
    let n = rows.partition_point(|r| span(r).0 <= t);
    let r = *rows.get(n.checked_sub(1)?)?;
    (span(r).1 > t).then_some(r)
}
