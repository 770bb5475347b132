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
    /// Skewed: a few records are hot. YCSB's scrambled zipfian exactly
    /// (θ = 0.99, ranks over 10^10 items, `abs(fnv64(rank)) % records`):
    /// the hottest record gets about 3.8 % of draws at any record count.
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

/// Constants of a zipfian distribution (Gray et al.'s algorithm, as
/// YCSB's `ZipfianGenerator`), shared by every client.
#[derive(Clone, Copy, Debug)]
pub struct ZipfianConstants {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

/// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`, fixed in
/// its source, not a property).
pub const YCSB_THETA: f64 = 0.99;

/// Items YCSB's `ScrambledZipfianGenerator` draws its ranks over
/// (`ITEM_COUNT`, 10^10), whatever the record count.
pub const YCSB_SCRAMBLED_ITEMS: u64 = 10_000_000_000;

/// The zeta sum YCSB precomputed for [`YCSB_SCRAMBLED_ITEMS`] items at
/// θ = 0.99 (`ScrambledZipfianGenerator.ZETAN`).
pub const YCSB_SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

impl ZipfianConstants {
    /// YCSB's scrambled zipfian: ranks over 10^10 items with YCSB's
    /// precomputed zeta, so that the hottest rank gets 1/26.47 ≈ 3.8 % of
    /// draws at any record count. `ZipfianGenerator(0, ITEM_COUNT, …)`
    /// counts `max - min + 1` items, hence the one more.
    pub fn ycsb_scrambled() -> Self {
        Self::with_zeta(YCSB_SCRAMBLED_ITEMS + 1, YCSB_THETA, YCSB_SCRAMBLED_ZETAN)
    }

    /// Zipfian with θ = 0.99 over `n` items, its zeta summed here (O(n)).
    pub fn over(n: u64) -> Self {
        let zetan = zeta(n, YCSB_THETA);
        Self::with_zeta(n, YCSB_THETA, zetan)
    }

    fn with_zeta(items: u64, theta: f64, zetan: f64) -> Self {
        let zeta2 = zeta(2.min(items), theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Self {
            items,
            theta,
            alpha,
            zetan,
            eta,
        }
    }

    /// A rank in `0..items`: 0 the most likely.
    #[inline]
    pub fn rank(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}

/// The zeta sum of `n` items at `theta`.
fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of
/// `v`, then Java's `Math.abs` of it as a signed number (which leaves
/// `i64::MIN` as it is; its magnitude is the same bits unsigned).
#[inline]
pub fn ycsb_fnvhash64(v: u64) -> u64 {
    (fnv1a64(v) as i64).unsigned_abs()
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
                // YCSB's ScrambledZipfianGenerator: a rank over 10^10
                // items, hashed onto the records, so that the hot records
                // are spread over the key space and every record can be
                // drawn.
                ycsb_fnvhash64(z.rank(rng)) % self.records
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

    /// Shares of `draws` zipfian draws over `n` records: (hottest record's
    /// share, the top 1 %'s share, the share of records drawn at all).
    fn zipfian_shares(n: u64, draws: u32, seed: u64) -> (f64, f64, f64) {
        let mut r = Rng::new(seed, 0);
        let z = ZipfianConstants::ycsb_scrambled();
        let mut k = KeyChooser::new(KeyDistribution::Zipfian, n, 0, 1, Some(z));
        let mut counts = vec![0u32; n as usize];
        for _ in 0..draws {
            counts[k.next(&mut r) as usize] += 1;
        }
        let reached = counts.iter().filter(|&&c| c > 0).count() as f64 / n as f64;
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top1 = counts[..(n as usize / 100).max(1)].iter().sum::<u32>();
        (
            f64::from(counts[0]) / f64::from(draws),
            f64::from(top1) / f64::from(draws),
            reached,
        )
    }

    /// YCSB's scrambled zipfian reaches every record, and its hottest one
    /// takes 1/26.47 of draws (the old rank-over-n map left 29–54 % of the
    /// records unreachable and doubled the hottest share).
    #[test]
    fn zipfian_reaches_every_record_and_the_hottest_takes_3_8_percent() {
        let (hottest, _, reached) = zipfian_shares(10_000, 2_000_000, 3);
        assert_eq!(
            reached,
            1.0,
            "records never drawn: {:.2} %",
            (1.0 - reached) * 100.0
        );
        assert!(
            (hottest - 0.038).abs() <= 0.005,
            "hottest record: {:.2} % of draws",
            hottest * 100.0
        );
    }

    #[test]
    fn zipfian_top_percent_takes_30_percent() {
        let (_, top1, _) = zipfian_shares(100_000, 2_000_000, 7);
        assert!(
            (top1 - 0.30).abs() <= 0.03,
            "top 1 % of records: {:.2} % of draws",
            top1 * 100.0
        );
    }

    /// Java's `Math.abs(FNV-1a-64)` of YCSB's `Utils.fnvhash64`: 8 zero
    /// bytes hash to 0xa8c7f832281a39c5, negative as a signed number.
    #[test]
    fn ycsb_hash_is_javas_abs_of_fnv1a() {
        assert_eq!(fnv1a64(0), 0xa8c7_f832_281a_39c5);
        assert_eq!(ycsb_fnvhash64(0), 6_284_781_860_667_377_211);
        assert_eq!(ycsb_fnvhash64(1), 8_517_097_267_634_966_620);
    }

    /// The zipfian over n items (for choosers that need one over the
    /// records, as YCSB's `latest`) is skewed towards rank 0.
    #[test]
    fn zipfian_over_n_is_skewed() {
        let z = ZipfianConstants::over(1000);
        let mut r = Rng::new(3, 0);
        let mut zero = 0;
        for _ in 0..100_000 {
            let rank = z.rank(&mut r);
            assert!(rank < 1000);
            zero += u32::from(rank == 0);
        }
        // 1 / zeta(1000, 0.99) ≈ 13 %.
        assert!((12_000..14_500).contains(&zero), "{zero}");
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
