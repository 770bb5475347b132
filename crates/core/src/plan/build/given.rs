//! What the user gave for the workload and the sweep: each value from a
//! flag or a preset key, flags over the preset, with where it came from.

use std::collections::BTreeMap;

use crate::error::PlanError;
use crate::plan::params::{self, param, Param, PARAMS};
use crate::plan::{Overrides, RawPreset};

/// Where a value came from, for error messages.
#[derive(Clone)]
pub(super) struct Origin {
    pub(super) flag: String,
    pub(super) key: String,
    pub(super) from_flag: bool,
}

impl Origin {
    /// A workload parameter given in `[workload]` or by its flag.
    pub(super) fn param(p: &Param, from_flag: bool) -> Self {
        Origin {
            flag: p.flag_name(),
            key: format!("workload.{}", p.key),
            from_flag,
        }
    }

    /// A sweep axis given in `[sweep]` or by its flag.
    pub(super) fn axis(p: &Param, from_flag: bool) -> Self {
        Origin {
            flag: p
                .sweep
                .as_ref()
                .map(|s| format!("--{}", s.flag))
                .unwrap_or_default(),
            key: format!("sweep.{}", p.key),
            from_flag,
        }
    }

    /// A setting outside the workload (`--repeats`, `targets`).
    pub(super) fn other(flag: &str, key: &str, from_flag: bool) -> Self {
        Origin {
            flag: flag.into(),
            key: key.into(),
            from_flag,
        }
    }

    pub(super) fn describe(&self) -> String {
        if self.from_flag {
            format!("flag {}", self.flag)
        } else {
            format!("preset key {}", self.key)
        }
    }

    pub(super) fn err(&self, message: impl Into<String>) -> PlanError {
        PlanError::Invalid {
            origin: self.describe(),
            message: message.into(),
        }
    }
}

/// The parameter named `key` in table `section` of a preset, or an error
/// that names the closest one.
pub(super) fn declared(
    key: &str,
    section: &str,
    sweepable: bool,
) -> Result<&'static Param, PlanError> {
    let known = PARAMS
        .iter()
        .filter(move |p| !sweepable || p.sweep.is_some())
        .map(|p| p.key);
    match param(key) {
        Some(p) if !sweepable || p.sweep.is_some() => Ok(p),
        Some(_) => Err(unknown_key(
            section,
            key,
            "this parameter is not a sweep axis",
            known,
        )),
        None => Err(unknown_key(section, key, "unknown key", known)),
    }
}

/// Preset key `section.key` is not one of `known`: says so (`why`), with
/// the closest known key and the list.
fn unknown_key<'k>(
    section: &str,
    key: &str,
    why: &str,
    known: impl Iterator<Item = &'k str> + Clone,
) -> PlanError {
    PlanError::Invalid {
        origin: format!("preset key {section}.{key}"),
        message: format!(
            "{why}; {}known keys: {}",
            crate::suggest::did_you_mean(key, known.clone())
                .map(|n| format!("did you mean `{n}`? "))
                .unwrap_or_default(),
            known.collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The text of a preset value (`100000`, `"100k"`, `true`).
fn text_of(value: &toml::Value, origin: &Origin) -> Result<String, PlanError> {
    match value {
        toml::Value::String(s) => Ok(s.clone()),
        toml::Value::Integer(i) => Ok(i.to_string()),
        toml::Value::Float(x) => Ok(x.to_string()),
        toml::Value::Boolean(b) => Ok(b.to_string()),
        other => Err(origin.err(format!("`{other}` is not a number, a word or true/false"))),
    }
}

/// Values given for the workload parameters and sweep axes, flags over
/// the preset, each with where it came from.
#[derive(Clone, Default)]
pub(super) struct Given {
    pub(super) values: BTreeMap<&'static str, (String, Origin)>,
    pub(super) axes: BTreeMap<&'static str, (Vec<String>, Origin)>,
}

impl Given {
    /// What the preset and the flags give: the preset's `[workload]`,
    /// `[fault]`, `[topology]` and `[link]`, the flags over them, then the
    /// sweep axes of both.
    pub(super) fn collect(raw: &RawPreset, flags: &Overrides) -> Result<Self, PlanError> {
        let mut given = Given::default();
        for (key, value) in &raw.workload {
            let p = declared(key, "workload", false)?;
            let origin = Origin::param(p, false);
            given
                .values
                .insert(p.key, (text_of(value, &origin)?, origin));
        }
        given.sections(raw)?;
        for (key, text) in &flags.workload {
            let p = declared(key, "workload", false)?;
            // A flag for one of two exclusive parameters replaces the
            // preset's other one.
            for other in p.excludes {
                if given.values.get(other).is_some_and(|(_, o)| !o.from_flag) {
                    given.values.remove(other);
                }
            }
            given
                .values
                .insert(p.key, (text.clone(), Origin::param(p, true)));
        }
        given.axes(raw, flags)?;
        Ok(given)
    }

    /// The preset's `[fault]`, `[topology]` and `[link]` sections, each
    /// key a parameter given once.
    fn sections(&mut self, raw: &RawPreset) -> Result<(), PlanError> {
        let sections = [
            ("fault", &raw.fault, &params::FAULT_KEYS[..]),
            ("topology", &raw.topology, &params::TOPOLOGY_KEYS[..]),
        ];
        for (section, table, keys) in sections {
            for (key, value) in table {
                let Some((_, name)) = keys.iter().find(|(k, _)| k == key) else {
                    let known = keys.iter().map(|(k, _)| *k);
                    return Err(unknown_key(section, key, "unknown key", known));
                };
                let p = param(name).expect("section keys name parameters");
                let origin = Origin {
                    key: format!("{section}.{key}"),
                    ..Origin::param(p, false)
                };
                if self.values.contains_key(p.key) {
                    return Err(origin.err(format!(
                        "also given as workload.{}; give it once, in [{section}]",
                        p.key
                    )));
                }
                self.values
                    .insert(p.key, (text_of(value, &origin)?, origin));
            }
        }
        if !raw.link.is_empty() {
            let p = param("link").expect("link is a parameter");
            let mut parts = Vec::new();
            for (key, value) in &raw.link {
                let origin = Origin {
                    key: format!("link.{key}"),
                    ..Origin::param(p, false)
                };
                if !params::LINK_KEYS.contains(&key.as_str()) {
                    return Err(unknown_key(
                        "link",
                        key,
                        "unknown key",
                        params::LINK_KEYS.iter().copied(),
                    ));
                }
                parts.push(format!("{key}={}", text_of(value, &origin)?));
            }
            let origin = Origin {
                key: "link".into(),
                ..Origin::param(p, false)
            };
            if self.values.contains_key(p.key) {
                return Err(origin.err("also given as workload.link; give it once, in [link]"));
            }
            self.values.insert(p.key, (parts.join(","), origin));
        }
        Ok(())
    }

    /// The sweep axes, the preset's and the flags'; a flag's axis beside
    /// the same parameter's flag is refused.
    fn axes(&mut self, raw: &RawPreset, flags: &Overrides) -> Result<(), PlanError> {
        for (key, list) in &raw.sweep {
            let p = declared(key, "sweep", true)?;
            let origin = Origin::axis(p, false);
            let toml::Value::Array(items) = list else {
                return Err(origin.err(format!(
                    "a sweep axis is a list of values, e.g. {key} = [1, 10, 100]"
                )));
            };
            let texts = items
                .iter()
                .map(|v| text_of(v, &origin))
                .collect::<Result<Vec<_>, _>>()?;
            self.axes.insert(p.key, (texts, origin));
        }
        for (key, texts) in &flags.sweep {
            let p = declared(key, "sweep", true)?;
            if self.values.get(p.key).is_some_and(|(_, o)| o.from_flag) {
                let axis = Origin::axis(p, true);
                return Err(axis.err(format!(
                "{} is given too, and the sweep's values would replace it at every point; give one of them",
                p.flag_name()
            )));
            }
            self.axes
                .insert(p.key, (texts.clone(), Origin::axis(p, true)));
        }
        Ok(())
    }

    /// The values for target `target`: its `[per_target.NAME]` keys over
    /// the preset's, each flag still over both.
    pub(super) fn for_target(
        &self,
        target: &str,
        keys: &BTreeMap<String, toml::Value>,
    ) -> Result<Self, PlanError> {
        let section = format!("per_target.{target}");
        let mut given = self.clone();
        for (key, value) in keys {
            let p = declared(key, &section, false)?;
            let origin = Origin {
                key: format!("{section}.{key}"),
                ..Origin::param(p, false)
            };
            if let Some((_, o)) = self.axes.get(p.key) {
                return Err(origin.err(format!(
                    "{key} is also swept ({}); a swept parameter is the same for every target",
                    o.describe()
                )));
            }
            if self.values.get(p.key).is_some_and(|(_, o)| o.from_flag) {
                continue;
            }
            given
                .values
                .insert(p.key, (text_of(value, &origin)?, origin));
        }
        Ok(given)
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.values.contains_key(key)
    }

    /// Where `p`'s value came from: its sweep axis when it is swept.
    pub(super) fn origin_or_axis(&self, p: &'static str) -> Origin {
        match self.axes.get(p) {
            Some((_, o)) => o.clone(),
            None => self.origin(p),
        }
    }

    pub(super) fn origin(&self, p: &'static str) -> Origin {
        match self.values.get(p) {
            Some((_, o)) => o.clone(),
            None => Origin::param(param(p).expect("declared"), false),
        }
    }
}
