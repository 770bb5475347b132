//! The per-file volatile write cache: dirty 4 KiB pages over a backing file.
//!
//! Pure data structure, no I/O of its own: the only backing access it needs
//! (filling the gap between two writes into one page) goes through a callback,
//! so that the overlay logic can be checked against a plain `Vec<u8>` model
//! without a mount.

use std::cmp::{max, min};
use std::collections::btree_map::Entry;
use std::collections::BTreeMap;
use std::io;

/// Cache granularity. Matches the kernel's page size, so the memory a dirty
/// file costs here is what the page cache would hold for it.
pub(crate) const PAGE: u64 = 4096;
const PAGE_USIZE: usize = PAGE as usize;

/// Largest single `pwrite` a writeback issues; bounds the temporary buffer.
const MAX_RUN: usize = 1 << 20;

/// One dirty page. Only `buf[lo..hi]` is meaningful: bytes outside the span
/// are whatever the backing file says. Keeping a span instead of reading the
/// whole page in on first touch means an appending writer (WAL, AOF) never
/// reads from the backing file at all.
struct Page {
    buf: Box<[u8; PAGE_USIZE]>,
    lo: usize,
    hi: usize,
}

/// Dirty data of one file, and the file's logical size while it has any.
#[derive(Default)]
pub(crate) struct Dirty {
    pages: BTreeMap<u64, Page>,
    /// Logical size; only meaningful while `pages` is not empty (a clean
    /// file's size is its backing file's).
    size: u64,
    /// Sum of the spans: the bytes written and not yet made durable.
    bytes: u64,
}

impl Dirty {
    /// True when nothing is cached: the backing file is the whole truth.
    pub(crate) fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// The logical size, if the file has dirty data.
    pub(crate) fn size(&self) -> Option<u64> {
        (!self.pages.is_empty()).then_some(self.size)
    }

    /// Grows the logical size (fallocate without KEEP_SIZE); no-op when clean,
    /// since the backing file's size is then the truth.
    pub(crate) fn grow_size(&mut self, to: u64) {
        if !self.pages.is_empty() {
            self.size = max(self.size, to);
        }
    }

    /// Bytes written and not yet durable (sum of per-page spans).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Pages held: the memory this file's cache costs, in [`PAGE`] units.
    pub(crate) fn pages(&self) -> u64 {
        self.pages.len() as u64
    }

    /// Buffers `data` at `off`. `backing_size` is the backing file's size,
    /// used as the starting logical size when the file goes from clean to
    /// dirty. `fill(offset, buf)` must read backing bytes (zeros past EOF);
    /// it is called only for the gap between an existing span and a new
    /// write into the same page.
    pub(crate) fn write(
        &mut self,
        off: u64,
        data: &[u8],
        backing_size: u64,
        fill: &mut dyn FnMut(u64, &mut [u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        if self.pages.is_empty() {
            self.size = backing_size;
            self.bytes = 0;
        }
        let mut pos = off;
        let mut rest = data;
        while !rest.is_empty() {
            let idx = pos / PAGE;
            let start = (pos % PAGE) as usize;
            let n = min(rest.len(), PAGE_USIZE - start);
            let end = start + n;
            let base = idx * PAGE;
            match self.pages.entry(idx) {
                Entry::Vacant(v) => {
                    let mut p = Page {
                        buf: Box::new([0u8; PAGE_USIZE]),
                        lo: start,
                        hi: end,
                    };
                    p.buf[start..end].copy_from_slice(&rest[..n]);
                    v.insert(p);
                    self.bytes += n as u64;
                }
                Entry::Occupied(o) => {
                    let p = o.into_mut();
                    // The span must stay contiguous, so the bytes between the
                    // old span and the new write come from the backing file
                    // (they are not dirty, so the backing file has them).
                    if end < p.lo {
                        fill(base + end as u64, &mut p.buf[end..p.lo])?;
                    }
                    if start > p.hi {
                        fill(base + p.hi as u64, &mut p.buf[p.hi..start])?;
                    }
                    p.buf[start..end].copy_from_slice(&rest[..n]);
                    let old = (p.hi - p.lo) as u64;
                    p.lo = min(p.lo, start);
                    p.hi = max(p.hi, end);
                    self.bytes += (p.hi - p.lo) as u64 - old;
                }
            }
            self.size = max(self.size, base + end as u64);
            pos += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Copies the dirty bytes that fall in `[off, off + buf.len())` over `buf`
    /// (which the caller filled from the backing file).
    pub(crate) fn overlay(&self, off: u64, buf: &mut [u8]) {
        if buf.is_empty() || self.pages.is_empty() {
            return;
        }
        let end = off + buf.len() as u64;
        for (&idx, p) in self.pages.range(off / PAGE..=(end - 1) / PAGE) {
            let base = idx * PAGE;
            let a = max(base + p.lo as u64, off);
            let b = min(base + p.hi as u64, end);
            if a < b {
                buf[(a - off) as usize..(b - off) as usize]
                    .copy_from_slice(&p.buf[(a - base) as usize..(b - base) as usize]);
            }
        }
    }

    /// Truncates to `new` (the backing file is truncated by the caller): drops
    /// the dirty bytes at or past `new` and sets the logical size.
    pub(crate) fn truncate(&mut self, new: u64) {
        if self.pages.is_empty() {
            return;
        }
        let keep_below = new.div_ceil(PAGE);
        let gone = self.pages.split_off(&keep_below);
        for p in gone.values() {
            self.bytes -= (p.hi - p.lo) as u64;
        }
        if !new.is_multiple_of(PAGE) {
            let idx = new / PAGE;
            let cut = (new % PAGE) as usize;
            if let Some(p) = self.pages.get_mut(&idx) {
                if p.lo >= cut {
                    self.bytes -= (p.hi - p.lo) as u64;
                    self.pages.remove(&idx);
                } else if p.hi > cut {
                    self.bytes -= (p.hi - cut) as u64;
                    p.hi = cut;
                }
            }
        }
        if self.pages.is_empty() {
            self.clear();
        } else {
            self.size = new;
        }
    }

    /// Makes `[off, off + len)` read as zeros in the cache (punch hole, zero
    /// range: the backing file is zeroed by the caller). Spans are zeroed in
    /// place, never dropped: a page may be what holds the logical size past
    /// the backing file's end, and zeros written back are harmless.
    pub(crate) fn zero_range(&mut self, off: u64, len: u64) {
        if len == 0 || self.pages.is_empty() {
            return;
        }
        let end = off.saturating_add(len);
        for (&idx, p) in self.pages.range_mut(off / PAGE..=(end - 1) / PAGE) {
            let base = idx * PAGE;
            let a = max(base + p.lo as u64, off);
            let b = min(base + p.hi as u64, end);
            if a < b {
                p.buf[(a - base) as usize..(b - base) as usize].fill(0);
            }
        }
    }

    /// Contiguous runs of dirty bytes, in file order, each at most 1 MiB:
    /// what a writeback `pwrite`s.
    pub(crate) fn runs(&self) -> Vec<(u64, Vec<u8>)> {
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        for (&idx, p) in &self.pages {
            let start = idx * PAGE + p.lo as u64;
            let bytes = &p.buf[p.lo..p.hi];
            match out.last_mut() {
                Some((at, run))
                    if *at + run.len() as u64 == start && run.len() + bytes.len() <= MAX_RUN =>
                {
                    run.extend_from_slice(bytes);
                }
                _ => out.push((start, bytes.to_vec())),
            }
        }
        out
    }

    /// Forgets everything; returns (bytes, pages) dropped.
    pub(crate) fn clear(&mut self) -> (u64, u64) {
        let r = (self.bytes, self.pages.len() as u64);
        self.pages.clear();
        self.size = 0;
        self.bytes = 0;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small deterministic generator (xorshift64*), so the test needs no
    /// dependency and always replays the same sequence.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// What a reader sees: backing bytes, zero-extended to the logical size,
    /// with the dirty spans on top.
    fn view(d: &Dirty, backing: &[u8]) -> Vec<u8> {
        let size = d.size().unwrap_or(backing.len() as u64) as usize;
        let mut buf = vec![0u8; size];
        let n = min(size, backing.len());
        buf[..n].copy_from_slice(&backing[..n]);
        d.overlay(0, &mut buf);
        buf
    }

    /// Compares without printing megabytes: lengths, then the first mismatch.
    fn same(got: &[u8], want: &[u8], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "{what}: first difference at byte {i}: {} != {}",
                got[i], want[i]
            );
        }
    }

    fn flush(d: &mut Dirty, backing: &mut Vec<u8>) {
        let size = match d.size() {
            Some(s) => s as usize,
            None => return,
        };
        for (off, run) in d.runs() {
            let end = off as usize + run.len();
            if backing.len() < end {
                backing.resize(end, 0);
            }
            backing[off as usize..end].copy_from_slice(&run);
        }
        if backing.len() < size {
            backing.resize(size, 0);
        }
        d.clear();
    }

    #[test]
    fn random_ops_match_a_plain_model() {
        for seed in 1..=20u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut d = Dirty::default();
            let mut backing: Vec<u8> = Vec::new();
            let mut model: Vec<u8> = Vec::new();
            let mut durable: Vec<u8> = Vec::new();
            for step in 0..400 {
                let op = rng.below(10);
                match op {
                    0..=4 => {
                        let off = rng.below(5 * PAGE);
                        let len = 1 + rng.below(2 * PAGE) as usize;
                        let data: Vec<u8> = (0..len).map(|_| rng.next() as u8 | 1).collect();
                        let bsize = backing.len() as u64;
                        let snapshot = backing.clone();
                        d.write(off, &data, bsize, &mut |o, buf| {
                            for (i, b) in buf.iter_mut().enumerate() {
                                *b = snapshot.get(o as usize + i).copied().unwrap_or(0);
                            }
                            Ok(())
                        })
                        .unwrap();
                        let end = off as usize + len;
                        if model.len() < end {
                            model.resize(end, 0);
                        }
                        model[off as usize..end].copy_from_slice(&data);
                    }
                    5 => {
                        let new = rng.below(6 * PAGE) as usize;
                        backing.resize(new, 0);
                        durable.resize(new, 0);
                        d.truncate(new as u64);
                        model.resize(new, 0);
                    }
                    6 => {
                        flush(&mut d, &mut backing);
                        durable = backing.clone();
                    }
                    7 => {
                        d.clear();
                        backing = durable.clone();
                        model = durable.clone();
                    }
                    8 => {
                        let off = rng.below(5 * PAGE);
                        let len = rng.below(2 * PAGE);
                        // Punch hole with KEEP_SIZE on the backing file.
                        let bl = backing.len() as u64;
                        for i in off..min(off + len, bl) {
                            backing[i as usize] = 0;
                        }
                        let dl = durable.len() as u64;
                        for i in off..min(off + len, dl) {
                            durable[i as usize] = 0;
                        }
                        d.zero_range(off, len);
                        let ml = model.len() as u64;
                        for i in off..min(off + len, ml) {
                            model[i as usize] = 0;
                        }
                    }
                    _ => {
                        let off = rng.below(6 * PAGE);
                        let len = rng.below(3 * PAGE) as usize;
                        let size = d.size().unwrap_or(backing.len() as u64);
                        let end = min(off + len as u64, size);
                        if off < end {
                            let mut buf = vec![0u8; (end - off) as usize];
                            let bl = backing.len() as u64;
                            if off < bl {
                                let n = (min(end, bl) - off) as usize;
                                buf[..n].copy_from_slice(&backing[off as usize..off as usize + n]);
                            }
                            d.overlay(off, &mut buf);
                            same(
                                &buf,
                                &model[off as usize..end as usize],
                                &format!("seed {seed} step {step} read"),
                            );
                        }
                    }
                }
                same(
                    &view(&d, &backing),
                    &model,
                    &format!("seed {seed} step {step} op {op}"),
                );
                let spans: u64 = d.pages.values().map(|p| (p.hi - p.lo) as u64).sum();
                assert_eq!(spans, d.bytes(), "seed {seed} step {step}");
            }
        }
    }

    #[test]
    fn runs_coalesce_contiguous_spans() {
        let mut d = Dirty::default();
        let mut nofill = |_: u64, _: &mut [u8]| -> io::Result<()> { panic!("no gap expected") };
        d.write(100, &vec![7u8; 3 * PAGE as usize], 0, &mut nofill)
            .unwrap();
        d.write(10 * PAGE, b"x", 0, &mut nofill).unwrap();
        let runs = d.runs();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].0, 100);
        assert_eq!(runs[0].1.len(), 3 * PAGE as usize);
        assert_eq!(runs[1], (10 * PAGE, b"x".to_vec()));
        assert_eq!(d.size(), Some(10 * PAGE + 1));
        assert_eq!(d.bytes(), 3 * PAGE + 1);
    }
}
