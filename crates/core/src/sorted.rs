//! Searches in sorted data: where a predicate that holds, then fails, turns — by halving,
//! or by galloping from a known point when the answer is near it (a search of a whole
//! sorted row of millions misses the cache at every probe).

/// First k in [0, n) where `pred(k)` is false (pred true then false).
pub fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if pred(mid) { lo = mid + 1 } else { hi = mid }
    }
    lo
}

/// The first index at or after `from` where `pred` turns false (`pred` true, then false,
/// along `[from, n)`): steps doubling from `from`, then a binary search of the last step.
/// A few reads near `from` when the answer is near, where a search of the whole range
/// would miss the cache at every probe.
pub fn gallop(from: usize, n: usize, pred: impl Fn(usize) -> bool) -> usize {
    if from >= n || !pred(from) {
        return from.min(n);
    }
    // `pred(known)` holds; the answer is in (known, bound].
    let (mut known, mut step) = (from, 1);
    let bound = loop {
        let probe = known + step;
        if probe >= n {
            break n;
        }
        if !pred(probe) {
            break probe;
        }
        known = probe;
        step *= 2;
    };
    known + 1 + partition(bound - known - 1, |k| pred(known + 1 + k))
}

/// Where `pred` turns false in `[0, n)` (true, then false), looked for from `hint`, the
/// answer of a lookup just before: a walk asking in nearly ascending order finds it at
/// `hint` or a few places on, in a read or two; an answer before `hint` is searched for.
pub fn partition_near(hint: usize, n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let hint = hint.min(n);
    if hint > 0 && !pred(hint - 1) {
        return partition(hint - 1, &pred);
    }
    gallop(hint, n, pred)
}

/// A place in a sorted sequence that a walk asks about in nearly ascending order: each
/// lookup ([`partition_near`]) starts where the last one ended, so a walk reads a few
/// entries a lookup instead of searching all of them; one that goes back is searched for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(usize);

impl Cursor {
    /// Where `pred` turns false in `[0, n)` (true, then false), found from the last answer;
    /// the cursor stays there.
    pub fn seek(&mut self, n: usize, pred: impl Fn(usize) -> bool) -> usize {
        self.0 = partition_near(self.0, n, pred);
        self.0
    }

    /// Where `value` is in `sorted` (ascending, no repeats), found from the last answer.
    pub fn find<T: Ord>(&mut self, sorted: &[T], value: &T) -> Option<usize> {
        let i = self.seek(sorted.len(), |k| sorted[k] < *value);
        (sorted.get(i) == Some(value)).then_some(i)
    }
}

/// Lower median (0 for none): the values need not be sorted.
pub fn median(values: &[i64]) -> i64 {
    median_in_place(&mut values.to_vec())
}

/// [`median`] of values the caller owns and no longer needs in order: they are reordered,
/// not copied (the durations of millions of gaps, copied for their median, were pages
/// faulted in for nothing).
pub fn median_in_place(values: &mut [i64]) -> i64 {
    if values.is_empty() {
        return 0;
    }
    let mid = (values.len() - 1) / 2;
    *values.select_nth_unstable(mid).1
}

/// The lower median of values already sorted: the middle one of an odd count, the lower of
/// the middle two of an even one (a value that occurred, never an average of two).
pub fn middle<T: Copy>(sorted: &[T]) -> Option<T> {
    sorted.get(sorted.len().checked_sub(1)? / 2).copied()
}

/// A sampled series' period: the median step between consecutive sample times that moved
/// (several values sampled at one time count once); `None` with fewer than two times. The
/// one definition the CPU samples, the GPU metrics and their rows use.
pub fn sample_period(times: &[i64]) -> Option<i64> {
    let mut steps: Vec<i64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&d| d > 0)
        .collect();
    steps.sort_unstable();
    middle(&steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_finds_what_a_search_finds_forward_back_and_past_the_end() {
        let v: Vec<u32> = (0..500).map(|k| k * 2 + 1).collect();
        let mut cursor = Cursor::default();
        // In order, a value repeated, steps back, a jump past the end and back to the start.
        let asks = (0..40).chain([39, 39, 12, 13, 999, 2000, 0, 1, 998, 997]);
        for x in asks {
            assert_eq!(cursor.find(&v, &x), v.binary_search(&x).ok(), "value {x}");
            assert_eq!(
                cursor.seek(v.len(), |k| v[k] <= x),
                v.partition_point(|&y| y <= x),
                "value {x}"
            );
        }
        assert_eq!(Cursor::default().find(&[] as &[u32], &3), None);
    }

    #[test]
    fn the_median_is_the_lower_middle_of_the_sorted_values_copied_or_in_place() {
        for values in [
            vec![],
            vec![4],
            vec![9, 1],
            vec![5, 3, 8, 1],
            vec![7, 7, 2, 9, 4],
        ] {
            let mut sorted = values.clone();
            sorted.sort();
            let lower_middle = middle(&sorted).unwrap_or(0);
            assert_eq!(median(&values), lower_middle, "{values:?}");
            let mut owned = values.clone();
            assert_eq!(median_in_place(&mut owned), lower_middle, "{values:?}");
            owned.sort();
            assert_eq!(owned, sorted, "only reordered");
        }
    }

    #[test]
    fn partition_near_finds_where_a_predicate_turns_false_from_any_hint() {
        let v: Vec<i64> = (0..1000).map(|k| k * 3).collect();
        for hint in [0, 1, 7, 500, 999, 1000, 5000] {
            for t in [-5, 0, 1, 3, 700, 1500, 2997, 2998, 5000] {
                assert_eq!(
                    partition_near(hint, v.len(), |k| v[k] < t),
                    v.partition_point(|&x| x < t),
                    "hint {hint}, t {t}"
                );
            }
        }
    }

    #[test]
    fn gallop_finds_where_a_predicate_turns_false_from_any_start() {
        let v: Vec<i64> = (0..1000).map(|k| k * 3).collect();
        for from in [0, 1, 7, 500, 999, 1000] {
            for t in [-5, 0, 1, 3, 700, 1500, 2997, 2998, 5000] {
                let want = v.partition_point(|&x| x < t).max(from);
                assert_eq!(
                    gallop(from, v.len(), |k| v[k] < t),
                    want,
                    "from {from} t {t}"
                );
            }
        }
    }

    #[test]
    fn partition_finds_the_first_that_fails() {
        let v = [1, 3, 3, 5, 9];
        for t in [0, 1, 3, 4, 9, 10] {
            assert_eq!(
                partition(v.len(), |k| v[k] < t),
                v.partition_point(|&x| x < t)
            );
        }
    }
}
