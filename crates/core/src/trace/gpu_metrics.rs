//! The GPU's own counters, sampled by nsys when asked (`--gpu-metrics-devices=all`, 10 kHz
//! by default): per GPU, the sample times and each metric's value at them. Samples are
//! device-wide (every process and context on the GPU).

use super::DeviceId;

/// A value a metric had no sample of at that time.
pub const NO_SAMPLE: f32 = f32::NAN;

#[derive(Debug, Default, Clone, PartialEq)]
pub struct DeviceMetrics {
    pub device: DeviceId,
    /// Sample times, sorted.
    pub time: Vec<i64>,
    /// Each metric's name as nsys wrote it (`SMs Active [Throughput %]`) and its value at
    /// each sample time ([`NO_SAMPLE`] where it had none); clocks repaired to MHz.
    pub metrics: Vec<(String, Vec<f32>)>,
}

impl DeviceMetrics {
    pub fn consistent(&self) -> bool {
        self.metrics.iter().all(|(_, v)| v.len() == self.time.len())
    }

    /// Samples in `[a, b)`.
    pub fn range(&self, a: i64, b: i64) -> std::ops::Range<usize> {
        self.time.partition_point(|&t| t < a)..self.time.partition_point(|&t| t < b)
    }
}

/// A clock's raw value as MHz: some exports store Hz as an unsigned 32-bit number in a
/// signed column (negative once it wraps); others MHz.
pub fn clock_mhz(raw: i64) -> f32 {
    let hz_or_mhz = if raw < 0 { raw + (1i64 << 32) } else { raw };
    if hz_or_mhz > 100_000 {
        (hz_or_mhz as f64 / 1e6) as f32
    } else {
        hz_or_mhz as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clocks_wrapped_or_in_hz_read_as_mhz() {
        assert_eq!(clock_mhz(1_755), 1755.0);
        assert_eq!(clock_mhz(1_755_000_000), 1755.0);
        // 2.9 GHz in Hz wraps past 2^31 in a signed 32-bit column.
        let wrapped = 2_900_000_000i64 - (1i64 << 32);
        assert!(wrapped < 0);
        assert_eq!(clock_mhz(wrapped), 2900.0);
    }
}
