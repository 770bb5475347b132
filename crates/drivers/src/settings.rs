//! Each target's settings, declared once as a list of [`Setting`]s: name,
//! type, default and help. From that one declaration come `bakeoff list`,
//! the checks of `[servers.NAME]` preset tables and `--set NAME.KEY=VALUE`
//! (unknown keys answered with "did you mean"), the defaults, and the typed
//! reading of a table ([`Settings`]).

/// What a setting's value is; decides how it is read and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A byte size: `64mb`, `1gb`, or a number of bytes.
    Bytes,
    /// A whole number above 0.
    Count,
    /// A whole number; -1 leaves the choice to the engine.
    Integer,
    /// A TCP port on 127.0.0.1.
    Port,
    /// `true` or `false`.
    Flag,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// Comma-separated words, each one of these.
    Words(&'static [&'static str]),
    /// A path.
    Path,
}

impl Kind {
    /// How the type reads in `bakeoff list`.
    pub fn describe(self) -> String {
        match self {
            Kind::Bytes => "size".into(),
            Kind::Count => "count".into(),
            Kind::Integer => "integer".into(),
            Kind::Port => "port".into(),
            Kind::Flag => "true|false".into(),
            Kind::Choice(c) => c.join("|"),
            Kind::Words(w) => format!("list of {}", w.join(",")),
            Kind::Path => "path".into(),
        }
    }
}

/// One setting of a target.
#[derive(Clone, Copy, Debug)]
pub struct Setting {
    /// Key in `[servers.NAME]` and in `--set NAME.KEY=VALUE`.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// The value used when it is not set, as it would be written; `None`
    /// leaves it to the server or engine.
    pub default: Option<&'static str>,
    /// What it does, for `bakeoff list`.
    pub help: &'static str,
}

impl Setting {
    /// One line of `bakeoff list`: name, type, default, help.
    pub fn describe(&self) -> String {
        let default = match self.default {
            Some("") => " (default: empty)".to_string(),
            Some(d) => format!(" (default: {d})"),
            None => String::new(),
        };
        format!(
            "{} = {}{default}: {}",
            self.name,
            self.kind.describe(),
            self.help
        )
    }
}

/// Checks that the fixed port `port` of a managed server (the setting
/// `servers.{section}.port`), if one is set, is free on 127.0.0.1.
pub fn fixed_port_free(section: &str, port: Option<u16>) -> Result<(), TargetError> {
    match port {
        Some(p) if !bakeoff_servers::port_is_free(p) => Err(TargetError::Server(format!(
            "port {p} (servers.{section}.port) on 127.0.0.1 is already in use; free it, or remove the setting so bakeoff picks a free port"
        ))),
        _ => Ok(()),
    }
}

/// The settings every managed server takes: a fixed port.
pub const PORT: Setting = Setting {
    name: "port",
    kind: Kind::Port,
    default: None,
    help: "fixed port on 127.0.0.1 (default: a free one)",
};

/// The setting of every in-process engine: where its files go.
pub const DIR: Setting = Setting {
    name: "dir",
    kind: Kind::Path,
    default: None,
    help:
        "directory for the engine's files, kept after the run (default: a temporary one, removed)",
};

/// One line of a target's durability declaration: while `setting` has
/// `value`, acknowledged writes survive at most `class`.
#[derive(Clone, Copy, Debug)]
pub struct DurableRule {
    /// A declared setting's name.
    pub setting: &'static str,
    /// The value the line is about, as written in `[servers.NAME]`; `""`
    /// when the setting is left to the target, `"*"` any value the lines
    /// before it for the same setting do not name.
    pub value: &'static str,
    /// What acknowledged writes survive at most under that value.
    pub class: DurableTo,
    /// The line holds only while another setting has this value
    /// (`sync_binlog` matters only with `binlog = true`).
    pub when: Option<(&'static str, &'static str)>,
}

/// A line of a durability declaration (see [`DurableRule`]).
pub const fn durable(setting: &'static str, value: &'static str, class: DurableTo) -> DurableRule {
    DurableRule {
        setting,
        value,
        class,
        when: None,
    }
}

/// What a target's settings promise acknowledged writes survive, declared
/// once beside those settings: the most the target can promise whatever
/// they say, and what each value of the settings that decide it allows.
/// A run's class is the least of the ceiling and every line that holds.
#[derive(Clone, Copy, Debug)]
pub struct Durability {
    /// The most it promises whatever its settings (memcached: memory only).
    pub ceiling: DurableTo,
    /// What each value of a setting allows.
    pub rules: &'static [DurableRule],
}

impl Durability {
    /// A target whose writes live in its memory whatever its settings.
    pub const MEMORY_ONLY: Durability = Durability {
        ceiling: DurableTo::MemoryOnly,
        rules: &[],
    };

    /// The class of a run whose settings are `values` (every declared
    /// setting, as [`declared_values`] gives them).
    pub fn of(&self, values: &[DeclaredValue]) -> DurableTo {
        let value_of = |name: &str| {
            values
                .iter()
                .find(|v| v.name == name)
                .and_then(|v| v.value.as_deref())
                .unwrap_or("")
        };
        let mut class = self.ceiling;
        let mut decided: Vec<&str> = Vec::new();
        for r in self.rules {
            if decided.contains(&r.setting) {
                continue;
            }
            if r.when.is_some_and(|(other, v)| value_of(other) != v) {
                continue;
            }
            let value = value_of(r.setting);
            if r.value == value || (r.value == "*" && !value.is_empty()) {
                class = class.min(r.class);
                decided.push(r.setting);
            }
        }
        class
    }

    /// The settings, besides those `given`, under which a run promises at
    /// least `class`: none when `given` (over the defaults) does already,
    /// else the first declared value that reaches it (with the setting it
    /// holds under), in the declaration's order; why not, when none does.
    pub fn settings_for(
        &self,
        declared: &'static [Setting],
        given: &BTreeMap<String, String>,
        class: DurableTo,
    ) -> Result<BTreeMap<String, String>, String> {
        let class_with = |extra: &BTreeMap<String, String>| {
            let table: toml::Table = given
                .iter()
                .chain(extra)
                .map(|(k, v)| (k.clone(), toml::Value::String(v.clone())))
                .collect();
            self.of(&declared_values(declared, Some(&table)))
        };
        if class_with(&BTreeMap::new()) >= class {
            return Ok(BTreeMap::new());
        }
        if self.ceiling < class {
            return Err(format!(
                "it keeps writes {} whatever its settings",
                match self.ceiling {
                    DurableTo::MemoryOnly => "in memory only",
                    DurableTo::ProcessCrash => "through a process crash, not a power cut",
                    DurableTo::PowerCut => "through a power cut",
                }
            ));
        }
        for r in self.rules.iter().filter(|r| {
            r.class >= class && !matches!(r.value, "" | "*") && !given.contains_key(r.setting)
        }) {
            let mut extra = BTreeMap::from([(r.setting.to_string(), r.value.to_string())]);
            if let Some((other, v)) = r.when {
                extra.insert(other.to_string(), v.to_string());
            }
            if class_with(&extra) >= class {
                return Ok(extra);
            }
        }
        Err(format!(
            "none of its settings (with those given) promises writes survive a {class}"
        ))
    }

    /// For `bakeoff list`: what each value allows, and the class under
    /// the defaults.
    pub fn describe(&self, declared: &'static [Setting]) -> String {
        let defaults = declared_values(declared, None);
        let mut lines = vec![format!(
            "durable to: {} with the defaults",
            self.of(&defaults)
        )];
        for class in DurableTo::ALL {
            let values: Vec<String> = self
                .rules
                .iter()
                .filter(|r| r.class == class)
                .map(|r| {
                    let value = match r.value {
                        "" => "left to the target".to_string(),
                        "*" => "any other".to_string(),
                        v => v.to_string(),
                    };
                    let when = r
                        .when
                        .map(|(k, v)| format!(" with {k}={v}"))
                        .unwrap_or_default();
                    format!("{}={value}{when}", r.setting)
                })
                .collect();
            if !values.is_empty() && class <= self.ceiling {
                lines.push(format!("  {}: {}", class, values.join(", ")));
            }
        }
        if self.rules.is_empty() {
            lines[0] = format!("durable to: {} (whatever its settings)", self.ceiling);
        }
        lines.join("\n")
    }
}

use bakeoff_core::durability::DurableTo;
use bakeoff_core::error::TargetError;
pub use bakeoff_core::suggest::did_you_mean;
use std::collections::BTreeMap;
use std::path::Path;

/// A declared setting as a run uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredValue {
    /// Its name.
    pub name: &'static str,
    /// Its value: as set, else its default; `None` when left to the target.
    pub value: Option<String>,
    /// Whether the preset or `--set` gave it.
    pub set: bool,
}

/// Every setting of `declared` as a run with `table` uses it, in the
/// declaration's order: what the dry run shows and the result file records.
pub fn declared_values(
    declared: &'static [Setting],
    table: Option<&toml::Table>,
) -> Vec<DeclaredValue> {
    declared
        .iter()
        .map(|d| {
            let given = table.and_then(|t| t.get(d.name)).map(|v| match v {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
            DeclaredValue {
                name: d.name,
                set: given.is_some(),
                value: given.or_else(|| d.default.map(str::to_string)),
            }
        })
        .collect()
}

/// A settings table being read against its declaration. Every key of the
/// table must be declared (a misspelt key is an error, with a suggestion),
/// every value must be of its declared type, and a key left unset takes
/// its declared default.
pub struct Settings<'a> {
    table: Option<&'a toml::Table>,
    declared: &'static [Setting],
}

impl<'a> Settings<'a> {
    /// Reads `table` (or none) against `declared`. Fails on a key that is
    /// not declared.
    pub fn new(
        table: Option<&'a toml::Table>,
        declared: &'static [Setting],
    ) -> Result<Self, TargetError> {
        if let Some(t) = table {
            for k in t.keys() {
                if !declared.iter().any(|s| s.name == k) {
                    let hint = did_you_mean(k, declared.iter().map(|s| s.name))
                        .map(|n| format!("did you mean `{n}`? "))
                        .unwrap_or_default();
                    let known: Vec<&str> = declared.iter().map(|s| s.name).collect();
                    return Err(TargetError::Settings(format!(
                        "unknown setting `{k}`; {hint}known settings: {} (see `bakeoff list`)",
                        known.join(", ")
                    )));
                }
            }
        }
        Ok(Self { table, declared })
    }

    /// The text of `key`: as set, else its declared default; `None` when
    /// neither. The key must be declared with `kind`'s type.
    fn raw(&self, key: &str, kind: fn(Kind) -> bool) -> Result<Option<String>, TargetError> {
        let Some(decl) = self.declared.iter().find(|s| s.name == key) else {
            return Err(TargetError::Settings(format!(
                "setting `{key}` is read but not declared (a bug in bakeoff)"
            )));
        };
        if !kind(decl.kind) {
            return Err(TargetError::Settings(format!(
                "setting `{key}` is read as another type than declared (a bug in bakeoff)"
            )));
        }
        match self.table.and_then(|t| t.get(key)) {
            None => Ok(decl.default.map(str::to_string)),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(toml::Value::Integer(i)) => Ok(Some(i.to_string())),
            Some(toml::Value::Boolean(b)) => Ok(Some(b.to_string())),
            Some(v) => Err(TargetError::Settings(format!(
                "`{key}` must be a string or a number, not {}",
                v.type_str()
            ))),
        }
    }

    fn declared(&self, key: &str) -> Option<&'static Setting> {
        self.declared.iter().find(|s| s.name == key)
    }

    /// A byte size.
    pub fn bytes(&self, key: &str) -> Result<Option<u64>, TargetError> {
        self.raw(key, |k| k == Kind::Bytes)?
            .map(|t| {
                bakeoff_core::units::parse_bytes(&t)
                    .map_err(|m| TargetError::Settings(format!("`{key}`: {m}")))
            })
            .transpose()
    }

    /// A whole number above 0.
    pub fn count(&self, key: &str) -> Result<Option<u64>, TargetError> {
        match self.raw(key, |k| k == Kind::Count)? {
            None => Ok(None),
            Some(t) => match t.parse::<u64>() {
                Ok(0) | Err(_) => Err(TargetError::Settings(format!(
                    "`{key}` must be a whole number above 0, not `{t}`"
                ))),
                Ok(n) => Ok(Some(n)),
            },
        }
    }

    /// A whole number.
    pub fn integer(&self, key: &str) -> Result<Option<i64>, TargetError> {
        match self.raw(key, |k| k == Kind::Integer)? {
            None => Ok(None),
            Some(t) => t.parse::<i64>().map(Some).map_err(|_| {
                TargetError::Settings(format!("`{key}` must be a whole number, not `{t}`"))
            }),
        }
    }

    /// A TCP port.
    pub fn port(&self, key: &str) -> Result<Option<u16>, TargetError> {
        match self.raw(key, |k| k == Kind::Port)? {
            None => Ok(None),
            Some(t) => match t.parse::<u16>() {
                Ok(0) | Err(_) => Err(TargetError::Settings(format!(
                    "`{key}` = {t} is not a port number"
                ))),
                Ok(p) => Ok(Some(p)),
            },
        }
    }

    /// `true` or `false`.
    pub fn flag(&self, key: &str) -> Result<Option<bool>, TargetError> {
        match self.raw(key, |k| k == Kind::Flag)?.as_deref() {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(other) => Err(TargetError::Settings(format!(
                "`{key}` must be true or false, not `{other}`"
            ))),
        }
    }

    /// One of the declared words.
    pub fn choice(&self, key: &str) -> Result<Option<String>, TargetError> {
        let v = self.raw(key, |k| matches!(k, Kind::Choice(_)))?;
        let Some(Setting {
            kind: Kind::Choice(allowed),
            ..
        }) = self.declared(key)
        else {
            return Ok(v);
        };
        match v {
            Some(v) if !allowed.contains(&v.as_str()) => {
                let hint = did_you_mean(&v, allowed.iter().copied())
                    .map(|n| format!("; did you mean `{n}`?"))
                    .unwrap_or_default();
                Err(TargetError::Settings(format!(
                    "`{key}` = \"{v}\" is not one of: {}{hint}",
                    allowed.join(", ")
                )))
            }
            v => Ok(v),
        }
    }

    /// Comma-separated declared words (empty when unset).
    pub fn words(&self, key: &str) -> Result<Vec<String>, TargetError> {
        let v = self.raw(key, |k| matches!(k, Kind::Words(_)))?;
        let allowed = match self.declared(key) {
            Some(Setting {
                kind: Kind::Words(w),
                ..
            }) => *w,
            _ => &[],
        };
        let words: Vec<String> = v
            .unwrap_or_default()
            .split(',')
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty())
            .collect();
        if let Some(w) = words.iter().find(|w| !allowed.contains(&w.as_str())) {
            return Err(TargetError::Settings(format!(
                "`{key}`: unknown option `{w}`; use {}",
                allowed.join(", ")
            )));
        }
        Ok(words)
    }

    /// A path.
    pub fn path(&self, key: &str) -> Result<Option<String>, TargetError> {
        let path = self.raw(key, |k| k == Kind::Path)?;
        if let Some(p) = &path {
            usable_dir(Path::new(p))
                .map_err(|why| TargetError::Settings(format!("`{key}` = {p}: {why}")))?;
        }
        Ok(path)
    }
}

/// Whether bakeoff could make and use directory `dir`: it is one, or its
/// nearest existing ancestor is a directory this process can make one
/// in. Nothing is left behind: this runs while the plan is checked,
/// before anything starts (a dry run included).
fn usable_dir(dir: &Path) -> Result<(), String> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if !m.is_dir() => return Err(format!("{} is not a directory", at.display())),
            Ok(_) => break,
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                match at.parent() {
                    Some(p) if !p.as_os_str().is_empty() => at = p,
                    _ => return Ok(()), // relative: made in the current directory
                }
            }
            Err(e) => return Err(format!("{} cannot be used: {e}", at.display())),
        }
    }
    // Tried, not judged from the mode bits: root passes those checks
    // where the file system still refuses (/proc, a read-only mount).
    tempfile::Builder::new()
        .prefix(".bakeoff-probe-")
        .tempdir_in(at)
        .map(drop)
        .map_err(|e| {
            format!(
                "nothing can be made in {} ({e}); choose a directory bakeoff may write in",
                at.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that cannot be made or written is named up front.
    #[test]
    fn unusable_directories_are_named() {
        assert!(usable_dir(Path::new("/tmp/bakeoff-no/such/dir")).is_ok());
        let e = usable_dir(Path::new("/proc/nope/x")).unwrap_err();
        assert!(e.contains("/proc"), "{e}");
        let e = usable_dir(Path::new("/etc/hostname/x")).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
    }

    const DECL: &[Setting] = &[
        Setting {
            name: "maxmemory",
            kind: Kind::Bytes,
            default: Some("0"),
            help: "h",
        },
        Setting {
            name: "persistence",
            kind: Kind::Choice(&["none", "aof-always"]),
            default: Some("none"),
            help: "h",
        },
        PORT,
    ];

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn a_misspelt_key_is_answered_with_the_closest_one() {
        let t = table("maxmemroy = \"1gb\"");
        let e = Settings::new(Some(&t), DECL).err().unwrap().to_string();
        assert!(e.contains("unknown setting `maxmemroy`"), "{e}");
        assert!(e.contains("did you mean `maxmemory`?"), "{e}");
        let t = table("zzz = 1");
        let e = Settings::new(Some(&t), DECL).err().unwrap().to_string();
        assert!(!e.contains("did you mean"), "{e}");
    }

    #[test]
    fn defaults_and_values_come_from_the_declaration() {
        let s = Settings::new(None, DECL).unwrap();
        assert_eq!(s.bytes("maxmemory").unwrap(), Some(0));
        assert_eq!(s.choice("persistence").unwrap().as_deref(), Some("none"));
        assert_eq!(s.port("port").unwrap(), None);
        let t = table("maxmemory = \"1kb\"\npersistence = \"aof-alway\"");
        let s = Settings::new(Some(&t), DECL).unwrap();
        assert_eq!(s.bytes("maxmemory").unwrap(), Some(1024));
        let e = s.choice("persistence").unwrap_err().to_string();
        assert!(e.contains("did you mean `aof-always`?"), "{e}");
        // Reading an undeclared key, or as the wrong type, is a bug.
        assert!(s.bytes("persistence").is_err());
        assert!(s.bytes("nope").is_err());
    }

    #[test]
    fn listing_shows_type_default_and_help() {
        assert_eq!(
            DECL[1].describe(),
            "persistence = none|aof-always (default: none): h"
        );
        assert_eq!(
            did_you_mean("treads", ["threads", "port"].into_iter()),
            Some("threads")
        );
    }
}
