//! Seeded, per-client workload generators: which operation comes next, on
//! which key, with how large a value.
//!
//! Everything here is deterministic given the plan's seed and the client's
//! index, allocation-free after construction, and cheap enough to call once
//! per operation on the hot path.

use serde::{Deserialize, Serialize};

/// The operations of the key-value workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// Read one record by key.
    Get = 0,
    /// Write one record by key (insert or overwrite).
    Set = 1,
    /// Overwrite an existing record with a new version.
    Update = 2,
    /// Remove one record by key.
    Delete = 3,
    /// Search the `profile` table by secondary fields (in-process table
    /// engines).
    Search = 4,
}

/// Number of [`OpKind`]s; arrays indexed by `OpKind as usize` have this length.
pub const OP_KINDS: usize = 5;

impl OpKind {
    /// All kinds, in index order.
    pub const ALL: [OpKind; OP_KINDS] = [
        OpKind::Get,
        OpKind::Set,
        OpKind::Update,
        OpKind::Delete,
        OpKind::Search,
    ];

    /// Lower-case name as used in mixes, results and reports.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Get => "get",
            OpKind::Set => "set",
            OpKind::Update => "update",
            OpKind::Delete => "delete",
            OpKind::Search => "search",
        }
    }

    /// Whether the operation carries a value to the target.
    pub fn writes_value(self) -> bool {
        matches!(self, OpKind::Set | OpKind::Update)
    }

    /// Whether the operation changes the data (goes to a primary).
    pub fn writes(self) -> bool {
        matches!(self, OpKind::Set | OpKind::Update | OpKind::Delete)
    }
}

/// SplitMix64: small, fast, good enough for load generation, and trivially
/// seedable per client.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` and stream `stream` (e.g. the client index).
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut r = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next_u64();
        r
    }

    /// Next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform integer in `0..n` (`n > 0`), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform float in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// How keys are chosen during the measure phase.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum KeyDistribution {
    /// Every record equally likely.
    Uniform,
    /// Skewed: a few records are hot (YCSB's scrambled zipfian, θ = 0.99).
    Zipfian,
    /// Records in order, wrapping around; each client walks its own stride.
    Sequential,
}

impl std::str::FromStr for KeyDistribution {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "uniform" => Ok(Self::Uniform),
            "zipfian" | "zipf" => Ok(Self::Zipfian),
            "sequential" | "seq" => Ok(Self::Sequential),
            other => Err(format!(
                "unknown key distribution `{other}`; use uniform, zipfian or sequential"
            )),
        }
    }
}

/// Constants of the zipfian distribution over `n` items, computed once per
/// plan (the zeta sum is O(n)) and shared by every client.
#[derive(Clone, Copy, Debug)]
pub struct ZipfianConstants {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl ZipfianConstants {
    /// Zipfian with θ = 0.99 (YCSB's default) over `n` items.
    pub fn new(n: u64) -> Self {
        let theta = 0.99;
        let zeta = |k: u64| (1..=k).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2.min(n));
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Self {
            n,
            theta,
            alpha,
            zetan,
            eta,
        }
    }

    #[inline]
    fn rank(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.n - 1);
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// Picks record ids in `0..records` for one client.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    dist: KeyDistribution,
    records: u64,
    next_seq: u64,
    stride: u64,
    zipf: Option<ZipfianConstants>,
}

impl KeyChooser {
    /// A chooser for client `client` of `clients`.
    pub fn new(
        dist: KeyDistribution,
        records: u64,
        client: u64,
        clients: u64,
        zipf: Option<ZipfianConstants>,
    ) -> Self {
        let stride = clients.max(1);
        Self {
            dist,
            records,
            next_seq: client % records.max(1),
            stride,
            zipf,
        }
    }

    /// The next record id.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        match self.dist {
            KeyDistribution::Uniform => rng.below(self.records),
            KeyDistribution::Sequential => {
                let k = self.next_seq;
                self.next_seq = (self.next_seq + self.stride) % self.records;
                k
            }
            KeyDistribution::Zipfian => {
                let z = self
                    .zipf
                    .as_ref()
                    .expect("zipfian constants computed by the plan");
                // Scramble so the hot records are spread over the key space,
                // as YCSB's ScrambledZipfianGenerator does.
                fnv1a64(z.rank(rng)) % self.records
            }
        }
    }
}

/// FNV-1a over the 8 bytes of `v`.
#[inline]
pub fn fnv1a64(v: u64) -> u64 {
    fnv1a64_bytes(&v.to_le_bytes())
}

/// FNV-1a, 64 bits, of `bytes`.
#[inline]
pub fn fnv1a64_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Picks the next operation from integer weights.
#[derive(Clone, Copy, Debug)]
pub struct MixChooser {
    cumulative: [u32; OP_KINDS],
    total: u32,
}

impl MixChooser {
    /// From weights indexed by `OpKind as usize`; the total must be > 0.
    pub fn new(weights: [u32; OP_KINDS]) -> Self {
        let mut cumulative = [0; OP_KINDS];
        let mut acc = 0;
        for (i, w) in weights.iter().enumerate() {
            acc += w;
            cumulative[i] = acc;
        }
        Self {
            cumulative,
            total: acc,
        }
    }

    /// The next operation.
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> OpKind {
        let x = rng.below(self.total as u64) as u32;
        let i = self.cumulative.iter().position(|&c| x < c).unwrap_or(0);
        OpKind::ALL[i]
    }
}

/// Value sizes: fixed, uniform over an inclusive range, or one of a list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ValueSizes {
    /// Always this many bytes.
    Fixed(usize),
    /// Uniform in `min..=max` bytes.
    Range {
        /// Smallest value, bytes.
        min: usize,
        /// Largest value, bytes.
        max: usize,
    },
    /// Each size equally likely, bytes.
    List(Vec<usize>),
}

impl ValueSizes {
    /// Parses `100`, `100-1000` or `100,1000,10000` (sizes take k/m suffixes).
    pub fn parse(text: &str) -> Result<Self, String> {
        let p = |s: &str| crate::units::parse_bytes(s).map(|v| v as usize);
        if text.contains(',') {
            let v = text.split(',').map(p).collect::<Result<Vec<_>, _>>()?;
            Ok(Self::List(v))
        } else if let Some((a, b)) = text.split_once('-') {
            let (min, max) = (p(a)?, p(b)?);
            if min > max {
                return Err(format!("range `{text}` has min > max"));
            }
            Ok(Self::Range { min, max })
        } else {
            Ok(Self::Fixed(p(text)?))
        }
    }

    /// Smallest size that can be drawn.
    pub fn min(&self) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Range { min, .. } => *min,
            Self::List(v) => v.iter().copied().min().unwrap_or(0),
        }
    }

    /// Largest size that can be drawn.
    pub fn max(&self) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Range { max, .. } => *max,
            Self::List(v) => v.iter().copied().max().unwrap_or(0),
        }
    }

    /// Mean size, bytes.
    pub fn mean(&self) -> f64 {
        match self {
            Self::Fixed(n) => *n as f64,
            Self::Range { min, max } => (*min + *max) as f64 / 2.0,
            Self::List(v) => v.iter().sum::<usize>() as f64 / v.len().max(1) as f64,
        }
    }

    /// Draws a size.
    #[inline]
    pub fn next(&self, rng: &mut Rng) -> usize {
        match self {
            Self::Fixed(n) => *n,
            Self::Range { min, max } => *min + rng.below((*max - *min + 1) as u64) as usize,
            Self::List(v) => v[rng.below(v.len() as u64) as usize],
        }
    }
}

impl std::fmt::Display for ValueSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "{n}"),
            Self::Range { min, max } => write!(f, "{min}-{max}"),
            Self::List(v) => {
                let s: Vec<String> = v.iter().map(|x| x.to_string()).collect();
                write!(f, "{}", s.join(","))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_per_stream() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 1);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 1);
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = Rng::new(7, 2);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn uniform_stays_in_range_and_covers_it() {
        let mut r = Rng::new(1, 0);
        let mut k = KeyChooser::new(KeyDistribution::Uniform, 10, 0, 1, None);
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[k.next(&mut r) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800 && c < 1200), "{seen:?}");
    }

    #[test]
    fn zipfian_is_skewed() {
        let n = 1000;
        let z = ZipfianConstants::new(n);
        let mut r = Rng::new(3, 0);
        let mut k = KeyChooser::new(KeyDistribution::Zipfian, n, 0, 1, Some(z));
        let mut counts = vec![0u32; n as usize];
        for _ in 0..100_000 {
            counts[k.next(&mut r) as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u32 = counts[..10].iter().sum();
        // Under θ = 0.99 the 1 % hottest keys take far more than 1 % of draws.
        assert!(
            top10 > 20_000,
            "top 10 of 1000 keys got {top10} of 100000 draws"
        );
    }

    #[test]
    fn sequential_strides_per_client() {
        let mut r = Rng::new(1, 0);
        let mut k = KeyChooser::new(KeyDistribution::Sequential, 10, 1, 3, None);
        let v: Vec<u64> = (0..5).map(|_| k.next(&mut r)).collect();
        assert_eq!(v, vec![1, 4, 7, 0, 3]);
    }

    #[test]
    fn mix_follows_weights() {
        let m = MixChooser::new([90, 10, 0, 0, 0]);
        let mut r = Rng::new(5, 0);
        let mut c = [0u32; 5];
        for _ in 0..10_000 {
            c[m.next(&mut r) as usize] += 1;
        }
        assert!(c[0] > 8800 && c[0] < 9200, "{c:?}");
        assert_eq!(c[2] + c[3], 0);
    }

    #[test]
    fn value_sizes_parse() {
        assert_eq!(ValueSizes::parse("100").unwrap(), ValueSizes::Fixed(100));
        assert_eq!(
            ValueSizes::parse("1k-2k").unwrap(),
            ValueSizes::Range {
                min: 1024,
                max: 2048
            }
        );
        assert_eq!(
            ValueSizes::parse("1k,10k").unwrap(),
            ValueSizes::List(vec![1024, 10240])
        );
        assert!(ValueSizes::parse("5-1").is_err());
    }
}
