//! Typed reading of a `[servers.NAME]` table, with errors that name the key.

/// A settings table being read; every key must be consumed, so a misspelt
/// key is an error rather than silently ignored.
pub struct Settings<'a> {
    table: Option<&'a toml::Table>,
    seen: Vec<&'static str>,
}

impl<'a> Settings<'a> {
    /// Wraps a table (or none).
    pub fn new(table: Option<&'a toml::Table>) -> Self {
        Self {
            table,
            seen: Vec::new(),
        }
    }

    fn raw(&mut self, key: &'static str) -> Option<&'a toml::Value> {
        self.seen.push(key);
        self.table.and_then(|t| t.get(key))
    }

    /// A string or number, as text.
    pub fn text(&mut self, key: &'static str) -> Result<Option<String>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.clone())),
            Some(toml::Value::Integer(i)) => Ok(Some(i.to_string())),
            Some(v) => Err(format!(
                "`{key}` must be a string or a number, not {}",
                v.type_str()
            )),
        }
    }

    /// One of `allowed`.
    pub fn choice(
        &mut self,
        key: &'static str,
        allowed: &[&str],
    ) -> Result<Option<String>, String> {
        match self.text(key)? {
            Some(v) if !allowed.contains(&v.as_str()) => Err(format!(
                "`{key}` = \"{v}\" is not one of: {}",
                allowed.join(", ")
            )),
            v => Ok(v),
        }
    }

    /// A byte size (`64mb`).
    pub fn bytes(&mut self, key: &'static str) -> Result<Option<u64>, String> {
        self.text(key)?
            .map(|t| bakeoff_core::units::parse_bytes(&t).map_err(|m| format!("`{key}`: {m}")))
            .transpose()
    }

    /// A positive integer.
    pub fn positive(&mut self, key: &'static str) -> Result<Option<u64>, String> {
        match self.text(key)? {
            None => Ok(None),
            Some(t) => match t.parse::<u64>() {
                Ok(0) | Err(_) => Err(format!("`{key}` must be a whole number above 0, not `{t}`")),
                Ok(n) => Ok(Some(n)),
            },
        }
    }

    /// A TCP port.
    pub fn port(&mut self, key: &'static str) -> Result<Option<u16>, String> {
        match self.positive(key)? {
            None => Ok(None),
            Some(p) => u16::try_from(p)
                .map(Some)
                .map_err(|_| format!("`{key}` = {p} is not a port number")),
        }
    }

    /// Fails on keys nobody asked for.
    pub fn finish(self, known: &str) -> Result<(), String> {
        if let Some(t) = self.table {
            if let Some(k) = t.keys().find(|k| !self.seen.contains(&k.as_str())) {
                return Err(format!("unknown setting `{k}`; known settings: {known}"));
            }
        }
        Ok(())
    }
}
