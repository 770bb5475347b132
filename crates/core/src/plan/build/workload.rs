//! The workload the given values make, checked against itself, against
//! its link and trace, and against the requirements it is judged by.

use std::collections::BTreeMap;

use super::given::{Given, Origin};
use super::targets::machine_cpus;
use crate::error::PlanError;
use crate::plan::params::{self, PARAMS};
use crate::plan::{
    sweep, workload, Mix, Overrides, RawPreset, RequestMode, Requirement, SweepAxis, TargetCatalog,
    Workload,
};
use crate::profile::RecordKind;
use crate::workload::OpKind;

/// The base workload: defaults, then the values given, then the checks
/// that involve more than one parameter.
pub(super) fn workload(given: &Given) -> Result<Workload, PlanError> {
    let mut w = params::defaults();
    for p in PARAMS {
        if let Some((text, origin)) = given.values.get(p.key) {
            let value = (p.parse)(text).map_err(|m| origin.err(m))?;
            p.put(&mut w, &value);
        }
    }
    one_length(&mut w, given)?;
    w.threads = w.threads.min(w.clients);
    // `auto` is the default only where it can work: a timed run long
    // enough to judge a trend over, with no fault whose moment counts
    // from the start. Elsewhere the default is a fixed warm-up.
    let too_short = w
        .duration_s
        .is_none_or(|d| d < crate::stats::STEADY_WINDOW_S as f64);
    if w.warmup_auto
        && !given.has("warmup")
        && (w.fault.is_some() || w.provoke.is_some() || too_short)
    {
        w.warmup_auto = false;
        w.warmup_s = workload::FIXED_WARMUP_S;
    }
    // A fault and background work are each asked for at a moment of the
    // run, and keep the same limits for the same reasons.
    let moments = [
        w.fault
            .as_ref()
            .map(|f| ("fault", "a fault", f.to_string(), f.to_s)),
        w.provoke
            .as_ref()
            .map(|p| ("provoke", "background work", p.to_string(), p.at_s)),
    ];
    for (key, what, text, at_s) in moments.into_iter().flatten() {
        check_moment(&w, &given.origin(key), what, &text, at_s)?;
    }
    check_durability_and_searches(&w, given)?;
    let mix_given = given.has("mix");
    let update_only = Mix {
        weights: [0, 0, 1, 0, 0, 0, 0, 0],
    };
    if w.request == RequestMode::Phases {
        // A phased request is its own script: it updates, so the mix is
        // update-only.
        if mix_given && w.mix != update_only {
            return Err(given
                .origin("mix")
                .err("a phased request (--request phases) is a fixed script; leave out the mix"));
        }
        w.mix = update_only;
    }
    if w.batch > 1 && w.record == RecordKind::Profile {
        return Err(given.origin("batch").err(
            "batched loads write kv records; profile rows load one per request (use --batch 1)",
        ));
    }
    if w.record == RecordKind::Profile && !mix_given {
        // Profile records are there to be searched.
        w.mix = Mix {
            weights: [0, 0, 0, 0, 1, 0, 0, 0],
        };
    }
    check_workload_against_itself(&w, given)?;
    if !w.value_form().is_plain() && w.record != RecordKind::Kv {
        return Err(given.origin("encoding").err(
            "client-side encodings and compression are for key-value records; drop --record profile",
        ));
    }
    if w.encoding != crate::encoding::Encoding::Raw && given.has("value_size") {
        return Err(given.origin("value_size").err(format!(
            "--encoding {} sets the value's size (the encoded array); leave out the value size",
            w.encoding.name()
        )));
    }
    Ok(w)
}

/// A run's length is given once: a duration, an operation count or a
/// count per client; a count given makes the run untimed.
fn one_length(w: &mut Workload, given: &Given) -> Result<(), PlanError> {
    for counted in ["ops", "ops_per_client"] {
        if !given.has(counted) {
            continue;
        }
        if let Some(other) = ["duration", "ops", "ops_per_client"]
            .into_iter()
            .find(|o| *o != counted && given.has(o))
        {
            return Err(given.origin(counted).err(format!(
                "give one of a duration, an operation count and a count per client, not {counted} and {other}"
            )));
        }
        w.duration_s = None;
    }
    Ok(())
}

/// The durability check (few enough writers, key-value records one per
/// request, no mix or key distribution) and the searches (which set the
/// rate, and for the peak the clients, themselves).
fn check_durability_and_searches(w: &Workload, given: &Given) -> Result<(), PlanError> {
    if w.durability {
        let origin = given.origin("durability");
        let most = crate::durability::MAX_WRITERS + 1;
        if w.clients > most {
            return Err(origin.err(format!(
                "the durability check has one writer per client, at most {most}; lower --clients"
            )));
        }
        if w.record != crate::profile::RecordKind::Kv || w.request != RequestMode::Op {
            return Err(origin.err(
                "the durability check writes key-value records, one operation per request; drop --record and --request",
            ));
        }
    }
    if w.find_peak || w.find_capacity.is_some() {
        if given.has("rate") || given.axes.contains_key("rate") {
            return Err(given.origin_or_axis("rate").err(
                "a search sets the rate itself (the peak runs closed loop, the capacity search bisects the rate): leave out the rate",
            ));
        }
        if w.find_peak && given.axes.contains_key("clients") {
            return Err(given.origin_or_axis("clients").err(
                "--find-peak chooses the clients itself (1, 2, 4, … until throughput stops rising): leave out the clients sweep",
            ));
        }
    }
    if w.durability {
        for key in ["mix", "key_distribution"] {
            if given.has(key) || given.axes.contains_key(key) {
                return Err(given.origin_or_axis(key).err(
                    "the durability check writes fresh ids, one per acknowledgement, and reads them back: it uses no mix and no key distribution; leave it out",
                ));
            }
        }
    }
    Ok(())
}

/// Something asked for at a moment of the run (`what`, written `text`,
/// at `at_s` from the measure job's start): the moment needs a timed run
/// with a fixed warm-up, before its end, and no search, whose every step
/// would have it.
fn check_moment(
    w: &Workload,
    origin: &Origin,
    what: &str,
    text: &str,
    at_s: f64,
) -> Result<(), PlanError> {
    let Some(d) = w.duration_s else {
        return Err(origin.err(format!(
            "{what} ({text}) needs a timed run; give --duration instead of --ops"
        )));
    };
    if w.warmup_auto {
        return Err(origin.err(format!(
            "the moment of {what} ({text}) counts from the run's start, and `--warmup auto` moves where the measured phase starts; give a fixed --warmup (e.g. 2s)"
        )));
    }
    if at_s >= w.warmup_s + d {
        return Err(origin.err(format!(
            "{text} is past the end of the run ({} s warm-up + {d} s measured); give an earlier moment or a longer --duration",
            w.warmup_s
        )));
    }
    if w.find_peak || w.find_capacity.is_some() {
        return Err(origin.err(format!(
            "a search makes run after run and keeps the best; {what} in each would find its own peak, not the target's: run {text} without --find-peak or --find-capacity"
        )));
    }
    Ok(())
}

/// `search` needs profile records, and profile records are only searched.
/// The checks of one point's workload that involve more than one
/// parameter, each refusal named after the parameter to change.
pub(super) fn check_workload_against_itself(w: &Workload, given: &Given) -> Result<(), PlanError> {
    if let Some(n) = w.server_cpus.filter(|&n| n as u64 > machine_cpus()) {
        return Err(given.origin("server_cpus").err(format!(
            "this machine lets bakeoff use {} CPU(s), fewer than {n}; give at most that many",
            machine_cpus()
        )));
    }
    if w.replay.is_some() && (w.durability || w.find_peak || w.find_capacity.is_some() || w.grow) {
        return Err(given.origin("replay").err(
            "a replayed trace sets the operations and their times itself; leave out --durability, --find-peak, --find-capacity and growth",
        ));
    }
    check_replay(w, given)?;
    check_link(w, given)?;
    check_mix_against_record(w, &given.origin("mix"))?;
    check_fields(w, &given.origin_or_axis("fields"))?;
    check_pipeline_against_requests(w, &given.origin_or_axis("pipeline"))
}

/// A link a request cannot cross within its timeout would fail every
/// request; one over which the load alone takes far longer than the run
/// would hold it for minutes without a word.
fn check_link(w: &Workload, given: &Given) -> Result<(), PlanError> {
    let Some(link) = &w.link else {
        return Ok(());
    };
    let rtt_s = link.rtt_ns as f64 / 1e9;
    let origin = given.origin_or_axis("link");
    if rtt_s >= w.timeout_s {
        return Err(origin.err(format!(
            "--link {link} adds a round trip of {}, and a request times out after {} (--timeout): every request would fail; raise --timeout above the round trip, or shorten it",
            crate::units::fmt_duration_s(rtt_s),
            crate::units::fmt_duration_s(w.timeout_s)
        )));
    }
    if w.load && w.replay.is_none() {
        let rows_per_trip = f64::from(w.clients.max(1)) * f64::from(w.batch.max(1));
        let load_s = w.records as f64 / rows_per_trip * rtt_s;
        let run_s = w.warmup_s + w.duration_s.unwrap_or(0.0);
        let most = (10.0 * run_s).max(60.0);
        if load_s > most {
            return Err(origin.err(format!(
                "over --link {link}, loading {} records {} at a time takes at least {} (a round trip each), more than {} for a run of {}: give --batch or more --clients, fewer --records, or --no-load to measure what the server holds",
                w.records,
                rows_per_trip,
                crate::units::fmt_duration_s(load_s),
                crate::units::fmt_duration_s(most),
                crate::units::fmt_duration_s(run_s)
            )));
        }
    }
    Ok(())
}

/// A replay takes its operations, times, rate and sizes from the trace:
/// a flag that would set them is refused rather than dropped, as is a
/// speed with no trace; the speed keeps a replay within the rate `--rate`
/// allows and the time bakeoff lets a replay take.
fn check_replay(w: &Workload, given: &Given) -> Result<(), PlanError> {
    let Some(path) = &w.replay else {
        if given.has("replay_speed") || given.axes.contains_key("replay_speed") {
            return Err(given
                .origin_or_axis("replay_speed")
                .err("a replay speed is for a trace; give --replay FILE, or leave the speed out"));
        }
        return Ok(());
    };
    for (key, what) in [
        ("mix", "operations"),
        ("rate", "rate"),
        ("duration", "length"),
        ("ops", "operation count"),
        ("ops_per_client", "operation count"),
        ("value_size", "value sizes"),
        ("records", "records"),
    ] {
        if given.has(key) || given.axes.contains_key(key) {
            return Err(given.origin_or_axis(key).err(format!(
                "a replayed trace sets its own {what}; leave this out (--replay-speed runs it faster or slower)"
            )));
        }
    }
    // The trace was read when --replay was parsed; a failure was said
    // there.
    let Ok(trace) = crate::replay::load(path) else {
        return Ok(());
    };
    let span_s = trace.span_ns() as f64 / 1e9;
    // The speed, where one was given; else the trace itself.
    let origin = if given.has("replay_speed") || given.axes.contains_key("replay_speed") {
        given.origin_or_axis("replay_speed")
    } else {
        given.origin("replay")
    };
    let speed = w.replay_speed;
    if span_s / speed > crate::replay::MAX_REPLAY_S {
        return Err(origin.err(format!(
            "the trace spans {}; at {speed}x its replay would take {}, past bakeoff's limit of {}: give --replay-speed {} or more, or replay a part of it",
            crate::units::fmt_duration_s(span_s),
            crate::units::fmt_duration_s(span_s / speed),
            crate::units::fmt_duration_s(crate::replay::MAX_REPLAY_S),
            (span_s / crate::replay::MAX_REPLAY_S).ceil()
        )));
    }
    let rate = trace.ops.len() as f64 / span_s.max(1e-3) * speed;
    if rate > 1e9 {
        return Err(origin.err(format!(
            "at {speed}x the trace asks for {rate:.3e} ops/s, more than a request a nanosecond, the most an open loop can schedule (as --rate); give a lower --replay-speed"
        )));
    }
    Ok(())
}

/// A record of several fields is a fixed-size value cut into equal fields
/// of a header each, written whole by every writer bakeoff has.
fn check_fields(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    if w.fields <= 1 {
        return Ok(());
    }
    let n = w.fields as usize;
    let size = match w.value_size {
        crate::workload::ValueSizes::Fixed(size) => size,
        _ => {
            return Err(origin.err(format!(
                "{n} fields need one value size to cut into equal fields; give --value-size one size (e.g. {})",
                n * 100
            )))
        }
    };
    if !size.is_multiple_of(n) || size / n <= crate::value::HEADER_LEN {
        return Err(origin.err(format!(
            "a value of {size} bytes does not cut into {n} equal fields of more than {} bytes (each carries its own header); give --value-size a multiple of {n} of at least {}",
            crate::value::HEADER_LEN,
            n * (crate::value::HEADER_LEN + 1)
        )));
    }
    let other = if w.replay.is_some() {
        Some("a replayed trace, whose values have the trace's sizes")
    } else if w.durability {
        Some("the durability check, whose values carry its run's mark")
    } else if w.record == RecordKind::Profile {
        Some("profile records")
    } else if !w.value_form().is_plain() {
        Some("client-encoded values")
    } else if w.batch > 1 {
        Some("a batched load")
    } else if w.topology.nodes() > 1 {
        Some("several servers (each node's request counts do not yet tell an update's read from its write)")
    } else {
        None
    };
    match other {
        Some(what) => Err(origin.err(format!(
            "records of {n} fields do not go with {what}; leave out --fields or that"
        ))),
        None => Ok(()),
    }
}

/// Pipelining is for key-value operations on kept connections: only they
/// travel through the wire codecs that pipeline, and the rest would
/// ignore it.
fn check_pipeline_against_requests(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    if w.pipeline <= 1 {
        return Ok(());
    }
    let unpipelined = if w.mix.weights[OpKind::Search as usize] > 0 {
        "searches are"
    } else if w.record == RecordKind::Profile {
        "profile records are"
    } else if w.request != RequestMode::Op {
        "requests on a connection of their own are"
    } else {
        return Ok(());
    };
    Err(origin.err(format!(
        "a pipeline of {}: {unpipelined} not pipelined, only key-value operations on kv; use --pipeline 1",
        w.pipeline
    )))
}

fn check_mix_against_record(w: &Workload, origin: &Origin) -> Result<(), PlanError> {
    let search = OpKind::Search as usize;
    if w.record == RecordKind::Kv && w.mix.weights[search] > 0 {
        return Err(origin.err(
            "`search` needs the profile table: set --record profile (workload.record = \"profile\")",
        ));
    }
    if w.record == RecordKind::Profile
        && w.mix
            .weights
            .iter()
            .enumerate()
            .any(|(i, n)| *n > 0 && i != search)
    {
        return Err(origin
            .err("profile records are only searched here; use a mix of 0:0:0:0:1 (search only)"));
    }
    Ok(())
}

/// The base workloads of the targets whose workload differs
/// (`[per_target.NAME]`), by target name, each checked at every point.
pub(super) fn per_target(
    raw: &RawPreset,
    given: &Given,
    workload: &Workload,
    sweep: &[SweepAxis],
    requirements: &[Requirement],
    catalog: &dyn TargetCatalog,
) -> Result<BTreeMap<String, Workload>, PlanError> {
    let mut per_target = BTreeMap::new();
    for (name, keys) in &raw.per_target {
        if catalog.capabilities(name).is_none() {
            return Err(PlanError::Invalid {
                origin: format!("preset key per_target.{name}"),
                message: format!(
                    "unknown target `{name}`; known targets: {}",
                    catalog.names().join(", ")
                ),
            });
        }
        let given = given.for_target(name, keys)?;
        let w = at_required_rate(self::workload(&given)?, requirements)?;
        if (w.grow, w.find_peak, &w.find_capacity)
            != (workload.grow, workload.find_peak, &workload.find_capacity)
        {
            return Err(PlanError::Invalid {
                origin: format!("preset key per_target.{name}"),
                message: "growth and searches shape the whole experiment; give them in [workload], for every target".into(),
            });
        }
        for p in &sweep::expand(&w, sweep) {
            check_workload_against_itself(&p.workload, &given)?;
        }
        per_target.insert(name.clone(), w);
    }
    Ok(per_target)
}

/// The requirements: `--require` flags, else the preset's `require`.
pub(super) fn requirements(
    raw: &RawPreset,
    flags: &Overrides,
) -> Result<Vec<Requirement>, PlanError> {
    let (texts, origin) = if flags.require.is_empty() {
        (&raw.require, Origin::other("--require", "require", false))
    } else {
        (&flags.require, Origin::other("--require", "require", true))
    };
    texts
        .iter()
        .map(|t| Requirement::parse(t).map_err(|m| origin.err(m)))
        .collect()
}

/// `w` with the rate a latency requirement holds it at: an open loop, its
/// latency counted from each request's intended start.
pub(super) fn at_required_rate(
    mut w: Workload,
    requirements: &[Requirement],
) -> Result<Workload, PlanError> {
    let origin = Origin::other("--require", "require", true);
    for r in requirements {
        if let Requirement::Latency { rate_per_s, .. } = r {
            if w.replay.is_some() {
                return Err(origin.err(format!(
                    "`{r}` is judged at {rate_per_s:.0}/s, and a replay runs at its trace's own rate; leave out --replay or the latency requirement"
                )));
            }
            if w.rate.is_some_and(|x| x != *rate_per_s) {
                return Err(origin.err(format!(
                    "`{r}` runs at {rate_per_s:.0}/s, and --rate asks for {:.0}/s; leave --rate out",
                    w.rate.unwrap_or(0.0)
                )));
            }
            if w.find_peak || w.find_capacity.is_some() {
                return Err(origin.err(format!(
                    "`{r}` is answered at its rate, not by a search; leave out --find-peak and --find-capacity"
                )));
            }
            w.rate = Some(*rate_per_s);
        }
    }
    Ok(w)
}
