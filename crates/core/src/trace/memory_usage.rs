//! Device memory allocated and freed over the run (`--cuda-memory-usage=true`:
//! `CUDA_GPU_MEMORY_USAGE_EVENTS`), per GPU: each event a time, a signed size (an
//! allocation adds, a free subtracts) and its API call's correlation id. Host memory
//! (pageable and pinned) is left out: it is no GPU's.

use super::DeviceId;

/// One GPU's device-memory events, by time (allocations before frees at equal times).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct MemoryEvents {
    pub device: DeviceId,
    pub time: Vec<i64>,
    /// Bytes allocated (positive) or freed (negative).
    pub bytes: Vec<i64>,
    /// The block's address: a free is matched with its allocation by it.
    pub address: Vec<u64>,
    pub correlation_id: Vec<u32>,
}

impl MemoryEvents {
    pub fn len(&self) -> usize {
        self.time.len()
    }

    pub fn is_empty(&self) -> bool {
        self.time.is_empty()
    }

    /// Sorted by time, allocations first at equal times (a free at the same instant as an
    /// allocation must not take the balance below what was live).
    pub fn sort(&mut self) {
        let mut order: Vec<usize> = (0..self.len()).collect();
        order.sort_by_key(|&i| (self.time[i], std::cmp::Reverse(self.bytes[i] > 0)));
        self.time = order.iter().map(|&i| self.time[i]).collect();
        self.bytes = order.iter().map(|&i| self.bytes[i]).collect();
        self.address = order.iter().map(|&i| self.address[i]).collect();
        self.correlation_id = order.iter().map(|&i| self.correlation_id[i]).collect();
    }

    pub fn consistent(&self) -> bool {
        self.bytes.len() == self.len()
            && self.address.len() == self.len()
            && self.correlation_id.len() == self.len()
    }
}
