//! The `profile` record of experiment 000-search and the searches on it.
//!
//! Every field is derived from the record id alone, so each target stores
//! the same rows and, given the same seed, receives the same queries: the
//! rows each target returns can be compared one to one.
//!
//! | field | values | selectivity of `=` |
//! |---|---|---|
//! | name | 8 lowercase letters | substring of 3 letters: about 0.03 % |
//! | sex | `m` or `f` | 50 % |
//! | province | `p00` … `p33` | |
//! | city | `c0` … `c9` within a province | province + city: 1 / 340 |

use serde::{Deserialize, Serialize};

use crate::workload::Rng;

/// Provinces and cities per province.
pub const PROVINCES: u64 = 34;
/// Cities per province.
pub const CITIES: u64 = 10;

/// What records a workload stores.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum RecordKind {
    /// A blob per key (`kv`).
    #[default]
    Kv,
    /// A `profile` row: name, sex, province, city, payload.
    Profile,
}

impl std::str::FromStr for RecordKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "kv" => Ok(Self::Kv),
            "profile" => Ok(Self::Profile),
            o => Err(format!("unknown record kind `{o}`; use kv or profile")),
        }
    }
}

/// Which search the `search` operation makes.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SearchKind {
    /// `name LIKE '%abc%'`: no index can help.
    #[default]
    Name,
    /// `sex = ?` (indexed when indexes are on).
    Sex,
    /// `province = ? AND city = ?` (indexed when indexes are on).
    Location,
    /// All three conditions.
    All,
}

impl std::str::FromStr for SearchKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "name" => Ok(Self::Name),
            "sex" => Ok(Self::Sex),
            "location" => Ok(Self::Location),
            "all" => Ok(Self::All),
            o => Err(format!(
                "unknown search `{o}`; use name, sex, location or all"
            )),
        }
    }
}

impl std::fmt::Display for SearchKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Name => "name",
            Self::Sex => "sex",
            Self::Location => "location",
            Self::All => "all",
        })
    }
}

/// One profile row (without its payload, which is the record's value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// 8 lowercase ASCII letters.
    pub name: [u8; 8],
    /// `m` or `f`.
    pub sex: u8,
    /// 0 … PROVINCES-1.
    pub province: u8,
    /// 0 … CITIES-1.
    pub city: u8,
}

impl Profile {
    /// The profile of record `id`.
    pub fn of(id: u64) -> Self {
        let mut r = Rng::new(0x9E0F_11E5, id);
        let mut name = [0u8; 8];
        for c in &mut name {
            *c = b'a' + r.below(26) as u8;
        }
        Profile {
            name,
            sex: if r.below(2) == 0 { b'm' } else { b'f' },
            province: r.below(PROVINCES) as u8,
            city: r.below(CITIES) as u8,
        }
    }

    /// `p07`.
    pub fn province_text(&self) -> [u8; 3] {
        [b'p', b'0' + self.province / 10, b'0' + self.province % 10]
    }

    /// `c3`.
    pub fn city_text(&self) -> [u8; 2] {
        [b'c', b'0' + self.city]
    }
}

/// One search, with its parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// Which conditions apply.
    pub kind: SearchKind,
    /// Substring of the name (3 letters).
    pub name_part: [u8; 3],
    /// `m` or `f`.
    pub sex: u8,
    /// `p07`.
    pub province: [u8; 3],
    /// `c3`.
    pub city: [u8; 2],
}

impl Query {
    /// Draws the parameters of a `kind` search from a client's stream.
    pub fn draw(kind: SearchKind, rng: &mut Rng) -> Self {
        let mut name_part = [0u8; 3];
        for c in &mut name_part {
            *c = b'a' + rng.below(26) as u8;
        }
        let p = Profile {
            name: [0; 8],
            sex: 0,
            province: rng.below(PROVINCES) as u8,
            city: rng.below(CITIES) as u8,
        };
        Query {
            kind,
            name_part,
            sex: if rng.below(2) == 0 { b'm' } else { b'f' },
            province: p.province_text(),
            city: p.city_text(),
        }
    }

    /// Whether `p` matches (the reference every engine must agree with).
    pub fn matches(&self, p: &Profile) -> bool {
        let name = p.name.windows(3).any(|w| w == self.name_part);
        let sex = p.sex == self.sex;
        let loc = p.province_text() == self.province && p.city_text() == self.city;
        match self.kind {
            SearchKind::Name => name,
            SearchKind::Sex => sex,
            SearchKind::Location => loc,
            SearchKind::All => name && sex && loc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_deterministic_and_spread() {
        assert_eq!(Profile::of(5), Profile::of(5));
        let n = 20_000;
        let men = (0..n).filter(|&i| Profile::of(i).sex == b'm').count();
        assert!(men > 9_500 && men < 10_500, "{men}");
        let q = Query {
            kind: SearchKind::Location,
            name_part: *b"abc",
            sex: b'm',
            province: *b"p07",
            city: *b"c3",
        };
        let hits = (0..n).filter(|&i| q.matches(&Profile::of(i))).count();
        assert!(hits > 25 && hits < 100, "{hits} of {n} in one city");
    }
}
