//! What the user pays for a machine's resources (`--price
//! cpu-hour=0.04,memory-gb-hour=0.005,disk-gb-month=0.08`): the fit answer
//! turns its costs (server CPU per operation, memory per record, disk per
//! record) into dollars with them. A price changes nothing the run does;
//! the plan carries it so that the result file, and every report made from
//! it, counts in the same units.

use serde::{Deserialize, Serialize};

/// Hours in the month the monthly figures count: 365 × 24 / 12.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// Bytes in the gigabyte the prices are per: 2³⁰, as bakeoff reads `GB`
/// everywhere (`--require memory<=2GB@10M`) and its reports print GiB.
pub const BYTES_PER_GB: f64 = (1u64 << 30) as f64;

/// Prices in dollars; a resource without one is not counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Prices {
    /// One CPU core for an hour (`cpu-hour`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_hour: Option<f64>,
    /// One GB (2³⁰ bytes) of memory for an hour (`memory-gb-hour`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_gb_hour: Option<f64>,
    /// One GB (2³⁰ bytes) of disk for a month (`disk-gb-month`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_gb_month: Option<f64>,
}

/// The names `--price` takes, in the order they are shown.
pub const PRICE_NAMES: [&str; 3] = ["cpu-hour", "memory-gb-hour", "disk-gb-month"];

impl Prices {
    /// Parses `cpu-hour=0.04,memory-gb-hour=0.005,disk-gb-month=0.08` (any
    /// of them, each at most once; a leading `$` is allowed).
    pub fn parse(text: &str) -> Result<Self, String> {
        let usage = "write e.g. cpu-hour=0.04,memory-gb-hour=0.005,disk-gb-month=0.08";
        let mut prices = Prices::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}` is no NAME=DOLLARS; {usage}"))?;
            let (name, value) = (name.trim(), value.trim());
            let slot = match name {
                "cpu-hour" => &mut prices.cpu_hour,
                "memory-gb-hour" => &mut prices.memory_gb_hour,
                "disk-gb-month" => &mut prices.disk_gb_month,
                other => {
                    return Err(format!(
                        "`{other}` is no price; the prices are {}",
                        PRICE_NAMES.join(", ")
                    ))
                }
            };
            let dollars: f64 = value
                .trim_start_matches('$')
                .parse()
                .map_err(|_| format!("{name}: `{value}` is no number of dollars; {usage}"))?;
            if !dollars.is_finite() || dollars < 0.0 {
                return Err(format!(
                    "{name}: `{value}` is no price; a price is a number of dollars, 0 or more"
                ));
            }
            if slot.replace(dollars).is_some() {
                return Err(format!("{name} is priced twice"));
            }
        }
        if prices == Prices::default() {
            return Err(format!("no price given; {usage}"));
        }
        Ok(prices)
    }
}

impl std::fmt::Display for Prices {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = PRICE_NAMES
            .iter()
            .zip([self.cpu_hour, self.memory_gb_hour, self.disk_gb_month])
            .filter_map(|(name, price)| Some(format!("{name}=${}", price?)))
            .collect();
        f.write_str(&parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prices_parse_and_refuse_what_is_no_price() {
        let p = Prices::parse("cpu-hour=0.04, memory-gb-hour=$0.005,disk-gb-month=0.08").unwrap();
        assert_eq!(
            p,
            Prices {
                cpu_hour: Some(0.04),
                memory_gb_hour: Some(0.005),
                disk_gb_month: Some(0.08),
            }
        );
        assert_eq!(
            p.to_string(),
            "cpu-hour=$0.04, memory-gb-hour=$0.005, disk-gb-month=$0.08"
        );
        assert_eq!(
            Prices::parse("cpu-hour=0").unwrap().cpu_hour,
            Some(0.0),
            "free is a price"
        );
        let err = |t: &str| Prices::parse(t).unwrap_err();
        assert!(err("gpu-hour=3").contains("`gpu-hour` is no price"));
        assert!(err("cpu-hour=cheap").contains("no number of dollars"));
        assert!(err("cpu-hour=-0.04").contains("0 or more"));
        assert!(err("cpu-hour=inf").contains("0 or more"));
        assert!(err("cpu-hour").contains("no NAME=DOLLARS"));
        assert!(err("cpu-hour=1,cpu-hour=2").contains("priced twice"));
        assert!(err("").contains("no price given"));
    }
}
