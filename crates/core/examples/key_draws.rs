//! Draws record ids with bakeoff's key chooser, as the measure phase does,
//! and prints one JSON line with the shape of what was drawn:
//!
//! - `hottest_share`: the most drawn record's share of the draws;
//! - `top1pct_share`: the share of draws that went to the top 1 % most
//!   drawn records (at least one record);
//! - `coverage`: the share of records drawn at least once.
//!
//! `bench/ycsb-distribution.sh` compares these with the same figures over
//! the keys YCSB's own client reads.
//!
//!   cargo run --release -p bakeoff-core --example key_draws -- \
//!       --records N --draws M [--distribution zipfian|uniform] [--seed S]

use bakeoff_core::workload::{KeyChooser, KeyDistribution, Rng, ZipfianConstants};
use serde::Serialize;

/// What to draw, from the command line.
struct Args {
    records: u64,
    draws: u64,
    distribution: KeyDistribution,
    seed: u64,
}

/// Parses `--records N --draws M [--distribution D] [--seed S]`.
fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        records: 0,
        draws: 0,
        distribution: KeyDistribution::Zipfian,
        seed: 7,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|e| format!("{flag} {value}: {e}"))
        };
        match flag.as_str() {
            "--records" => args.records = number()?,
            "--draws" => args.draws = number()?,
            "--seed" => args.seed = number()?,
            "--distribution" => {
                args.distribution = match value.parse()? {
                    KeyDistribution::Sequential => {
                        return Err("--distribution: zipfian or uniform".into())
                    }
                    d => d,
                }
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if args.records == 0 || args.draws == 0 {
        return Err("--records and --draws must both be given and above 0".into());
    }
    Ok(args)
}

/// The printed line, its fields in this order.
#[derive(Serialize)]
struct Shape {
    records: u64,
    draws: u64,
    hottest_share: f64,
    top1pct_share: f64,
    coverage: f64,
}

fn main() {
    let args = parse_args().unwrap_or_else(|e| {
        eprintln!("key_draws: {e}");
        eprintln!(
            "usage: key_draws --records N --draws M [--distribution zipfian|uniform] [--seed S]"
        );
        std::process::exit(2);
    });
    let n = args.records;
    // As the measure phase builds it for one client of one.
    let zipf =
        (args.distribution == KeyDistribution::Zipfian).then(ZipfianConstants::ycsb_scrambled);
    let mut chooser = KeyChooser::new(args.distribution, n, 0, 1, zipf);
    let mut rng = Rng::new(args.seed, 0);
    let mut counts = vec![0u32; n as usize];
    for _ in 0..args.draws {
        counts[chooser.next(&mut rng, 0) as usize] += 1;
    }

    let drawn = counts.iter().filter(|&&c| c > 0).count();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts[..(counts.len() / 100).max(1)]
        .iter()
        .map(|&c| u64::from(c))
        .sum();
    let share = |x: u64| x as f64 / args.draws as f64;
    let shape = Shape {
        records: n,
        draws: args.draws,
        hottest_share: share(u64::from(counts[0])),
        top1pct_share: share(top),
        coverage: drawn as f64 / n as f64,
    };
    println!("{}", serde_json::to_string(&shape).expect("plain numbers"));
}
