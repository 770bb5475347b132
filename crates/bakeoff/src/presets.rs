//! The presets built into the binary (every file of `presets/`), found by
//! name, and the `bakeoff presets` listing.

use bakeoff_core::plan::RawPreset;

use crate::error::AppError;

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// A preset found: how to name it in messages, and its text parsed.
pub struct Found {
    /// The path given, or `presets/NAME.toml` for a built-in one.
    pub origin: String,
    /// The preset as written.
    pub raw: RawPreset,
}

/// Finds `what`: a file at that path, else a built-in preset of that name
/// (with or without `.toml`, with or without `presets/`).
pub fn find(what: &str) -> Result<Found, AppError> {
    if std::path::Path::new(what).is_file() {
        return Ok(Found {
            origin: what.to_string(),
            raw: RawPreset::load(what)?,
        });
    }
    let name = what
        .trim_start_matches("./")
        .trim_start_matches("presets/")
        .trim_end_matches(".toml");
    match EMBEDDED.iter().find(|(n, _)| *n == name) {
        Some((n, text)) => {
            let origin = format!("presets/{n}.toml");
            Ok(Found {
                raw: RawPreset::parse(text, &origin)?,
                origin,
            })
        }
        // A path that is not there: say so, as for any file.
        None if what.contains('/') || what.ends_with(".toml") => Ok(Found {
            origin: what.to_string(),
            raw: RawPreset::load(what)?,
        }),
        None => {
            let near = bakeoff_core::suggest::did_you_mean(name, EMBEDDED.iter().map(|(n, _)| *n));
            let hint = match near {
                Some(n) => format!("did you mean {n}? "),
                None => String::new(),
            };
            Err(AppError::Usage(format!(
                "no preset file `{what}` and no built-in preset of that name; {hint}`bakeoff presets` lists them"
            )))
        }
    }
}

/// Every built-in preset, parsed, in name order.
pub fn all() -> Result<Vec<(&'static str, RawPreset)>, AppError> {
    EMBEDDED
        .iter()
        .map(|(n, text)| Ok((*n, RawPreset::parse(text, &format!("presets/{n}.toml"))?)))
        .collect()
}

/// `bakeoff presets`: each experiment with its seed report, what it
/// measures, the seed's finding, and its scales.
pub fn listing() -> Result<String, AppError> {
    let mut s = String::from(
        "presets (bakeoff run NAME [--scale quick]; a path to a preset file works too):\n",
    );
    for (name, raw) in all()? {
        let report = raw
            .report
            .as_deref()
            .map(|r| format!("seed {r}"))
            .unwrap_or_else(|| "bakeoff".into());
        s.push_str(&format!(
            "\n  {name}  ({report}; scales: {})\n",
            raw.scales().join(", ")
        ));
        if let Some(m) = &raw.measures {
            s.push_str(&format!("    measures: {m}\n"));
        }
        if let Some(f) = &raw.finding {
            s.push_str(&format!("    seed found: {f}\n"));
        }
        if !raw.covers.is_empty() {
            s.push_str(&format!("    runs: {}\n", raw.covers.join(", ")));
        }
    }
    Ok(s)
}
