//! Command-line flags. Every flag overrides the preset key of the same name;
//! units and defaults are in the help text.

use clap::{Args, Parser, Subcommand};

const GUIDE: &str = "\
Examples:
  bakeoff run                                 default comparison of what this machine can start
  bakeoff run presets/003-single-get.toml     one experiment of the seed reports
  bakeoff run -t redis -t memcached --mix 95:5 --clients 50 --pipeline 16
  bakeoff run -t redis --sweep-clients 1,10,100 --repeats 3
  bakeoff run -t redis://:PASSWORD@host:6379 --rate 20000
  bakeoff report results/default-*.json --html report.html
  bakeoff compare before.json after.json

How it measures:
  closed loop (default)  each client waits for its reply; Little's law is checked per run
  open loop (--rate)     requests start on a schedule; latency counts from the intended start,
                         so a stalled server shows in the percentiles (no coordinated omission)
  every read is verified against the header bakeoff wrote into the value; operation counts are
  compared with the server's own counters; a client thread busier than 90 % is reported.

Exit codes: 0 clean, 1 some run had errors, 2 bad input or unusable target, 130 interrupted.";

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
    /// it is larger than the run-to-run spread of the repeats.
    ///
    /// Runs are matched by target and sweep point. Run the experiments with
    /// --repeats 3 or more so the spread is known. Example:
    ///
    ///   bakeoff compare before.json after.json
    Compare(CompareArgs),
    /// Print the JSON Schema of result files.
    Schema,
}

/// Flags of `bakeoff run`.
#[derive(Debug, Args, Default)]
pub struct RunArgs {
    /// Preset file (TOML); flags override its keys.
    pub preset: Option<String>,

    /// Check the preset and flags and show the runs they make, without
    /// starting anything.
    #[arg(long)]
    pub dry_run: bool,

    /// Target: a name (`redis`, started by bakeoff) or a URL
    /// (`redis://[:password@]host:port`, `memcached://host:port`).
    /// Repeatable or comma-separated. [default: every target bakeoff can start]
    #[arg(short = 't', long = "target", value_name = "NAME|URL")]
    pub targets: Vec<String>,

    /// Records loaded before measuring (keys bk:000000000000 …). Suffixes k, m. [default: 100000]
    #[arg(long, value_name = "COUNT")]
    pub records: Option<String>,

    /// Key distribution of the measure phase: uniform, zipfian or sequential. [default: uniform]
    #[arg(long, value_name = "DIST")]
    pub key_distribution: Option<String>,

    /// Value size in bytes, header included (min 24): `100`, a range `100-1000`,
    /// or a list `100,1000,10000`. Suffixes k, m. [default: 100]
    #[arg(long, value_name = "BYTES")]
    pub value_size: Option<String>,

    /// Value content: random (incompressible) or compressible. [default: random]
    #[arg(long, value_name = "KIND")]
    pub value_content: Option<String>,

    /// Operation mix as weights get:set:update:delete, e.g. `90:10` or `95:0:5`. [default: 90:10]
    #[arg(long, value_name = "G:S:U:D")]
    pub mix: Option<String>,

    /// Connections in all, spread over the threads. [default: 50]
    #[arg(short = 'c', long, value_name = "N")]
    pub clients: Option<String>,

    /// Client worker threads, each an event loop over its connections. [default: 1]
    #[arg(long, value_name = "N")]
    pub threads: Option<String>,

    /// Requests in flight per connection (pipeline depth). [default: 1]
    #[arg(short = 'P', long, value_name = "N")]
    pub pipeline: Option<String>,

    /// Length of the measured phase: `10s`, `2m`, `500ms`. [default: 10s]
    #[arg(short = 'd', long, value_name = "TIME", conflicts_with = "ops")]
    pub duration: Option<String>,

    /// Measure this many operations (all clients together) instead of a duration.
    #[arg(short = 'n', long, value_name = "COUNT")]
    pub ops: Option<String>,

    /// Unmeasured warm-up before the measured phase: `2s`; `0` for none. [default: 2s]
    #[arg(long, value_name = "TIME")]
    pub warmup: Option<String>,

    /// Target rate in operations per second (open loop: latency counts from
    /// each request's intended start). Unset or 0: closed loop.
    #[arg(long, value_name = "OPS/S")]
    pub rate: Option<String>,

    /// A request without a reply after this long fails as a timeout. [default: 5s]
    #[arg(long, value_name = "TIME")]
    pub timeout: Option<String>,

    /// How bakeoff's network loop moves bytes: auto (io_uring where the
    /// kernel allows it, else epoll), epoll or io_uring. [default: auto]
    #[arg(long, value_name = "BACKEND")]
    pub io: Option<String>,

    /// Cap the target's memory (RSS and page cache together), e.g. `256mb`:
    /// a managed server, or bakeoff itself for an in-process engine, runs in
    /// a cgroup with this limit (cgroup v1 memory.limit_in_bytes or v2
    /// memory.max; needs root). For data sets larger than memory.
    #[arg(long, value_name = "BYTES")]
    pub memory_cap: Option<String>,

    /// Records stored: kv (a value per key) or profile (the table of
    /// 000-search: name, sex, province, city, payload). [default: kv]
    #[arg(long, value_name = "KIND")]
    pub record: Option<String>,

    /// Which search `search` operations make on profile records: name
    /// (substring, no index helps), sex, location (province + city) or all.
    /// [default: name]
    #[arg(long, value_name = "SEARCH")]
    pub search: Option<String>,

    /// Records per insert while loading (multi-row INSERT on the SQL
    /// servers, insertMany on MongoDB). [default: 1]
    #[arg(long, value_name = "N")]
    pub batch: Option<String>,

    /// Growth experiment: --sweep-records gives checkpoints (e.g.
    /// 1m,2m,5m); each target stays up and loads only the records added
    /// since the previous checkpoint, then measures.
    #[arg(long)]
    pub grow: bool,

    /// What one request is: op (one operation on a kept connection), connect
    /// (a new connection per operation: connect, operate, close — many
    /// short-lived connections) or phases (MariaDB: connect, select db, set
    /// charset, UPDATE 10 rows, SELECT 10 rows, INSERT 1 row, close, each
    /// step timed). With connect and phases, the load before the run is
    /// done by at most 8 clients on kept connections, so that a crowd meant
    /// to overload the server is not refused while loading. [default: op]
    #[arg(long, value_name = "MODE")]
    pub request: Option<String>,

    /// Profile table without its indexes on sex and (province, city).
    #[arg(long)]
    pub no_indexes: bool,

    /// Sweep over searches, e.g. `name,sex,location,all`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_search: Vec<String>,

    /// Sweep over indexes, e.g. `on,off`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_indexes: Vec<String>,

    /// Skip the load phase (measure against whatever the target holds).
    #[arg(long)]
    pub no_load: bool,

    /// Times each point of the matrix is run. [default: 1]
    #[arg(long, value_name = "N")]
    pub repeats: Option<String>,

    /// Seed of every generator; the same seed gives the same requests. [default: 1]
    #[arg(long, value_name = "N")]
    pub seed: Option<String>,

    /// Sweep over client counts, e.g. `1,10,100`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_clients: Vec<String>,

    /// Sweep over value sizes, e.g. `1k,10k,100k`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_value_size: Vec<String>,

    /// Sweep over mixes, e.g. `100:0,95:5,50:50`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_mix: Vec<String>,

    /// Sweep over record counts, e.g. `100k,1m`.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_records: Vec<String>,

    /// Sweep over memory caps, e.g. `256mb,none` (see --memory-cap).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub sweep_memory_cap: Vec<String>,

    /// A managed server setting, `TARGET.KEY=VALUE`, e.g. `redis.persistence=aof-everysec`
    /// or `memcached.memory=64mb` (see `bakeoff list`). Repeatable.
    #[arg(long = "set", value_name = "T.K=V")]
    pub settings: Vec<String>,

    /// Result file. [default: results/NAME-TIMESTAMP.json]
    #[arg(short = 'o', long, value_name = "FILE")]
    pub out: Option<String>,

    /// HTML report with charts. [default: the result file's name with .html]
    #[arg(long, value_name = "FILE", conflicts_with = "no_html")]
    pub html: Option<String>,

    /// Write no HTML report.
    #[arg(long)]
    pub no_html: bool,

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
