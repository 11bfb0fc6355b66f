//! The cache files' byte layout: numbers and whole columns, little-endian, written and read
//! in one stream with a running checksum (xxh3) that the file's header holds.
//!
//! A column is its length then its raw bytes, read straight into the `Vec` the model keeps
//! (one copy from the page cache, no buffer beside it). A length is checked against the
//! bytes the file still holds before anything is allocated, so a damaged file can never
//! ask for more memory than it has bytes.

use std::io::{self, Read, Write};

use bytemuck::{Pod, Zeroable};
use xxhash_rust::xxh3::Xxh3;

/// A duration too long for `u32`: the end is listed apart.
const LONG: u32 = u32::MAX;

/// Writes values and columns, hashing every byte.
pub struct Writer<W: Write> {
    out: W,
    hasher: Xxh3,
    written: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            hasher: Xxh3::new(),
            written: 0,
        }
    }

    fn raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    pub fn u64(&mut self, v: u64) -> io::Result<()> {
        self.raw(&v.to_le_bytes())
    }

    pub fn i64(&mut self, v: i64) -> io::Result<()> {
        self.raw(&v.to_le_bytes())
    }

    pub fn u32(&mut self, v: u32) -> io::Result<()> {
        self.raw(&v.to_le_bytes())
    }

    pub fn str(&mut self, s: &str) -> io::Result<()> {
        self.column(s.as_bytes())
    }

    pub fn column<T: Pod>(&mut self, values: &[T]) -> io::Result<()> {
        self.u64(values.len() as u64)?;
        self.raw(bytemuck::cast_slice(values))
    }

    /// A column of times sorted ascending, as `u32` steps from one to the next; a step
    /// that does not fit (hours between two events, or an unsorted column) is listed
    /// apart as (index, time).
    pub fn times(&mut self, times: &[i64]) -> io::Result<()> {
        let mut far: Vec<i64> = Vec::new();
        let mut previous = 0i64;
        let steps: Vec<u32> = times
            .iter()
            .enumerate()
            .map(|(i, &t)| {
                let step = u32::try_from(t.wrapping_sub(previous));
                previous = t;
                match step {
                    Ok(d) if d != LONG && i > 0 => d,
                    _ => {
                        far.extend([i as i64, t]);
                        LONG
                    }
                }
            })
            .collect();
        self.column(&steps)?;
        self.column(&far)
    }

    /// The ends of items starting at `start`, as `u32` durations; the few that last longer
    /// (a whole-run NVTX range, a sync of seconds) are listed apart as (index, end).
    pub fn ends(&mut self, start: &[i64], end: &[i64]) -> io::Result<()> {
        let mut long: Vec<i64> = Vec::new();
        let durations: Vec<u32> = start
            .iter()
            .zip(end)
            .enumerate()
            .map(|(i, (&s, &e))| match u32::try_from(e.wrapping_sub(s)) {
                Ok(d) if d != LONG => d,
                _ => {
                    long.extend([i as i64, e]);
                    LONG
                }
            })
            .collect();
        self.column(&durations)?;
        self.column(&long)
    }

    /// A column of `u8`-coded values (enums, flags).
    pub fn codes<T: Copy>(&mut self, values: &[T], code: impl Fn(T) -> u8) -> io::Result<()> {
        let bytes: Vec<u8> = values.iter().map(|&v| code(v)).collect();
        self.column(&bytes)
    }

    /// A value as JSON (the small, nested parts: load report, export info, processes).
    pub fn json<T: serde::Serialize>(&mut self, value: &T) -> io::Result<()> {
        let text = serde_json::to_string(value).map_err(io::Error::other)?;
        self.str(&text)
    }

    /// Bytes written and their checksum.
    pub fn finish(mut self) -> io::Result<(W, u64, u64)> {
        self.out.flush()?;
        Ok((self.out, self.written, self.hasher.digest()))
    }
}

/// Why a cache file was not used.
#[derive(Debug)]
pub enum Bad {
    Io(io::Error),
    /// The bytes do not hold what the layout says (a damaged or foreign file).
    Damaged(&'static str),
}

impl From<io::Error> for Bad {
    fn from(e: io::Error) -> Self {
        // A file shorter than its header says reads as damaged, not as an I/O failure.
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Bad::Damaged("shorter than its header says")
        } else {
            Bad::Io(e)
        }
    }
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Io(e) => write!(f, "{e}"),
            Bad::Damaged(why) => write!(f, "damaged ({why})"),
        }
    }
}

pub type Result<T> = std::result::Result<T, Bad>;

/// Reads what [`Writer`] wrote, at most `remaining` bytes, hashing every byte.
pub struct Reader<R: Read> {
    inp: R,
    hasher: Xxh3,
    remaining: u64,
}

impl<R: Read> Reader<R> {
    pub fn new(inp: R, payload_bytes: u64) -> Self {
        Self {
            inp,
            hasher: Xxh3::new(),
            remaining: payload_bytes,
        }
    }

    fn raw(&mut self, out: &mut [u8]) -> Result<()> {
        if out.len() as u64 > self.remaining {
            return Err(Bad::Damaged("a length past the end"));
        }
        self.inp.read_exact(out)?;
        self.hasher.update(out);
        self.remaining -= out.len() as u64;
        Ok(())
    }

    pub fn u64(&mut self) -> Result<u64> {
        let mut b = [0; 8];
        self.raw(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(self.u64()? as i64)
    }

    pub fn u32(&mut self) -> Result<u32> {
        let mut b = [0; 4];
        self.raw(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// A count of things each at least `min_bytes` long, checked against what is left.
    pub fn count(&mut self, min_bytes: u64) -> Result<usize> {
        let n = self.u64()?;
        if n.saturating_mul(min_bytes.max(1)) > self.remaining {
            return Err(Bad::Damaged("a count past the end"));
        }
        Ok(n as usize)
    }

    pub fn column<T: Pod + Zeroable>(&mut self) -> Result<Vec<T>> {
        let n = self.count(size_of::<T>() as u64)?;
        let mut values = vec![T::zeroed(); n];
        self.raw(bytemuck::cast_slice_mut(&mut values))?;
        Ok(values)
    }

    pub fn str(&mut self) -> Result<String> {
        String::from_utf8(self.column::<u8>()?).map_err(|_| Bad::Damaged("text not UTF-8"))
    }

    /// What [`Writer::times`] wrote.
    pub fn times(&mut self) -> Result<Vec<i64>> {
        let steps: Vec<u32> = self.column()?;
        let far: Vec<i64> = self.column()?;
        if !far.len().is_multiple_of(2) {
            return Err(Bad::Damaged("times listed apart"));
        }
        let mut far = far.chunks_exact(2).peekable();
        let mut t = 0i64;
        let mut times = Vec::with_capacity(steps.len());
        for (i, step) in steps.into_iter().enumerate() {
            t = match far.peek() {
                Some(pair) if pair[0] == i as i64 => {
                    let value = pair[1];
                    far.next();
                    value
                }
                _ => t.wrapping_add(step as i64),
            };
            times.push(t);
        }
        if far.next().is_some() {
            return Err(Bad::Damaged("a time listed past the end"));
        }
        Ok(times)
    }

    /// What [`Writer::ends`] wrote, for items starting at `start`.
    pub fn ends(&mut self, start: &[i64]) -> Result<Vec<i64>> {
        let durations: Vec<u32> = self.column()?;
        let long: Vec<i64> = self.column()?;
        if durations.len() != start.len() || !long.len().is_multiple_of(2) {
            return Err(Bad::Damaged("ends and starts differ in length"));
        }
        let mut end: Vec<i64> = start
            .iter()
            .zip(durations)
            .map(|(&s, d)| s.wrapping_add(d as i64))
            .collect();
        for pair in long.chunks_exact(2) {
            let slot = usize::try_from(pair[0])
                .ok()
                .and_then(|i| end.get_mut(i))
                .ok_or(Bad::Damaged("a long item past the end"))?;
            *slot = pair[1];
        }
        Ok(end)
    }

    /// A column of `u8` codes, each turned back into its value (`None`: not a code).
    pub fn codes<T>(&mut self, decode: impl Fn(u8) -> Option<T>) -> Result<Vec<T>> {
        self.column::<u8>()?
            .into_iter()
            .map(|c| decode(c).ok_or(Bad::Damaged("an unknown code")))
            .collect()
    }

    pub fn json<T: serde::de::DeserializeOwned>(&mut self) -> Result<T> {
        let text = self.str()?;
        serde_json::from_str(&text).map_err(|_| Bad::Damaged("bad JSON part"))
    }

    /// Checks that every byte was read and that they hash to `checksum`.
    pub fn finish(self, checksum: u64) -> Result<()> {
        if self.remaining != 0 {
            return Err(Bad::Damaged("bytes left over"));
        }
        if self.hasher.digest() != checksum {
            return Err(Bad::Damaged("checksum"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_come_back_and_damage_is_caught() {
        let mut w = Writer::new(Vec::new());
        w.column(&[1i64, -2, 3]).unwrap();
        w.str("aten::linear").unwrap();
        w.codes(&[true, false], u8::from).unwrap();
        let (bytes, len, sum) = w.finish().unwrap();
        let mut t = Writer::new(Vec::new());
        let far = [0i64, 5, 5, 9_000_000_000, 9_000_000_001, 4];
        for times in [&[][..], &[0][..], &[3, 7, 7, 12][..], &far[..]] {
            t.times(times).unwrap();
            t.ends(times, &times.iter().map(|x| x + 2).collect::<Vec<_>>())
                .unwrap();
        }
        t.ends(&[0, 1], &[6_000_000_000, 2]).unwrap();
        let (tb, tlen, tsum) = t.finish().unwrap();
        let mut r = Reader::new(&tb[..], tlen);
        for times in [&[][..], &[0][..], &[3, 7, 7, 12][..], &far[..]] {
            assert_eq!(r.times().unwrap(), times);
            let ends: Vec<i64> = times.iter().map(|x| x + 2).collect();
            assert_eq!(r.ends(times).unwrap(), ends);
        }
        assert_eq!(r.ends(&[0, 1]).unwrap(), vec![6_000_000_000, 2]);
        r.finish(tsum).unwrap();
        assert_eq!(len, bytes.len() as u64);

        let mut r = Reader::new(&bytes[..], len);
        assert_eq!(r.column::<i64>().unwrap(), vec![1, -2, 3]);
        assert_eq!(r.str().unwrap(), "aten::linear");
        let flags = r.codes(|c| (c < 2).then_some(c == 1)).unwrap();
        assert_eq!(flags, vec![true, false]);
        r.finish(sum).unwrap();

        // One flipped bit: the values may even read, the checksum does not match.
        let mut flipped = bytes.clone();
        flipped[9] ^= 1;
        let mut r = Reader::new(&flipped[..], len);
        let _ = r.column::<i64>();
        let _ = r.str();
        let _ = r.column::<u8>();
        assert!(r.finish(sum).is_err());

        // A huge length allocates nothing: it is past the end.
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut r = Reader::new(&huge[..], len);
        assert!(matches!(r.column::<i64>(), Err(Bad::Damaged(_))));
    }
}
