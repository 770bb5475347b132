//! Preset files: any text read as a preset (`RawPreset::parse`), then built
//! into a plan at each of its scales (`Plan::build` against the driver
//! registry), as `bakeoff run PRESET [--scale S]` does.
//!
//! Input: the preset's text.
#![no_main]

use bakeoff_core::plan::{Overrides, Plan, RawPreset};
use bakeoff_drivers::registry::Registry;
use bakeoff_fuzz::check_plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A preset file is read as UTF-8 (`read_to_string`).
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let raw = match RawPreset::parse(text, "fuzz.toml") {
        Ok(raw) => raw,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = (
        raw.scales(),
        raw.clone().at_scale("no-such-scale", "fuzz.toml"),
    );
    for scale in raw.scales().into_iter().take(3) {
        let flags = Overrides {
            scale: Some(scale),
            ..Overrides::default()
        };
        match Plan::build(Some(("fuzz.toml", raw.clone())), &flags, &Registry) {
            Ok(plan) => check_plan(&plan),
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
