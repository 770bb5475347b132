//! Command-line flags. Every flag overrides the preset key of the same name;
//! units and defaults are in the help text.

use std::collections::BTreeMap;

use bakeoff_core::plan::params::PARAMS;
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches, Parser, Subcommand};

const GUIDE: &str = "\
Examples:
  bakeoff run                                 default comparison of what this machine can start
  bakeoff presets                             the experiments of the seed reports, built in
  bakeoff run 003-single-get                  one of them (a preset file's path works too)
  bakeoff run 004-peak --scale quick          the same experiment in seconds
  bakeoff run -t redis -t memcached --mix 95:5 --clients 50 --pipeline 16
  bakeoff run -t redis --sweep-clients 1,10,100 --repeats 6
  bakeoff run -t a=redis://127.0.0.1:6379 -t b=redis://127.0.0.1:6380 --repeats 6
  bakeoff run -t redis://:PASSWORD@host:6379 --rate 20000
  bakeoff report results/default-*.json --html report.html
  bakeoff compare before.json after.json

How it measures:
  closed loop (default)  each client waits for its reply; Little's law is checked per run
  open loop (--rate)     requests start on a schedule; latency counts from the intended start,
                         so a stalled server shows in the percentiles (no coordinated omission)
  every read is verified against the header bakeoff wrote into the value; operation counts are
  compared with the server's own counters; a client thread busier than 90 % is reported.

Exit codes: 0 clean, 1 some run had errors, 2 bad input or unusable target, 130 interrupted
(Ctrl-C), 143 SIGTERM, 129 SIGHUP: a signal finishes the requests in flight and writes the result.";

/// bakeoff puts storage systems side by side under the same workload:
/// throughput, latency percentiles, stability second by second, resource
/// cost, and whether every read returned what was written.
#[derive(Debug, Parser)]
#[command(
    name = "bakeoff",
    version,
    about = "Puts storage systems side by side under the same workload.",
    propagate_version = true,
    after_help = GUIDE
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an experiment: start targets, load, warm up, measure, write a result file.
    ///
    /// Without arguments: the default comparison of every target bakeoff can
    /// start on this machine. Examples:
    ///
    ///   bakeoff run presets/003-single-set.toml
    ///
    ///   bakeoff run --target redis --target memcached --mix 90:10 --clients 50 --duration 10s
    ///
    ///   bakeoff run --target redis://:secret@127.0.0.1:6379 --rate 20000
    Run(Box<RunArgs>),
    /// List the targets this build knows and what each supports.
    List,
    /// List the built-in presets: each experiment of the seed reports, what
    /// it measures, what the seed found, and its scales.
    ///
    ///   bakeoff run 004-peak --scale quick
    Presets,
    /// Render result files: a table (default), an HTML report with charts,
    /// Markdown, CSV or JSON.
    ///
    /// Several files go into one report, their runs told apart by
    /// experiment name, host or start time. Examples:
    ///
    ///   bakeoff report results/004-peak-*.json --html peak.html
    ///
    ///   bakeoff report a.json b.json --markdown > both.md
    ///
    ///   bakeoff report a.json --csv > a.csv
    Report(ReportArgs),
    /// Put two experiments side by side: each figure's change, and whether
    /// it is beyond what the repeats can tell apart.
    ///
    /// Runs are matched by target and sweep point. A change is called
    /// beyond noise when a Mann–Whitney test of the repeats gives p < 0.05,
    /// which needs 4 repeats a side at least; run each with --repeats 6 for
    /// 95 % intervals too. Example:
    ///
    ///   bakeoff compare before.json after.json
    Compare(CompareArgs),
    /// Merge the result files of every shard of one experiment (`run
    /// --shard i/N` on several machines) into one result file.
    ///
    /// Histograms are added bucket by bucket, counts and errors summed;
    /// the files must share the plan, bakeoff's version and the shard
    /// count, and hold each shard once. The merged file is an ordinary
    /// result file (report, compare and the HTML work on it) with a table
    /// of what each shard did. Example:
    ///
    ///   bakeoff merge shard-*.json -o merged.json
    Merge(MergeArgs),
    /// Write the Kubernetes manifests that run an experiment as N shards,
    /// one pod per node, started together: an Indexed Job (never retried)
    /// and a ConfigMap with the preset file. Each pod prints its result
    /// into its log, which `bakeoff merge` reads.
    ///
    /// The targets' passwords go into a Secret, and nowhere else: each URL
    /// the pods run reads its own from a variable the Job fills from the
    /// Secret (`?password_env=BAKEOFF_PASSWORD_1`, `_2`, …). Example:
    ///
    ///   bakeoff kubernetes --shards 4 --image registry.example/bakeoff:0.1.0 -- -t redis://redis.bench:6379 --clients 256 --duration 60s > job.yaml
    ///
    ///   kubectl apply -f job.yaml
    Kubernetes(Box<KubernetesArgs>),
    /// Record a live Redis's traffic into a trace that `run --replay`
    /// sends to every target.
    ///
    /// Reads the server's `MONITOR` stream (which costs the server some of
    /// its speed while it runs) for the duration or until Ctrl-C; GET,
    /// MGET, SET, SETEX, MSET, DEL and the like become bakeoff's JSONL
    /// (time, operation, key, value size), keys hashed unless --keep-keys;
    /// other commands are counted and named. Example:
    ///
    ///   bakeoff capture redis://127.0.0.1:6379 --duration 60s -o trace.jsonl
    ///
    ///   bakeoff run -t redis,lmdb --replay trace.jsonl --sweep-replay-speed 1,10
    Capture(CaptureArgs),
    /// Print the JSON Schema of result files.
    Schema,
    /// Serve an embedded engine over RESP on a loopback port until SIGTERM.
    /// bakeoff starts this itself for runs with a fault, so that it can kill
    /// and restart the engine; not meant to be run by hand.
    #[command(name = "engine-host", hide = true)]
    EngineHost(EngineHostArgs),
}

/// Arguments of `bakeoff capture`.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The Redis to record: redis://[:PASSWORD@]HOST:PORT.
    pub url: String,
    /// How long to record (e.g. 60s, 5m).
    #[arg(long, default_value = "60s")]
    pub duration: String,
    /// The trace file written (JSONL).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: String,
    /// Keep the keys as they are, rather than their FNV-1a hashes.
    #[arg(long)]
    pub keep_keys: bool,
}

/// Arguments of `bakeoff merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Every shard's result file.
    #[arg(required = true, value_name = "SHARD.json")]
    pub files: Vec<String>,
    /// The merged result file (JSON; the HTML report goes beside it).
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    pub output: String,
}

/// Arguments of the hidden `engine-host` command.
#[derive(Debug, Args)]
pub struct EngineHostArgs {
    /// Engine target name (lmdb, rocksdb, sqlite, tokyo-hash, ...).
    pub name: String,
    /// Port on 127.0.0.1 to listen on.
    #[arg(long)]
    pub port: u16,
    /// Directory of the engine's files.
    #[arg(long)]
    pub dir: String,
    /// The target's settings table, as TOML.
    #[arg(long, default_value = "")]
    pub settings: String,
}

/// Flags of `bakeoff run`.
#[derive(Debug, Args, Default, Clone)]
pub struct RunArgs {
    /// Preset: a built-in one's name (`004-peak`; `bakeoff presets` lists
    /// them) or a preset file's path (TOML). Flags override its keys.
    #[arg(value_name = "PRESET")]
    pub preset: Option<String>,

    /// The preset's scale: `full` (as written: the seed's shape, minutes)
    /// or `quick` (seconds; what the test suite runs).
    #[arg(long, value_name = "full|quick")]
    pub scale: Option<String>,

    /// Check the preset and flags and show the runs they make, without
    /// starting anything.
    #[arg(long)]
    pub dry_run: bool,

    /// Target: a name (`redis`, started by bakeoff) or a URL
    /// (`redis://[:password@]host:port`, `memcached://host:port`). A URL's
    /// `?password_env=VAR` reads its password from environment variable
    /// VAR instead (`redis://host:6379?password_env=REDIS_PASSWORD`), out
    /// of the command line. Repeatable or comma-separated. [default: every
    /// target bakeoff can start]
    #[arg(short = 't', long = "target", value_name = "NAME|URL")]
    pub targets: Vec<String>,

    /// What a store must do; the report opens with the targets that meet
    /// every requirement, ranked by what they cost (server CPU per
    /// operation, then memory per record, then disk bytes per write), and
    /// each one's figures and margins. `p99<=2ms@20k/s`: the run is an
    /// open loop at that rate, and its p99 must stay under the bound;
    /// `durable=power-cut|crash|none`: each target runs with settings it
    /// declares keep acknowledged writes through that (redis gets
    /// persistence=aof-always for a power cut), and a target with none is
    /// left out, saying why; `memory<=2GB@10M`: memory per record as
    /// measured, extrapolated linearly to that many records;
    /// `reach=network|in-process`. Repeatable (preset key `require`).
    #[arg(long, value_name = "REQUIREMENT")]
    pub require: Vec<String>,

    /// What you pay, in dollars: `cpu-hour=0.04,memory-gb-hour=0.005,disk-gb-month=0.08`
    /// (any of the three). The fit answer (--require) then gives each
    /// candidate's cost in dollars beside its CPU per operation, memory
    /// per record and disk per record: per month, for server CPU at the
    /// required rate (CPU per operation × rate, in cores, × 730 h), its
    /// memory and its data's disk size at the required record count
    /// (memory<=…@N, else the run's); and per million operations, that
    /// month over the operations it serves at that rate (without a
    /// required rate, the server CPU of a million operations alone). GB
    /// is 2³⁰ bytes, as everywhere in bakeoff. (Preset key `price`.)
    #[arg(long, value_name = "PRICES")]
    pub price: Option<String>,

    /// Workload parameters and sweep axes (declared in
    /// `bakeoff_core::plan::params`).
    #[command(flatten)]
    pub workload: WorkloadFlags,

    /// Times each point of the matrix is run. [default: 1]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub repeats: Option<String>,

    /// Also the evidence after the first screen: each run's own row
    /// (every repeat), the mean and p99.9 columns, and every table the
    /// runs have (what limited each run, durability, disk, the server's
    /// time, background work…), the notes on runs and the versions.
    #[arg(long)]
    pub details: bool,

    /// Add rounds until each named figure's 95 % interval between runs is
    /// within its bound (half-width over the median): `throughput=3%,p99=10%`
    /// (figures: throughput, mean, p50, p99, p99.9, client-cpu,
    /// server-cpu, memory, disk). At least 6 rounds (an interval's least);
    /// the report says which bounds were met, with the width reached.
    #[arg(long, value_name = "FIGURE=PERCENT,...")]
    pub precision: Option<String>,

    /// Most repeats --precision may take. [default: 30]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_repeats: Option<String>,

    /// Most time --precision may take, from the experiment's start
    /// (`10m`); the round under way finishes.
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,

    /// The order of runs: repeats run as rounds, each round every target
    /// at every point once; `random` draws each round's order from the
    /// seed (recorded in the result file), so that a drift of the machine
    /// (a neighbour, the page cache, a server's background work) spreads
    /// over every target; `fixed` keeps the targets in the order given.
    /// [default: random with several repeats or --precision; fixed with
    /// one round]
    #[arg(long, value_name = "random|fixed")]
    pub order: Option<String>,

    /// Seed of every generator; the same seed gives the same requests. [default: 1]
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub seed: Option<String>,

    /// Run shard INDEX of COUNT of the experiment (from 0: `--shard 0/3`),
    /// one per client machine: its part of the load's ids, of the clients
    /// and of the rate, with a seed of its own; `bakeoff merge` adds the
    /// shards' files up. A Kubernetes Indexed Job gives it instead with
    /// JOB_COMPLETION_INDEX and BAKEOFF_SHARDS (see `bakeoff kubernetes`).
    #[arg(long, value_name = "INDEX/COUNT", allow_hyphen_values = true)]
    pub shard: Option<String>,

    /// Start the measured run (its warm-up first) at this time, RFC 3339 in
    /// UTC (`2026-11-26T10:00:00Z`): the target is opened and loaded
    /// before, and the run waits for it. A shard ready later than the time
    /// plus --start-tolerance, or whose clock is further than that from the
    /// server's, refuses to run (exit 2).
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,

    /// How late a --start-at run may start, and how far this machine's
    /// clock may be from the server's. [default: 250ms]
    #[arg(long, value_name = "DURATION")]
    pub start_tolerance: Option<String>,

    /// A managed server setting, `TARGET.KEY=VALUE`, e.g. `redis.persistence=aof-everysec`
    /// or `memcached.memory=64mb` (see `bakeoff list`). Repeatable.
    #[arg(long = "set", value_name = "T.K=V")]
    pub settings: Vec<String>,

    /// Result file, written again after every run; checked before
    /// anything starts (room on its disk; not a pipe), and claimed for
    /// the run: a second bakeoff with the same file is refused while this
    /// one runs. [default: results/NAME-TIMESTAMP.json]
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<String>,

    /// HTML report with charts. [default: the result file's name with .html]
    #[arg(long, value_name = "FILE", conflicts_with = "no_html")]
    pub html: Option<String>,

    /// Write no HTML report.
    #[arg(long)]
    pub no_html: bool,

    /// After the run, print the result file on standard output after a
    /// line `--- bakeoff result file ---`: how a pod hands its result over
    /// in its log (`kubectl logs POD > shard-0.log`); `bakeoff merge`,
    /// `report` and `compare` read such a log as the result file.
    #[arg(long)]
    pub print_result: bool,

    /// No progress line, even on a terminal.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Flags of `bakeoff report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result file(s) written by `bakeoff run`.
    #[arg(required = true)]
    pub files: Vec<String>,
    /// Write a self-contained HTML report (inline SVG charts, works offline) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<String>,
    /// Print the report as Markdown tables.
    #[arg(long, conflicts_with_all = ["csv", "json"])]
    pub markdown: bool,
    /// Print one CSV row per run and operation kind.
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Re-emit the (validated) JSON instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Also the evidence after the first screen: each run's own row
    /// (every repeat), the mean and p99.9 columns, and every table the
    /// runs have, the notes on runs and the versions.
    #[arg(long)]
    pub details: bool,
}

/// Flags of `bakeoff compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline result file.
    pub a: String,
    /// The result file compared with it.
    pub b: String,
    /// Print Markdown instead of an aligned table.
    #[arg(long)]
    pub markdown: bool,
}

/// The workload flags of `bakeoff run`, one per declared parameter, and a
/// `--sweep-*` flag per sweep axis: built from
/// [`bakeoff_core::plan::params::PARAMS`], so that a parameter is declared
/// in one place.
#[derive(Debug, Default, Clone)]
pub struct WorkloadFlags {
    /// Values given, by parameter key (`pipeline` → `16`).
    pub values: BTreeMap<String, String>,
    /// Sweep values given, by parameter key (`clients` → `1`, `10`).
    pub sweeps: BTreeMap<String, Vec<String>>,
}

impl Args for WorkloadFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let mut cmd = cmd.next_help_heading(
            "Workload (each flag overrides the preset's [workload] key of the same name)",
        );
        for p in PARAMS {
            let mut arg = Arg::new(p.key).long(p.flag).help(p.flag_help());
            arg = match p.switch {
                Some(_) => arg.action(ArgAction::SetTrue),
                // `--duration -1s` reaches the parameter's parser, which
                // says what is wrong, instead of clap's "use '-- -1'".
                None => arg
                    .value_name(p.value_name)
                    .action(ArgAction::Set)
                    .allow_hyphen_values(true),
            };
            if let Some(c) = p.short {
                arg = arg.short(c);
            }
            for other in p.excludes {
                arg = arg.conflicts_with(other);
            }
            cmd = cmd.arg(arg);
        }
        cmd = cmd.next_help_heading(
            "Sweeps (the runs are the cartesian product of the axes; each overrides the preset's [sweep] key)",
        );
        for p in PARAMS {
            if let Some(sweep) = &p.sweep {
                cmd = cmd.arg(
                    Arg::new(sweep.flag)
                        .long(sweep.flag)
                        .help(sweep.help)
                        .value_name("LIST")
                        .value_delimiter(sweep.separator)
                        .allow_hyphen_values(true)
                        .action(ArgAction::Append),
                );
            }
        }
        cmd.next_help_heading(None)
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for WorkloadFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = WorkloadFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for p in PARAMS {
            let given = match p.switch {
                Some(value) => matches.get_flag(p.key).then(|| value.to_string()),
                None => matches.get_one::<String>(p.key).cloned(),
            };
            if let Some(v) = given {
                self.values.insert(p.key.to_string(), v);
            }
            if let Some(sweep) = &p.sweep {
                if let Some(list) = matches.get_many::<String>(sweep.flag) {
                    self.sweeps
                        .insert(p.key.to_string(), list.cloned().collect());
                }
            }
        }
        Ok(())
    }
}

/// Arguments of `bakeoff kubernetes`.
#[derive(Debug, Args)]
pub struct KubernetesArgs {
    /// Shards: pods, one per node, each running its part of the
    /// experiment.
    #[arg(long, value_name = "N")]
    pub shards: u32,
    /// The container image with bakeoff in it (built from the repository's
    /// Dockerfile and pushed where the cluster pulls from).
    #[arg(long, value_name = "IMAGE", default_value = concat!("bakeoff:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// How far ahead of now the shards start together: time enough for
    /// every pod to be scheduled, pull the image, connect and load; 5s or
    /// more.
    #[arg(long, value_name = "DURATION", default_value = "2m")]
    pub slack: String,
    /// CPU each pod requests, and is limited to (requests equal limits):
    /// cores (`2`, `1.5`) or millicores (`500m`), more than 0.
    #[arg(long, value_name = "CPU", default_value = "2")]
    pub cpu: String,
    /// Memory each pod requests, and is limited to: bytes, plain or with a
    /// suffix Ki, Mi, Gi, Ti (powers of 2) or k, M, G, T (powers of 10).
    #[arg(long, value_name = "BYTES", default_value = "2Gi")]
    pub memory: String,
    /// The Job's name: a DNS-1123 label (lowercase letters, digits and
    /// `-`, starting and ending with a letter or digit), at most 50
    /// characters; any other is refused. [default: bakeoff-EXPERIMENT,
    /// made such a label]
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The namespace of the Job, the ConfigMap and the Secret: a DNS-1123
    /// label. [default: the context's]
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// Write the manifests to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<String>,
    /// The run's preset and flags, as for `bakeoff run`, after `--`: e.g.
    /// `-- -t redis://redis.bench:6379 --clients 64 --duration 60s`.
    #[arg(last = true, required = true, value_name = "RUN ARGS")]
    pub run: Vec<String>,
}
