//! `tfrc sweep`: every variant of a scenario's `[sweep]` grid × a list of seeds, run in
//! parallel, into one Parquet dataset that resumes where it stopped.
//!
//! The dataset (docs/sweeps.md) is a directory:
//! - `sweep.json`: the [`Manifest`] — the tool that wrote the runs (version and git commit), the
//!   output schema version, the scenario and the grid's parameters with their column types;
//! - `runs/<run_id>.parquet`: a row per run and flow (the flow's `summary.json` entry);
//! - `flows/`, `state/`, `links/`: the time series of `flows.csv`, `state.csv` and `links.csv`.
//!
//! Every row starts with the run's `run_id`, `scenario_hash` and `seed`, then one column per
//! parameter of the grid, so `pandas.read_parquet(DIR / "runs")` is the whole sweep. A run is
//! one file per table, written to a temporary name and renamed, its `runs/` file last: a run is
//! in the dataset exactly when its `runs/` file is, so a sweep interrupted by a crash or Ctrl-C
//! reruns only what is missing. As ns-3's SEM does, the dataset refuses runs of another build
//! of the toolkit unless told to mix them.
//!
//! The same three steps serve the local pool here and the Dask sweep of the Python package:
//! [`plan`] (on the client), [`execute`] (anywhere: a planned run is self-contained TOML), and
//! [`Dataset::store`] (on the client).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use arrow_array::RecordBatch;
use clap::Args;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use tfrc_output::arrow::{run_tables, table, with_leading_columns, Constant};
use tfrc_scenario::Scenario;

use crate::reproduce::runner::{jobs_or_cores, parallel_map, progress_bar};
use crate::sim::run_scenario;

/// Most runs one sweep plans (grid × seeds).
pub const MAX_RUNS: usize = 100_000;

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "sweep.json";

/// The columns every row of every table starts with, before the grid's parameters.
const ID_COLUMNS: [&str; 3] = ["run_id", "scenario_hash", "seed"];

/// The run's own columns in `runs/`, after the parameters and before the flow's summary.
const RUN_COLUMNS: [&str; 7] = [
    "scenario",
    "tool",
    "duration_s",
    "interval_s",
    "jain_index",
    "bottleneck_utilization",
    "events",
];

/// The dataset's tables, in the order a run's files are written (`runs` last).
pub const TABLES: [&str; 4] = ["flows", "state", "links", "runs"];

/// Arguments of `tfrc sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file (TOML) with a `[sweep]` grid (a file without one is a grid of one point).
    pub scenario: PathBuf,
    /// The dataset directory (created; an existing one is resumed: runs already in it are
    /// skipped).
    #[arg(long, short, default_value = "sweep")]
    pub out: PathBuf,
    /// Seeds of every grid point: a list of seeds and inclusive ranges, e.g. `1-20` or
    /// `1,2,10-12` (default: the file's `seed`).
    #[arg(long, value_name = "LIST")]
    pub seeds: Option<String>,
    /// Override a key of the file before expanding the grid, e.g. `--set duration=60s`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Runs in parallel (default: the number of cores).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Add runs to a dataset that holds runs of another version of the toolkit (each row keeps
    /// its `tool` column).
    #[arg(long)]
    pub allow_mixed_versions: bool,
    /// Run on a Dask distributed cluster (`tcp://HOST:8786`) instead of the local cores,
    /// through the Python package (`pip install ./python`, with `dask[distributed]`).
    #[arg(long, value_name = "ADDRESS")]
    pub dask: Option<String>,
    /// Seconds `--dask` waits to reach the scheduler.
    #[arg(long, default_value_t = 20.0, value_name = "SECONDS")]
    pub dask_timeout: f64,
    /// The Python interpreter `--dask` runs.
    #[arg(long, default_value = "python3", value_name = "PATH")]
    pub python: String,
    /// No progress bar and no summary line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The type of a grid parameter's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParameterType {
    /// Every value is an integer (`int64`).
    Integer,
    /// Every value is a number (`float64`).
    Number,
    /// Anything else (`utf8`, the value as the variant name writes it: `250ms`, `2Mbps`).
    Text,
}

/// A parameter of the grid: a label of the variants' names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    /// Its column name (the label).
    pub name: String,
    /// Its column type.
    #[serde(rename = "type")]
    pub kind: ParameterType,
}

/// One run of a sweep: self-contained, so that it can run on another machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedRun {
    /// `<scenario_hash>-<seed>`: its file name in every table.
    pub run_id: String,
    /// 16 hex digits of SipHash-1-3 over the resolved variant written as TOML with seed 0:
    /// the same for every seed of a grid point.
    pub scenario_hash: String,
    /// The seed.
    pub seed: u64,
    /// The variant's name (`e002-grid[flows=2,delay=250ms]`).
    pub variant: String,
    /// Its grid parameters, in the manifest's order.
    pub parameters: Vec<(String, Constant)>,
    /// The resolved variant with its seed, as TOML.
    pub scenario_toml: String,
    /// The directory relative trace paths of the scenario resolve against.
    pub base_dir: Option<PathBuf>,
}

/// What a dataset holds besides its runs: checked when a sweep resumes into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Output schema version (`tfrc_output::SCHEMA_VERSION`).
    pub schema_version: u32,
    /// The build that wrote its runs: `tfrc 0.1.0 (git 1a2b3c4d5e6f)`.
    pub tool: String,
    /// The scenario's name.
    pub scenario: String,
    /// The grid's parameters: the columns after `seed`.
    pub parameters: Vec<Parameter>,
}

/// A sweep's runs and its manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The manifest a dataset of these runs has.
    pub manifest: Manifest,
    /// Every run: grid points in the scenario's order, each with every seed.
    pub runs: Vec<PlannedRun>,
}

/// Parses a seed list: seeds and inclusive ranges separated by commas (`1-20`, `1,2,10-12`).
///
/// # Errors
/// A bad element, a range that runs backwards, a repeated seed or more than [`MAX_RUNS`] seeds.
pub fn parse_seeds(list: &str) -> Result<Vec<u64>> {
    let mut seeds = Vec::new();
    for element in list.split(',') {
        let element = element.trim();
        let number = |text: &str| -> Result<u64> {
            text.trim().parse::<u64>().with_context(|| {
                format!(
                    "--seeds {list:?}: {text:?} is not a seed (expected an integer ≥ 0, or A-B)"
                )
            })
        };
        let (low, high) = match element.split_once('-') {
            Some((low, high)) => (number(low)?, number(high)?),
            None => {
                let seed = number(element)?;
                (seed, seed)
            }
        };
        if high < low {
            bail!("--seeds {list:?}: the range {element} runs backwards");
        }
        if (high - low) as u128 + seeds.len() as u128 >= MAX_RUNS as u128 {
            bail!("--seeds {list:?}: more than {MAX_RUNS} seeds");
        }
        seeds.extend(low..=high);
    }
    let mut sorted = seeds.clone();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        bail!("--seeds {list:?}: seed {} is listed twice", pair[0]);
    }
    Ok(seeds)
}

/// 16 hex digits identifying a resolved scenario apart from its seed.
fn scenario_hash(variant: &Scenario) -> String {
    let mut unseeded = variant.clone();
    unseeded.seed = 0;
    let hash = siphasher::sip::SipHasher13::new().hash(unseeded.to_toml_string().as_bytes());
    format!("{hash:016x}")
}

/// The column type every value of a parameter fits.
fn parameter_type<'a>(values: impl Iterator<Item = &'a str>) -> ParameterType {
    let mut kind = ParameterType::Integer;
    for value in values {
        if kind == ParameterType::Integer && value.parse::<i64>().is_err() {
            kind = ParameterType::Number;
        }
        if kind == ParameterType::Number && value.parse::<f64>().is_err() {
            return ParameterType::Text;
        }
    }
    kind
}

fn typed(value: &str, kind: ParameterType) -> Constant {
    match kind {
        ParameterType::Integer => value
            .parse()
            .map_or_else(|_| Constant::Text(value.into()), Constant::Integer),
        ParameterType::Number => Constant::Number(value.parse().ok()),
        ParameterType::Text => Constant::Text(value.into()),
    }
}

/// Plans the runs of `scenario`'s grid × `seeds` (the scenario's own seed when empty).
///
/// # Errors
/// A grid that does not expand, a parameter named like a column of the tables, or more than
/// [`MAX_RUNS`] runs.
pub fn plan(scenario: &Scenario, seeds: &[u64]) -> Result<Plan> {
    let name = &scenario.name;
    let variants = scenario.expand().map_err(anyhow::Error::new)?;
    let seeds: Vec<Option<u64>> = if seeds.is_empty() {
        vec![None]
    } else {
        seeds.iter().copied().map(Some).collect()
    };
    if variants.len().saturating_mul(seeds.len()) > MAX_RUNS {
        bail!(
            "{name}: {} grid points × {} seeds is more than {MAX_RUNS} runs",
            variants.len(),
            seeds.len()
        );
    }
    let parameters = sweep_parameters(name, &variants)?;
    let mut runs = Vec::with_capacity(variants.len() * seeds.len());
    for variant in &variants {
        let hash = scenario_hash(variant);
        let point = grid_point(variant, &parameters);
        for seed in &seeds {
            let mut seeded = variant.clone();
            if let Some(seed) = seed {
                seeded.seed = *seed;
            }
            runs.push(PlannedRun {
                run_id: format!("{hash}-{}", seeded.seed),
                scenario_hash: hash.clone(),
                seed: seeded.seed,
                variant: seeded.name.clone(),
                parameters: point.clone(),
                scenario_toml: seeded.to_toml_string(),
                base_dir: seeded.base_dir().map(Path::to_path_buf),
            });
        }
    }
    Ok(Plan {
        manifest: Manifest {
            schema_version: tfrc_output::SCHEMA_VERSION,
            tool: tfrc_output::tool(),
            scenario: name.clone(),
            parameters,
        },
        runs,
    })
}

/// The sweep's parameters, in the order their labels first appear over the variants, each
/// typed from all its values; a label that is a dataset column's name is an error.
fn sweep_parameters(name: &str, variants: &[Scenario]) -> Result<Vec<Parameter>> {
    let mut values: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut order: Vec<&str> = Vec::new();
    for variant in variants {
        for (label, value) in &variant.variant {
            if !values.contains_key(label.as_str()) {
                order.push(label);
            }
            values.entry(label).or_default().push(value);
        }
    }
    let reserved = reserved_columns()?;
    let mut parameters = Vec::with_capacity(order.len());
    for label in order {
        if reserved.iter().any(|column| column == label) {
            bail!(
                "{name}: the sweep parameter {label:?} has the name of a column of the dataset; \
                 give its axis another label"
            );
        }
        parameters.push(Parameter {
            name: label.to_owned(),
            kind: parameter_type(values[label].iter().copied()),
        });
    }
    Ok(parameters)
}

/// A variant's value of each parameter, typed (an empty text or a null where the variant has
/// no value for it).
fn grid_point(variant: &Scenario, parameters: &[Parameter]) -> Vec<(String, Constant)> {
    parameters
        .iter()
        .map(|parameter| {
            let value = variant
                .variant
                .iter()
                .find(|(label, _)| *label == parameter.name)
                .map(|(_, value)| typed(value, parameter.kind));
            let missing = match parameter.kind {
                ParameterType::Text => Constant::Text(String::new()),
                _ => Constant::Number(None),
            };
            (parameter.name.clone(), value.unwrap_or(missing))
        })
        .collect()
}

/// Whether the sweep already in `dir` (its manifest `existing`) is this one (`manifest`): the
/// same output schema, scenario and parameters, and the same tool unless mixed versions are
/// allowed; the error says which differs.
fn check_same_sweep(
    dir: &Path,
    existing: &Manifest,
    manifest: &Manifest,
    allow_mixed_versions: bool,
) -> Result<()> {
    let refuse = |what: &str, theirs: &str, ours: &str| -> anyhow::Error {
        anyhow::anyhow!(
            "{} holds a sweep with {what} {theirs}, this one has {ours}: give another \
             --out directory",
            dir.display()
        )
    };
    if existing.schema_version != manifest.schema_version {
        return Err(refuse(
            "output schema",
            &existing.schema_version.to_string(),
            &manifest.schema_version.to_string(),
        ));
    }
    if existing.scenario != manifest.scenario {
        return Err(refuse("scenario", &existing.scenario, &manifest.scenario));
    }
    if existing.parameters != manifest.parameters {
        let describe = |parameters: &[Parameter]| {
            let names: Vec<String> = parameters
                .iter()
                .map(|p| format!("{} ({:?})", p.name, p.kind).to_lowercase())
                .collect();
            format!("[{}]", names.join(", "))
        };
        return Err(refuse(
            "parameters",
            &describe(&existing.parameters),
            &describe(&manifest.parameters),
        ));
    }
    if existing.tool != manifest.tool && !allow_mixed_versions {
        bail!(
            "{} holds runs of {}, this is {}: results of two versions of the code would \
             mix in one dataset; give another --out directory, or allow it with \
             --allow-mixed-versions (allow_mixed_versions=True in Python)",
            dir.display(),
            existing.tool,
            manifest.tool
        );
    }
    Ok(())
}

/// Columns of the tables that a parameter may not be named like.
fn reserved_columns() -> Result<Vec<String>> {
    use tfrc_output::arrow::column_names;
    let mut names: Vec<String> = ID_COLUMNS
        .iter()
        .chain(&RUN_COLUMNS)
        .map(|name| name.to_string())
        .collect();
    names.extend(column_names::<tfrc_output::FlowRow>()?);
    names.extend(column_names::<tfrc_output::StateRow>()?);
    names.extend(column_names::<tfrc_output::LinkRow>()?);
    names.extend(column_names::<tfrc_output::FlowSummary>()?);
    Ok(names)
}

/// A finished run as Parquet files: one per table of [`TABLES`], in that order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFiles {
    /// The run.
    pub run_id: String,
    /// The bytes of `flows/`, `state/`, `links/` and `runs/<run_id>.parquet`.
    pub tables: [Vec<u8>; 4],
}

/// Runs a planned run and encodes its tables.
///
/// # Errors
/// A scenario that does not parse (a planned run edited by hand) or a simulation that fails.
pub fn execute(run: &PlannedRun) -> Result<RunFiles> {
    let base_dir = run.base_dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let scenario = Scenario::from_str_in_dir(&run.scenario_toml, &run.variant, &base_dir)
        .map_err(anyhow::Error::new)?;
    let finished = run_scenario(&scenario, None, true, true, None)?;
    let summary = &finished.summary;
    let mut leading = named(
        ID_COLUMNS,
        [
            Constant::Text(run.run_id.clone()),
            Constant::Text(run.scenario_hash.clone()),
            Constant::Unsigned(run.seed),
        ],
    );
    leading.extend(run.parameters.iter().cloned());
    let [flows, state, links] = run_tables(&finished.rows)?;
    let bottleneck_utilization = summary
        .bottleneck
        .as_ref()
        .and_then(|bottleneck| bottleneck.utilization);
    let mut run_columns = leading.clone();
    run_columns.extend(named(
        RUN_COLUMNS,
        [
            Constant::Text(summary.scenario.clone()),
            Constant::Text(summary.tool.clone()),
            Constant::Number(Some(summary.duration_s)),
            Constant::Number(Some(summary.interval_s)),
            Constant::Number(summary.jain_index),
            Constant::Number(bottleneck_utilization),
            Constant::Unsigned(finished.events),
        ],
    ));
    let runs = with_leading_columns(&table(&summary.flows)?, &run_columns)?;
    let encode = |batch: &RecordBatch, columns: &[(String, Constant)]| -> Result<Vec<u8>> {
        parquet_bytes(&with_leading_columns(batch, columns)?)
    };
    Ok(RunFiles {
        run_id: run.run_id.clone(),
        tables: [
            encode(&flows, &leading)?,
            encode(&state, &leading)?,
            encode(&links, &leading)?,
            parquet_bytes(&runs)?,
        ],
    })
}

/// Columns of constant `values` under `names`, as many of each.
fn named<const N: usize>(names: [&str; N], values: [Constant; N]) -> Vec<(String, Constant)> {
    names.map(String::from).into_iter().zip(values).collect()
}

/// One table as a Parquet file (Snappy-compressed).
fn parquet_bytes(batch: &RecordBatch) -> Result<Vec<u8>> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties))?;
    writer.write(batch)?;
    Ok(writer.into_inner()?)
}

/// A sweep's directory.
#[derive(Debug, Clone)]
pub struct Dataset {
    dir: PathBuf,
}

impl Dataset {
    /// Opens (creating it if needed) the dataset at `dir` for runs described by `manifest`.
    /// Files left half-written by an interrupted sweep are removed.
    ///
    /// # Errors
    /// The directory holds another scenario's sweep, a grid with other parameters, another
    /// schema, or runs of another build (unless `allow_mixed_versions`), or it holds files but
    /// no sweep; or it cannot be read or written.
    pub fn open(dir: &Path, manifest: &Manifest, allow_mixed_versions: bool) -> Result<Dataset> {
        let path = dir.join(MANIFEST_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let existing: Manifest = serde_json::from_str(&text)
                .with_context(|| format!("{}: not a sweep manifest", path.display()))?;
            check_same_sweep(dir, &existing, manifest, allow_mixed_versions)?;
        } else {
            let occupied = std::fs::read_dir(dir)
                .map(|mut entries| entries.next().is_some())
                .unwrap_or(false);
            if occupied {
                bail!(
                    "{} is not empty and holds no sweep ({MANIFEST_FILE}): give a new or empty \
                     --out directory",
                    dir.display()
                );
            }
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let text = serde_json::to_string_pretty(manifest)? + "\n";
            write_atomically(&path, text.as_bytes())?;
        }
        for table in TABLES {
            let table_dir = dir.join(table);
            std::fs::create_dir_all(&table_dir)
                .with_context(|| format!("cannot create {}", table_dir.display()))?;
            for entry in std::fs::read_dir(&table_dir)
                .with_context(|| format!("cannot read {}", table_dir.display()))?
                .flatten()
            {
                if entry.file_name().to_string_lossy().ends_with(".tmp") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Ok(Dataset {
            dir: dir.to_path_buf(),
        })
    }

    /// The dataset at `dir` as [`Dataset::open`] left it, for a process that stores runs
    /// beside the one that opened it (a Dask worker on a shared file system): nothing is
    /// checked but the manifest's presence, nothing removed.
    ///
    /// # Errors
    /// When `dir` has no manifest.
    pub fn existing(dir: &Path) -> Result<Dataset> {
        if !dir.join(MANIFEST_FILE).is_file() {
            bail!(
                "{} is not a sweep dataset (no {MANIFEST_FILE})",
                dir.display()
            );
        }
        Ok(Dataset {
            dir: dir.to_path_buf(),
        })
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether run `run_id` is complete in the dataset.
    pub fn has(&self, run_id: &str) -> bool {
        self.file("runs", run_id).is_file()
    }

    fn file(&self, table: &str, run_id: &str) -> PathBuf {
        self.dir.join(table).join(format!("{run_id}.parquet"))
    }

    /// Writes a run's files, its `runs/` file last.
    ///
    /// # Errors
    /// A run id that is not a plain file name, or a file that cannot be written.
    pub fn store(&self, files: &RunFiles) -> Result<()> {
        let id = &files.run_id;
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            bail!("run id {id:?}: expected letters, digits, '-' and '_' only");
        }
        for (table, bytes) in TABLES.iter().zip(&files.tables) {
            write_atomically(&self.file(table, id), bytes)?;
        }
        Ok(())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, bytes)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| {
        format!(
            "cannot rename {} to {}",
            temporary.display(),
            path.display()
        )
    })
}

/// What a sweep did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Runs run and stored now.
    pub ran: usize,
    /// Runs already in the dataset.
    pub skipped: usize,
    /// Runs that failed, with why.
    pub failed: Vec<(String, String)>,
}

/// Runs the plan's runs missing from `dataset` on `jobs` threads (a progress bar on stderr
/// unless `quiet`), storing each as it finishes. Once `stop` is set no further run starts (the
/// Python package sets it on Ctrl-C); the runs under way finish and are stored.
pub fn run_local(
    plan: &Plan,
    dataset: &Dataset,
    jobs: usize,
    quiet: bool,
    stop: &AtomicBool,
) -> Outcome {
    let missing: Vec<&PlannedRun> = plan
        .runs
        .iter()
        .filter(|run| !dataset.has(&run.run_id))
        .collect();
    let mut outcome = Outcome {
        skipped: plan.runs.len() - missing.len(),
        ..Outcome::default()
    };
    let bar = progress_bar(missing.len() as u64, quiet);
    bar.set_prefix("sweeping");
    let failed = Mutex::new(Vec::new());
    let order: Vec<usize> = (0..missing.len()).collect();
    let stored = parallel_map(&order, jobs, |index| {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let run = missing[index];
        let result = execute(run).and_then(|files| dataset.store(&files));
        bar.inc(1);
        match result {
            Ok(()) => true,
            Err(error) => {
                bar.println(format!("{} ({}): {error:#}", run.variant, run.run_id));
                if let Ok(mut failed) = failed.lock() {
                    failed.push((run.run_id.clone(), format!("{error:#}")));
                }
                false
            }
        }
    });
    bar.finish_and_clear();
    outcome.ran = stored.iter().filter(|stored| **stored).count();
    outcome.failed = failed.into_inner().unwrap_or_default();
    outcome
}

/// The plan of `tfrc sweep`'s arguments.
///
/// # Errors
/// A scenario file, override or seed list that is invalid.
pub fn plan_from_args(args: &SweepArgs) -> Result<Plan> {
    let seeds = match &args.seeds {
        Some(list) => parse_seeds(list)?,
        None => Vec::new(),
    };
    let mut scenario = Scenario::from_path(&args.scenario).map_err(anyhow::Error::new)?;
    scenario.apply_sets(&args.set).map_err(anyhow::Error::new)?;
    plan(&scenario, &seeds)
}

/// `tfrc sweep`.
pub fn run(args: &SweepArgs) -> Result<()> {
    if let Some(address) = &args.dask {
        return run_on_dask(args, address);
    }
    let plan = plan_from_args(args)?;
    let dataset = Dataset::open(&args.out, &plan.manifest, args.allow_mixed_versions)?;
    let jobs = jobs_or_cores(args.jobs);
    if jobs == 0 {
        bail!("--jobs 0: expected at least 1");
    }
    let started = std::time::Instant::now();
    let outcome = run_local(&plan, &dataset, jobs, args.quiet, &AtomicBool::new(false));
    if !args.quiet {
        eprintln!(
            "{} runs: {} run now in {:.1} s, {} already in {}, {} failed",
            plan.runs.len(),
            outcome.ran,
            started.elapsed().as_secs_f64(),
            outcome.skipped,
            args.out.display(),
            outcome.failed.len()
        );
    }
    if !outcome.failed.is_empty() {
        bail!(
            "{} of {} runs failed (the others are kept in {}; rerun to retry): {}",
            outcome.failed.len(),
            plan.runs.len(),
            args.out.display(),
            outcome
                .failed
                .iter()
                .map(|(id, error)| format!("{id}: {error}"))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

/// `tfrc sweep --dask ADDRESS`: the Python package's `python -m tfrc sweep` does it (Dask is a
/// Python engine); this checks that it is there first and passes the arguments on.
fn run_on_dask(args: &SweepArgs, address: &str) -> Result<()> {
    let probe = std::process::Command::new(&args.python)
        .args(["-c", "import tfrc, distributed"])
        .output()
        .with_context(|| {
            format!(
                "--dask: cannot run the Python interpreter {:?}",
                args.python
            )
        })?;
    if !probe.status.success() {
        bail!(
            "--dask needs the Python package and Dask in {:?}: pip install ./python \
             'dask[distributed]' ({})",
            args.python,
            String::from_utf8_lossy(&probe.stderr)
                .lines()
                .last()
                .unwrap_or("import failed")
        );
    }
    let mut command = std::process::Command::new(&args.python);
    command
        .args(["-m", "tfrc", "sweep"])
        .arg(&args.scenario)
        .arg("--out")
        .arg(&args.out)
        .args(["--dask", address])
        .args(["--timeout", &args.dask_timeout.to_string()]);
    if let Some(seeds) = &args.seeds {
        command.args(["--seeds", seeds]);
    }
    for set in &args.set {
        command.args(["--set", set]);
    }
    if args.allow_mixed_versions {
        command.arg("--allow-mixed-versions");
    }
    if args.quiet {
        command.arg("--quiet");
    }
    let status = command
        .status()
        .with_context(|| format!("cannot run {:?}", args.python))?;
    if !status.success() {
        bail!("the Dask sweep failed ({status})");
    }
    Ok(())
}
