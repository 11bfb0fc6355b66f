//! NCCL's API calls of one thread, decoded from the typed payloads of its NVTX ranges
//! (`NVTX_EVENTS.binaryData`, exported with `--include-blobs=true`): communicator, message
//! size, peer, and for a communicator's creation its size, rank and CUDA device.

use super::ops::{NONE, permute};
use super::strings::StrId;

/// A `u64` field the payload did not carry.
pub const NO_VALUE: u64 = u64::MAX;

/// Sorted by start.
#[derive(Debug, Default, Clone)]
pub struct NcclCalls {
    pub start: Vec<i64>,
    pub end: Vec<i64>,
    /// The range's text: `ncclAllReduce`, `ncclSend`, `ncclCommInitRank`, …
    pub name: Vec<StrId>,
    /// The communicator's id (NCCL's `commHash`), or [`NO_VALUE`].
    pub comm: Vec<u64>,
    /// "Message size [bytes]", or [`NO_VALUE`].
    pub bytes: Vec<u64>,
    /// Send/receive peer rank, or [`NONE`].
    pub peer: Vec<u32>,
    /// Communicator creation: number of ranks, this rank, CUDA device ([`NONE`] otherwise).
    pub nranks: Vec<u32>,
    pub rank: Vec<u32>,
    pub cuda_device: Vec<u32>,
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
    pub const BYTES_PER_CALL: usize = 8 + 8 + 4 + 8 + 8 + 4 * 4;

    pub fn len(&self) -> usize {
        self.start.len()
    }

    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    pub fn push(&mut self, start: i64, end: i64, name: StrId, f: NcclFields) {
        self.start.push(start);
        self.end.push(end);
        self.name.push(name);
        self.comm.push(f.comm);
        self.bytes.push(f.bytes);
        self.peer.push(f.peer);
        self.nranks.push(f.nranks);
        self.rank.push(f.rank);
        self.cuda_device.push(f.cuda_device);
    }

    pub fn fields(&self, i: usize) -> NcclFields {
        NcclFields {
            comm: self.comm[i],
            bytes: self.bytes[i],
            peer: self.peer[i],
            nranks: self.nranks[i],
            rank: self.rank[i],
            cuda_device: self.cuda_device[i],
        }
    }

    pub fn append(&mut self, mut other: NcclCalls) {
        self.start.append(&mut other.start);
        self.end.append(&mut other.end);
        self.name.append(&mut other.name);
        self.comm.append(&mut other.comm);
        self.bytes.append(&mut other.bytes);
        self.peer.append(&mut other.peer);
        self.nranks.append(&mut other.nranks);
        self.rank.append(&mut other.rank);
        self.cuda_device.append(&mut other.cuda_device);
    }

    /// Every column the same length (a cache file read back).
    pub fn consistent(&self) -> bool {
        let n = self.len();
        [
            self.end.len(),
            self.name.len(),
            self.comm.len(),
            self.bytes.len(),
            self.peer.len(),
            self.nranks.len(),
            self.rank.len(),
            self.cuda_device.len(),
        ]
        .iter()
        .all(|&l| l == n)
    }

    pub fn sort_by_start(&mut self) {
        if self.start.is_sorted() {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_by_key(|&i| self.start[i as usize]);
        permute(&mut self.start, &order);
        permute(&mut self.end, &order);
        permute(&mut self.name, &order);
        permute(&mut self.comm, &order);
        permute(&mut self.bytes, &order);
        permute(&mut self.peer, &order);
        permute(&mut self.nranks, &order);
        permute(&mut self.rank, &order);
        permute(&mut self.cuda_device, &order);
    }
}
