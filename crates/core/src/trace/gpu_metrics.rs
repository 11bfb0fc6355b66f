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
    pub metrics: Vec<(String, MetricValues)>,
}

/// A metric's values in the narrowest type that holds them all: nsys writes integers
/// (percents of peak, MHz, counts), so a percent takes a byte a sample, not four. The
/// type's largest value stands for "no sample".
#[derive(Debug, Clone, PartialEq)]
pub enum MetricValues {
    Byte(Vec<u8>),
    Short(Vec<u16>),
    Float(Vec<f32>),
}

impl MetricValues {
    /// `values` ([`NO_SAMPLE`] where none) in the narrowest type that holds them exactly.
    pub fn narrowest(values: Vec<f32>) -> MetricValues {
        let fits = |max: f32| {
            values
                .iter()
                .all(|&v| v.is_nan() || (v >= 0.0 && v < max && v.fract() == 0.0))
        };
        let or_none = |v: f32, none: f32| if v.is_nan() { none } else { v };
        if fits(u8::MAX as f32) {
            MetricValues::Byte(values.iter().map(|&v| or_none(v, 255.0) as u8).collect())
        } else if fits(u16::MAX as f32) {
            MetricValues::Short(values.iter().map(|&v| or_none(v, 65535.0) as u16).collect())
        } else {
            MetricValues::Float(values)
        }
    }

    pub fn len(&self) -> usize {
        match self {
            MetricValues::Byte(v) => v.len(),
            MetricValues::Short(v) => v.len(),
            MetricValues::Float(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sample `i`'s value, [`NO_SAMPLE`] where it had none.
    #[inline]
    pub fn get(&self, i: usize) -> f32 {
        match self {
            MetricValues::Byte(v) => match v[i] {
                u8::MAX => NO_SAMPLE,
                x => x as f32,
            },
            MetricValues::Short(v) => match v[i] {
                u16::MAX => NO_SAMPLE,
                x => x as f32,
            },
            MetricValues::Float(v) => v[i],
        }
    }

    /// Values `range`, [`NO_SAMPLE`] where none.
    pub fn iter_range(&self, range: std::ops::Range<usize>) -> impl Iterator<Item = f32> + '_ {
        range.map(|i| self.get(i))
    }

    /// The mean of the values in `range` that are samples (`None` if none is).
    pub fn mean(&self, range: std::ops::Range<usize>) -> Option<f64> {
        let (mut sum, mut n) = (0.0, 0u64);
        for v in self.iter_range(range).filter(|v| !v.is_nan()) {
            sum += v as f64;
            n += 1;
        }
        (n > 0).then(|| sum / n as f64)
    }

    /// Every value, [`NO_SAMPLE`] where none.
    pub fn to_f32(&self) -> Vec<f32> {
        self.iter_range(0..self.len()).collect()
    }

    /// Bytes a sample.
    pub fn width(&self) -> usize {
        match self {
            MetricValues::Byte(_) => 1,
            MetricValues::Short(_) => 2,
            MetricValues::Float(_) => 4,
        }
    }
}

impl DeviceMetrics {
    pub fn consistent(&self) -> bool {
        self.metrics.iter().all(|(_, v)| v.len() == self.time.len())
    }

    /// Heap bytes held (the benchmark's figure).
    pub fn heap_bytes(&self) -> usize {
        self.time.len() * 8
            + self
                .metrics
                .iter()
                .map(|(_, v)| v.len() * v.width())
                .sum::<usize>()
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
    fn values_take_the_narrowest_type_that_holds_them() {
        let percent = MetricValues::narrowest(vec![0.0, 94.0, NO_SAMPLE, 100.0]);
        assert_eq!(percent.width(), 1);
        assert_eq!(percent.get(1), 94.0);
        assert!(percent.get(2).is_nan());
        let clock = MetricValues::narrowest(vec![1755.0, NO_SAMPLE]);
        assert_eq!(clock.width(), 2);
        assert_eq!(clock.to_f32()[0], 1755.0);
        // 255 is "no sample" in a byte: a metric reaching it takes two.
        assert_eq!(MetricValues::narrowest(vec![255.0]).width(), 2);
        let fraction = MetricValues::narrowest(vec![0.5, 70000.0]);
        assert_eq!(fraction.width(), 4);
        assert_eq!(fraction.get(0), 0.5);
        assert_eq!(MetricValues::narrowest(vec![-1.0]).width(), 4);
    }

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
