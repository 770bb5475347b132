//! The key chooser's zipfian, measured: for each record count given
//! (default 1,000, 100,000 and 1,000,000), the hottest record's share of
//! draws, the top 1 %'s share and the share of records ever drawn, for
//! YCSB's scrambled zipfian (what `--key-distribution zipfian` draws) and
//! for the map bakeoff drew before (a rank over the records, hashed with
//! FNV-1a and taken modulo the records, which is not a permutation).
//!
//!   cargo run --release --example zipfian [-- DRAWS N...]

use bakeoff_core::workload::{fnv1a64, KeyChooser, KeyDistribution, Rng, ZipfianConstants};

/// (hottest record's share, top 1 %'s share, records drawn) of `counts`.
fn shares(mut counts: Vec<u32>, draws: u64) -> (f64, f64, f64) {
    let n = counts.len();
    let reached = counts.iter().filter(|&&c| c > 0).count() as f64 / n as f64;
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts[..(n / 100).max(1)]
        .iter()
        .map(|&c| u64::from(c))
        .sum();
    (
        f64::from(counts[0]) / draws as f64,
        top as f64 / draws as f64,
        reached,
    )
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let draws = args.first().copied().unwrap_or(10_000_000);
    let sizes = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![1_000, 100_000, 1_000_000]
    };
    println!("{draws} draws each");
    println!(
        "{:>10}  {:>22}  {:>22}  {:>22}",
        "records", "hottest: YCSB / before", "top 1 %: YCSB / before", "drawn: YCSB / before"
    );
    for n in sizes {
        let mut rng = Rng::new(7, 0);
        let mut ycsb = KeyChooser::new(
            KeyDistribution::Zipfian,
            n,
            0,
            1,
            Some(ZipfianConstants::ycsb_scrambled()),
        );
        let over_n = ZipfianConstants::over(n);
        let (mut a, mut b) = (vec![0u32; n as usize], vec![0u32; n as usize]);
        for _ in 0..draws {
            a[ycsb.next(&mut rng, 0) as usize] += 1;
            b[(fnv1a64(over_n.rank(&mut rng)) % n) as usize] += 1;
        }
        let (ya, yb) = (shares(a, draws), shares(b, draws));
        let pct = |x: f64| format!("{:.1} %", x * 100.0);
        println!(
            "{n:>10}  {:>22}  {:>22}  {:>22}",
            format!("{} / {}", pct(ya.0), pct(yb.0)),
            format!("{} / {}", pct(ya.1), pct(yb.1)),
            format!("{} / {}", pct(ya.2), pct(yb.2)),
        );
    }
}
