//! The two ways a GPU is named: by nsys's `deviceId` (what exports, reports and JSON say)
//! and by its position in [`Trace::devices`](super::Trace::devices) (what rows, arrays and
//! selections index by). Two types, so that one is never passed for the other — in a trace
//! of GPUs 4–7, or of several files, the two differ.

use super::Device;

/// nsys's `deviceId` of a GPU. Serialised as the bare number, so JSON is unchanged.
#[derive(
    Debug,
    Default,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct DeviceId(pub u32);

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A GPU's position in `Trace::devices` (sorted by id).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceIndex(pub usize);

impl std::ops::Index<DeviceIndex> for Vec<Device> {
    type Output = Device;
    fn index(&self, index: DeviceIndex) -> &Device {
        &self[index.0]
    }
}
