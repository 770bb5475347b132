//! The plan of a `run`: its preset and flags, validated against every
//! parameter and target.

use bakeoff_core::plan::{Environment, Overrides, Plan, Shard};
use bakeoff_drivers::registry::Registry;

use crate::cli::RunArgs;
use crate::error::AppError;

/// Turns `run` flags into plan overrides.
pub fn overrides(args: &RunArgs) -> Result<Overrides, AppError> {
    let mut server_settings = Vec::new();
    for item in &args.settings {
        let parsed = item
            .split_once('=')
            .and_then(|(tk, v)| tk.split_once('.').map(|(t, k)| (t, k, v)));
        match parsed {
            Some((t, k, v)) if !t.is_empty() && !k.is_empty() => server_settings.push((t.into(), k.into(), v.into())),
            _ => {
                return Err(AppError::Usage(format!(
                    "flag --set: `{item}` is not TARGET.KEY=VALUE; write e.g. --set redis.persistence=aof-everysec"
                )))
            }
        }
    }
    let shard = match &args.shard {
        Some(text) => {
            Some(Shard::parse(text).map_err(|m| AppError::Usage(format!("flag --shard: {m}")))?)
        }
        None => Shard::from_env(|k| std::env::var(k).ok())
            .map_err(|m| AppError::Usage(format!("environment: {m}")))?,
    };
    Ok(Overrides {
        shard,
        start_at: args.start_at.clone(),
        start_tolerance: args.start_tolerance.clone(),
        require: args.require.clone(),
        price: args.price.clone(),
        targets: args.targets.clone(),
        repeats: args.repeats.clone(),
        order: args.order.clone(),
        precision: args.precision.clone(),
        max_repeats: args.max_repeats.clone(),
        max_time: args.max_time.clone(),
        seed: args.seed.clone(),
        scale: args.scale.clone(),
        workload: args.workload.values.clone(),
        sweep: args.workload.sweeps.clone(),
        server_settings,
        // A target URL's `password_env=NAME` reads the process's variable.
        env: Environment::of(|k| std::env::var(k).ok()),
    })
}

/// Builds the validated plan from a preset and flags.
pub fn plan(args: &RunArgs) -> Result<Plan, AppError> {
    let flags = overrides(args)?;
    Ok(
        // Without a preset or a target, the default comparison: its
        // preset's rounds and lengths.
        match args
            .preset
            .as_deref()
            .or(args.targets.is_empty().then_some("default"))
            .map(crate::presets::find)
            .transpose()?
        {
            Some(f) => Plan::build(Some((f.origin.as_str(), f.raw)), &flags, &Registry)?,
            None => Plan::build(None, &flags, &Registry)?,
        },
    )
}
