//! NCCL's API calls of one thread, decoded from the typed payloads of its NVTX ranges
//! (`NVTX_EVENTS.binaryData`, exported with `--include-blobs=true`): communicator, message
//! size and peer of every call that moves data, and for a communicator's creation its
//! size, rank and CUDA device.
//!
//! Only what the attribution of bytes to kernels reads is kept: a call without a message
//! size (`ncclGroupStart`, `ncclGroupEnd`, …) is dropped, and the few creation calls sit in
//! a list of their own: a realistic export holds millions of NCCL ranges, and a wide call
//! made them a large share of the model (figures: docs/benchmarks.md, "Figures behind the code").

use super::columns::columns;
use super::ops::NONE;
use super::strings::StrId;

/// A `u64` field the payload did not carry.
pub const NO_VALUE: u64 = u64::MAX;

columns! {
    /// The calls that carry a message size, sorted by start.
    #[derive(Debug, Default, Clone)]
    pub struct NcclCalls {
        pub start: Vec<i64>,
        /// The range's text: `ncclAllReduce`, `ncclSend`, …
        pub name: Vec<StrId>,
        /// The communicator, as an index into `comms`: a thread uses a few, so 2 bytes a call
        /// instead of the id's 8, over millions of calls (docs/benchmarks.md, "Figures behind the code").
        pub comm: Vec<u16>,
        /// "Message size [bytes]".
        pub bytes: Vec<u64>,
        /// Send/receive peer rank, or [`NONE`].
        pub peer: Vec<u32>,
    }
    others {
        /// The ids (NCCL's `commHash`, or [`NO_VALUE`]) of the communicators the calls use. A
        /// thread past 65,536 of them (none seen) reads its further ones as [`NO_VALUE`].
        pub comms: Vec<u64>,
        /// Communicators created on this thread, in start order.
        pub creations: Vec<CommCreation>,
    }
}

/// A communicator's creation (`ncclCommInitRank`, …): its size and this thread's place in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommCreation {
    pub start: i64,
    pub comm: u64,
    pub nranks: u32,
    pub rank: u32,
    /// [`NONE`] when the payload did not say.
    pub cuda_device: u32,
}

/// One decoded call, before it joins its thread's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NcclFields {
    pub comm: u64,
    pub bytes: u64,
    pub peer: u32,
    pub nranks: u32,
    pub rank: u32,
    pub cuda_device: u32,
}

impl Default for NcclFields {
    fn default() -> Self {
        Self {
            comm: NO_VALUE,
            bytes: NO_VALUE,
            peer: NONE,
            nranks: NONE,
            rank: NONE,
            cuda_device: NONE,
        }
    }
}

/// How the export's NCCL payloads read: ranges in NCCL's domain, how many carried a blob,
/// and how many blobs could not be decoded (short, foreign schema, garbled).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PayloadStats {
    pub nccl_ranges: u64,
    pub blobs: u64,
    pub skipped_blobs: u64,
}

impl PayloadStats {
    pub fn add(&mut self, other: PayloadStats) {
        self.nccl_ranges += other.nccl_ranges;
        self.blobs += other.blobs;
        self.skipped_blobs += other.skipped_blobs;
    }
}

impl NcclCalls {
    /// Call `i`'s communicator id (NCCL's `commHash`), or [`NO_VALUE`].
    pub fn comm_of(&self, i: usize) -> u64 {
        self.comms[self.comm[i] as usize]
    }

    fn comm_index(&mut self, comm: u64) -> u16 {
        if let Some(k) = self.comms.iter().position(|&c| c == comm) {
            return k as u16;
        }
        if self.comms.len() < usize::from(u16::MAX) {
            self.comms.push(comm);
            return (self.comms.len() - 1) as u16;
        }
        // The last index is kept for the ids past the limit: no communicator.
        if self.comms.len() == usize::from(u16::MAX) {
            self.comms.push(NO_VALUE);
        }
        u16::MAX
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty() && self.creations.is_empty()
    }

    pub fn heap_bytes(&self) -> usize {
        self.len() * Self::ROW_BYTES + self.creations.len() * std::mem::size_of::<CommCreation>()
    }

    /// Keeps what the call says that the attribution reads (see the module's comment).
    pub fn push(&mut self, start: i64, name: StrId, f: NcclFields) {
        if f.nranks != NONE && f.comm != NO_VALUE {
            self.creations.push(CommCreation {
                start,
                comm: f.comm,
                nranks: f.nranks,
                rank: f.rank,
                cuda_device: f.cuda_device,
            });
        }
        if f.bytes == NO_VALUE {
            return;
        }
        self.start.push(start);
        self.name.push(name);
        let comm = self.comm_index(f.comm);
        self.comm.push(comm);
        self.bytes.push(f.bytes);
        self.peer.push(f.peer);
    }

    /// Room for `n` more calls in every column.
    pub fn reserve_exact(&mut self, n: usize) {
        self.start.reserve_exact(n);
        self.name.reserve_exact(n);
        self.comm.reserve_exact(n);
        self.bytes.reserve_exact(n);
        self.peer.reserve_exact(n);
    }

    pub fn append(&mut self, mut other: NcclCalls) {
        self.start.append(&mut other.start);
        self.name.append(&mut other.name);
        let map: Vec<u16> = other.comms.iter().map(|&c| self.comm_index(c)).collect();
        self.comm
            .extend(other.comm.iter().map(|&k| map[k as usize]));
        self.bytes.append(&mut other.bytes);
        self.peer.append(&mut other.peer);
        self.creations.append(&mut other.creations);
    }

    /// Every column the same length (a cache file read back).
    pub fn consistent(&self) -> bool {
        self.columns_agree(&[]) && self.comm.iter().all(|&k| (k as usize) < self.comms.len())
    }

    /// Moves every time by `dt` (a file of a merged job put on the job's clock).
    pub fn shift(&mut self, dt: i64) {
        self.start.iter_mut().for_each(|t| *t += dt);
        self.creations.iter_mut().for_each(|c| c.start += dt);
    }

    /// The calls and the communicators' creations, each by start.
    pub fn sort(&mut self) {
        self.creations.sort_by_key(|c| c.start);
        self.sort_by_start();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_without_a_size_are_dropped_and_creations_kept_apart() {
        let mut calls = NcclCalls::default();
        let sized = NcclFields {
            comm: 7,
            bytes: 1024,
            peer: 2,
            ..Default::default()
        };
        let creation = NcclFields {
            comm: 7,
            nranks: 4,
            rank: 1,
            cuda_device: 1,
            ..Default::default()
        };
        calls.push(30, 1, sized);
        calls.push(10, 2, creation);
        calls.push(20, 3, NcclFields::default()); // ncclGroupStart: nothing to keep
        calls.push(5, 4, sized);
        calls.sort();
        assert_eq!(calls.start, vec![5, 30]);
        assert_eq!(calls.name, vec![4, 1]);
        assert_eq!((calls.comm_of(0), calls.comm_of(1)), (7, 7));
        assert!(calls.consistent());
        // Merged with another thread's chunk, whose communicators are numbered its own way.
        let mut more = NcclCalls::default();
        more.push(40, 5, NcclFields { comm: 9, ..sized });
        more.push(50, 6, sized);
        calls.append(more);
        assert_eq!((2..4).map(|i| calls.comm_of(i)).collect::<Vec<_>>(), [9, 7]);
        assert_eq!(calls.comms.len(), 2);
        assert_eq!(
            calls.creations,
            vec![CommCreation {
                start: 10,
                comm: 7,
                nranks: 4,
                rank: 1,
                cuda_device: 1
            }]
        );
        calls.shift(100);
        assert_eq!((calls.start[0], calls.creations[0].start), (105, 110));
    }
}
