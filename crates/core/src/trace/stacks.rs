//! Call stacks as nsys records them: CPU samples (`COMPOSITE_EVENTS` with
//! `SAMPLING_CALLCHAINS`) and OS runtime backtraces (`OSRT_CALLCHAINS`). Stacks are kept
//! once, as a prefix tree of frames from the outermost: a stack is the node of its
//! innermost frame, and a sample is a time, a thread and a node (13 bytes).

use super::{NONE, StrId};

/// The distinct frames and the prefix tree of every stack recorded.
#[derive(Debug, Default, Clone)]
pub struct Stacks {
    /// Per frame: its function (or an unresolved `0x…` address) and its binary.
    pub frame_symbol: Vec<StrId>,
    pub frame_module: Vec<StrId>,
    /// Per frame: nsys could not resolve the symbol.
    pub frame_unresolved: Vec<bool>,
    /// Per node: the node of the frame that called it ([`NONE`] for an outermost frame).
    pub node_parent: Vec<u32>,
    /// Per node: its frame.
    pub node_frame: Vec<u32>,
}

impl Stacks {
    pub fn is_empty(&self) -> bool {
        self.node_frame.is_empty()
    }

    /// The frames of the stack ending at `node`, innermost first (as nsys numbers them:
    /// `stackDepth` 0 first).
    pub fn frames(&self, node: u32) -> impl Iterator<Item = u32> + '_ {
        let mut at = node;
        std::iter::from_fn(move || {
            if at == NONE || at as usize >= self.node_frame.len() {
                return None;
            }
            let frame = self.node_frame[at as usize];
            at = self.node_parent[at as usize];
            Some(frame)
        })
    }

    /// The innermost frame of the stack ending at `node`.
    pub fn leaf(&self, node: u32) -> Option<u32> {
        self.node_frame.get(node as usize).copied()
    }

    /// Bytes held (the figure the benchmark prints).
    pub fn bytes(&self) -> usize {
        self.frame_symbol.len() * 9 + self.node_frame.len() * 8
    }
}

/// Builds [`Stacks`]: frames and nodes deduplicated as they are added.
#[derive(Default)]
pub struct StacksBuilder {
    pub stacks: Stacks,
    frames: rustc_hash::FxHashMap<(StrId, StrId, bool), u32>,
    children: rustc_hash::FxHashMap<(u32, u32), u32>,
}

impl StacksBuilder {
    /// Continues `stacks` (frames and nodes already there are found again).
    pub fn from(stacks: Stacks) -> StacksBuilder {
        let mut b = StacksBuilder {
            stacks,
            ..Default::default()
        };
        let s = &b.stacks;
        for f in 0..s.frame_symbol.len() {
            let key = (s.frame_symbol[f], s.frame_module[f], s.frame_unresolved[f]);
            b.frames.insert(key, f as u32);
        }
        for n in 0..s.node_frame.len() {
            b.children
                .insert((s.node_parent[n], s.node_frame[n]), n as u32);
        }
        b
    }

    pub fn frame(&mut self, symbol: StrId, module: StrId, unresolved: bool) -> u32 {
        let s = &mut self.stacks;
        *self
            .frames
            .entry((symbol, module, unresolved))
            .or_insert_with(|| {
                s.frame_symbol.push(symbol);
                s.frame_module.push(module);
                s.frame_unresolved.push(unresolved);
                (s.frame_symbol.len() - 1) as u32
            })
    }

    /// The node of `frame` called from `parent` ([`NONE`]: an outermost frame).
    pub fn child(&mut self, parent: u32, frame: u32) -> u32 {
        let s = &mut self.stacks;
        *self.children.entry((parent, frame)).or_insert_with(|| {
            s.node_parent.push(parent);
            s.node_frame.push(frame);
            (s.node_frame.len() - 1) as u32
        })
    }

    /// The node of a stack given innermost frame first.
    pub fn stack(&mut self, innermost_first: &[u32]) -> u32 {
        innermost_first
            .iter()
            .rev()
            .fold(NONE, |parent, &frame| self.child(parent, frame))
    }
}

/// One sampled thread's samples, sorted by time, within [`CpuSamples`]' columns.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SampledThread {
    pub global_tid: i64,
    pub name: String,
    /// Its samples: `first..first + count` of the columns.
    pub first: usize,
    pub count: usize,
}

/// Every CPU sample of the capture, grouped by thread (each sorted by time). A thread
/// sampled need not have made a CUDA call (a data loader's, say), so samples are kept
/// beside the model's threads, not in them.
#[derive(Debug, Default, Clone)]
pub struct CpuSamples {
    pub threads: Vec<SampledThread>,
    pub time: Vec<i64>,
    /// The stack's node in [`Stacks`], [`NONE`] when the sample had none.
    pub node: Vec<u32>,
    /// `threadState` (`ENUM_SAMPLING_THREAD_STATE`: 1 running, 2 waiting…), 0 unknown.
    pub state: Vec<u8>,
}

impl CpuSamples {
    pub const BYTES_PER_SAMPLE: usize = 8 + 4 + 1;

    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    pub fn thread(&self, global_tid: i64) -> Option<&SampledThread> {
        self.threads.iter().find(|t| t.global_tid == global_tid)
    }

    /// The indices of `global_tid`'s samples in `[a, b)`.
    pub fn of_thread_in(&self, global_tid: i64, a: i64, b: i64) -> std::ops::Range<usize> {
        let Some(t) = self.thread(global_tid) else {
            return 0..0;
        };
        let times = &self.time[t.first..t.first + t.count];
        let lo = times.partition_point(|&x| x < a);
        let hi = times.partition_point(|&x| x < b);
        t.first + lo..t.first + hi
    }

    /// Whether the columns agree (a cache file read back is checked so).
    pub fn consistent(&self) -> bool {
        let n = self.time.len();
        self.node.len() == n
            && self.state.len() == n
            && self
                .threads
                .iter()
                .all(|t| t.first.checked_add(t.count).is_some_and(|e| e <= n))
    }
}

/// How the call stacks' read went (they are read after the rest of the trace).
#[derive(Debug, Default, Clone)]
pub struct StacksRead {
    /// Rows read per table.
    pub tables: Vec<(&'static str, u64)>,
    /// Rows skipped or repaired: ((table, why), count), as the load report counts them.
    pub skips: Vec<((&'static str, &'static str), u64)>,
    pub seconds: f64,
    /// Why the stacks are missing (the file changed or went away since the load, the read
    /// was abandoned): the capture's stacks are then shown as none, never kept in a cache.
    pub error: Option<String>,
}

/// Every call stack of the capture: the CPU samples' and the OS runtime calls' backtraces
/// (an OS runtime call's `stack` is a node of this tree).
#[derive(Debug, Default, Clone)]
pub struct CallStacks {
    pub stacks: Stacks,
    pub samples: CpuSamples,
    pub read: StacksRead,
}

impl CallStacks {
    /// Bytes held: 13 a sample and the tree.
    pub fn bytes(&self) -> usize {
        self.stacks.bytes() + self.samples.len() * CpuSamples::BYTES_PER_SAMPLE
    }
}

/// A trace's [`CallStacks`], perhaps still being read: `SAMPLING_CALLCHAINS` is the
/// biggest table of an export with CPU samples (a row per frame of every sample: 150 M rows
/// for 10 minutes on 8 threads), so a load hands the trace over without it and reads it
/// after, on a thread of its own. Clones of a trace share the one slot.
#[derive(Clone)]
pub struct StacksSlot(std::sync::Arc<std::sync::OnceLock<CallStacks>>);

impl Default for StacksSlot {
    /// Known already: none.
    fn default() -> StacksSlot {
        StacksSlot::ready(CallStacks::default())
    }
}

impl std::fmt::Debug for StacksSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.get() {
            Some(s) => write!(
                f,
                "{} samples, {} stacks",
                s.samples.len(),
                s.stacks.node_frame.len()
            ),
            None => write!(f, "call stacks being read"),
        }
    }
}

impl StacksSlot {
    pub fn ready(stacks: CallStacks) -> StacksSlot {
        let slot = StacksSlot::pending();
        slot.set(stacks);
        slot
    }

    /// To be filled by whoever reads them ([`StacksSlot::set`]), who must, error or not.
    pub fn pending() -> StacksSlot {
        StacksSlot(Default::default())
    }

    /// The stacks, once read (a window's frame must not wait).
    pub fn get(&self) -> Option<&CallStacks> {
        self.0.get()
    }

    /// The stacks, waiting for their read to end.
    pub fn wait(&self) -> &CallStacks {
        self.0.wait()
    }

    /// Fills a pending slot (once: a later call changes nothing).
    pub fn set(&self, stacks: CallStacks) {
        let _ = self.0.set(stacks);
    }

    /// Nobody but the reader holds the slot any more: the trace was dropped.
    pub fn abandoned(&self) -> bool {
        std::sync::Arc::strong_count(&self.0) == 1
    }
}

/// A frame's binary is a Python file (`--python-sampling`, `--python-backtrace`): shown as
/// Python code, not a native library.
pub fn is_python_module(module: &str) -> bool {
    module.ends_with(".py")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_share_their_common_callers() {
        let mut b = StacksBuilder::default();
        let (main, run, read, write) = (
            b.frame(1, 9, false),
            b.frame(2, 9, false),
            b.frame(3, 9, false),
            b.frame(4, 9, false),
        );
        let a = b.stack(&[read, run, main]);
        let c = b.stack(&[write, run, main]);
        let again = b.stack(&[read, run, main]);
        assert_eq!(a, again);
        assert_ne!(a, c);
        // main, run, read, write: four nodes, not six.
        assert_eq!(b.stacks.node_frame.len(), 4);
        assert_eq!(b.stacks.frames(a).collect::<Vec<_>>(), [read, run, main]);
        assert_eq!(b.stacks.leaf(c), Some(write));
        let mut more = StacksBuilder::from(b.stacks.clone());
        assert_eq!(more.stack(&[write, run, main]), c);
    }
}
