//! Interned strings: every name in the trace is a `StrId` into one table.
//!
//! The ids of the export's own `StringIds` table are kept where they are dense, so kernel
//! and API names need no remapping; texts that nsys stores inline (NVTX `text`) are
//! appended and deduplicated.

use std::collections::HashMap;

/// Index into [`StringTable`].
pub type StrId = u32;

#[derive(Debug, Default, Clone)]
pub struct StringTable {
    values: Vec<Box<str>>,
    index: HashMap<Box<str>, StrId>,
}

impl StringTable {
    pub fn new() -> Self {
        let mut table = Self::default();
        table.intern(""); // id 0 is the empty string: a safe default for missing names.
        table
    }

    /// Returns the id of `text`, adding it when it is new.
    pub fn intern(&mut self, text: &str) -> StrId {
        if let Some(&id) = self.index.get(text) {
            return id;
        }
        let id = self.values.len() as StrId;
        self.values.push(text.into());
        self.index.insert(text.into(), id);
        id
    }

    pub fn get(&self, id: StrId) -> &str {
        self.values.get(id as usize).map_or("", |s| s)
    }

    pub fn find(&self, text: &str) -> Option<StrId> {
        self.index.get(text).copied()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Heap bytes held, for the bytes-per-event figure.
    pub fn heap_bytes(&self) -> usize {
        let text: usize = self.values.iter().map(|s| s.len()).sum();
        text * 2 + self.values.len() * 16 * 3
    }
}
