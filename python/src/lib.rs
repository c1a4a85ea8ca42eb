//! `tfrc._core`: the Rust side of the Python package `tfrc` (python/tfrc/ wraps it).
//!
//! Everything here calls the toolkit's own crates — the equation of `tfrc-proto`, the scenario
//! reader of `tfrc-scenario`, the simulation, reproduction and sweep of `tfrc-cli` — so Python
//! and the `tfrc` command run one implementation. Tables cross into Python as Arrow record
//! batches (the Arrow C data interface, no copy through text); long runs release the GIL.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow_array::RecordBatch;
use arrow_pyarrow::ToPyArrow;
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use tfrc_cli::sweep::{self, Dataset, Manifest, PlannedRun, RunFiles};
use tfrc_proto::equation as rfc5348;

create_exception!(
    tfrc,
    ScenarioError,
    PyValueError,
    "A scenario (file, text or override) is invalid; `key` names the key, `file` the file."
);
create_exception!(
    tfrc,
    SweepError,
    PyRuntimeError,
    "A sweep could not run, or some of its runs failed (the finished ones are kept)."
);

/// A Python exception for a Rust error: a scenario error becomes `ScenarioError` with its `key`
/// and `file`, anything else a `RuntimeError` with the whole chain of causes.
fn to_python(error: anyhow::Error) -> PyErr {
    if let Some(scenario) = error.downcast_ref::<tfrc_scenario::ScenarioError>() {
        return scenario_error(scenario);
    }
    PyRuntimeError::new_err(format!("{error:#}"))
}

fn scenario_error(error: &tfrc_scenario::ScenarioError) -> PyErr {
    let raised = ScenarioError::new_err(error.to_string());
    Python::attach(|py| {
        let value = raised.value(py);
        let _ = value.setattr("key", error.key());
        let _ = value.setattr("file", error.file());
    });
    raised
}

fn arrays_of_equal_length(lengths: &[usize]) -> PyResult<usize> {
    let first = lengths.first().copied().unwrap_or(0);
    if lengths.iter().any(|length| *length != first) {
        return Err(PyValueError::new_err(format!(
            "arrays of different lengths {lengths:?} (tfrc.equation broadcasts them first)"
        )));
    }
    Ok(first)
}

/// The equation of RFC 5348 §3.1 element by element: X in bytes/s for segment size `s`
/// (bytes), round-trip time `rtt` (s), loss event rate `p` and, optionally, `t_rto` (s; 4·rtt
/// when absent). NaN where an input is outside its domain (s, rtt, t_rto > 0; 0 ≤ p ≤ 1).
#[pyfunction]
#[pyo3(signature = (s, rtt, p, t_rto=None))]
fn equation<'py>(
    py: Python<'py>,
    s: PyReadonlyArray1<'py, f64>,
    rtt: PyReadonlyArray1<'py, f64>,
    p: PyReadonlyArray1<'py, f64>,
    t_rto: Option<PyReadonlyArray1<'py, f64>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (s, rtt, p) = (s.as_slice()?, rtt.as_slice()?, p.as_slice()?);
    let t_rto = t_rto.as_ref().map(|t| t.as_slice()).transpose()?;
    let mut lengths = vec![s.len(), rtt.len(), p.len()];
    lengths.extend(t_rto.map(<[f64]>::len));
    let n = arrays_of_equal_length(&lengths)?;
    let x: Vec<f64> = (0..n)
        .map(|i| {
            let t = t_rto.map_or(4.0 * rtt[i], |t| t[i]);
            let valid = s[i] > 0.0 && rtt[i] > 0.0 && t > 0.0 && (0.0..=1.0).contains(&p[i]);
            if valid {
                rfc5348::throughput_with_rto(s[i], rtt[i], p[i], t)
            } else {
                f64::NAN
            }
        })
        .collect();
    Ok(PyArray1::from_vec(py, x))
}

/// The inverse: the loss event rate at which the equation (t_RTO = 4·rtt) allows `x` bytes/s;
/// NaN where no p in [1e-12, 1] gives it, or an input is not positive.
#[pyfunction]
fn loss_event_rate<'py>(
    py: Python<'py>,
    x: PyReadonlyArray1<'py, f64>,
    s: PyReadonlyArray1<'py, f64>,
    rtt: PyReadonlyArray1<'py, f64>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (x, s, rtt) = (x.as_slice()?, s.as_slice()?, rtt.as_slice()?);
    let n = arrays_of_equal_length(&[x.len(), s.len(), rtt.len()])?;
    let p: Vec<f64> = (0..n)
        .map(|i| rfc5348::attainable_loss_event_rate(s[i], rtt[i], x[i]).unwrap_or(f64::NAN))
        .collect();
    Ok(PyArray1::from_vec(py, p))
}

/// A scenario (docs/scenario-format.md), as `tfrc sim` reads it.
#[pyclass(module = "tfrc", skip_from_py_object)]
#[derive(Clone)]
struct Scenario {
    inner: tfrc_scenario::Scenario,
}

#[pymethods]
impl Scenario {
    /// Reads a scenario from a file (a path, or a string without a newline or `=`) or from
    /// TOML text. Raises `ScenarioError` naming the key at fault.
    #[staticmethod]
    fn from_toml(source: &Bound<'_, PyAny>) -> PyResult<Scenario> {
        let parsed = if let Ok(path) = source.extract::<PathBuf>() {
            let text = path.to_string_lossy();
            if source.is_instance_of::<pyo3::types::PyString>()
                && (text.contains('\n') || text.contains('='))
            {
                tfrc_scenario::Scenario::from_str_in_dir(
                    &text,
                    "<text>",
                    &std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
                )
            } else {
                tfrc_scenario::Scenario::from_path(&path)
            }
        } else {
            return Err(PyValueError::new_err(
                "Scenario.from_toml expects a path or TOML text",
            ));
        };
        parsed
            .map(|inner| Scenario { inner })
            .map_err(|error| scenario_error(&error))
    }

    /// Sets one key, as `tfrc sim --set KEY=VALUE` does (`"link.1.delay", "25ms"`), and returns
    /// the scenario. Raises `ScenarioError` (the scenario unchanged) for a bad key or value.
    fn set<'py>(
        mut slf: PyRefMut<'py, Self>,
        key: &str,
        value: &Bound<'py, PyAny>,
    ) -> PyResult<PyRefMut<'py, Self>> {
        let text = toml_value_text(value)?;
        slf.inner
            .apply_set(&format!("{key}={text}"))
            .map_err(|error| scenario_error(&error))?;
        Ok(slf)
    }

    /// The resolved scenario as TOML, every default written out.
    fn to_toml(&self) -> String {
        self.inner.to_toml_string()
    }

    /// The scenario's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    /// The seed of its runs.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed
    }

    #[setter]
    fn set_seed(&mut self, seed: u64) {
        self.inner.seed = seed;
    }

    /// The number of runs its `[sweep]` grid expands to (1 without a grid).
    #[getter]
    fn variant_count(&self) -> usize {
        self.inner.variant_count()
    }

    /// The runs of its `[sweep]` grid, each a scenario without a grid (named
    /// `name[label=value,…]`); the scenario itself without a grid.
    fn variants(&self) -> PyResult<Vec<Scenario>> {
        let variants = self
            .inner
            .expand()
            .map_err(|error| scenario_error(&error))?;
        Ok(variants
            .into_iter()
            .map(|inner| Scenario { inner })
            .collect())
    }

    /// A copy.
    fn copy(&self) -> Scenario {
        self.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Scenario(name={:?}, seed={}, variants={})",
            self.inner.name,
            self.inner.seed,
            self.inner.variant_count()
        )
    }
}

/// A Python value as the text of an override's value.
fn toml_value_text(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(flag) = value.extract::<bool>() {
        return Ok(flag.to_string());
    }
    if let Ok(integer) = value.extract::<i64>() {
        return Ok(integer.to_string());
    }
    if let Ok(number) = value.extract::<f64>() {
        return Ok(format!("{number:?}"));
    }
    if let Ok(text) = value.extract::<String>() {
        return Ok(text);
    }
    Err(PyValueError::new_err(format!(
        "a scenario value is a str, int, float or bool (the text of `tfrc sim --set`), got {}",
        value.get_type().name()?
    )))
}

/// The one run of a scenario; a scenario with a grid of several points is refused.
fn single_variant(scenario: &tfrc_scenario::Scenario) -> PyResult<tfrc_scenario::Scenario> {
    let mut variants = scenario.expand().map_err(|error| scenario_error(&error))?;
    if variants.len() != 1 {
        return Err(ScenarioError::new_err(format!(
            "{}: its [sweep] has {} variants; run them with tfrc.sweep, or one of .variants()",
            scenario.name,
            variants.len()
        )));
    }
    Ok(variants.remove(0))
}

fn batch_to_python(py: Python<'_>, batch: &RecordBatch) -> PyResult<Py<PyAny>> {
    Ok(batch.to_pyarrow(py)?.unbind())
}

/// A finished run held in Rust: its summary and rows. The Python `Result` asks for each table
/// when it is first used, so a call that needs only the summary does not pay for the tables.
#[pyclass(module = "tfrc._core", name = "Run", frozen)]
struct PyRun {
    summary: tfrc_output::Summary,
    rows: tfrc_output::Rows,
    /// The simulator's own wall time (build, run, rows), seconds; `None` for ns-2 runs.
    #[pyo3(get)]
    wall_time_s: Option<f64>,
    /// Events the simulator processed; `None` for ns-2 runs.
    #[pyo3(get)]
    events: Option<u64>,
}

#[pymethods]
impl PyRun {
    /// One table as a pyarrow record batch: `flows`, `state` or `links`.
    fn table(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let batch = match name {
            "flows" => tfrc_output::arrow::table(&self.rows.flows),
            "state" => tfrc_output::arrow::table(&self.rows.states),
            "links" => tfrc_output::arrow::table(&self.rows.links),
            other => {
                return Err(PyValueError::new_err(format!(
                    "no table {other:?} (flows, state, links)"
                )))
            }
        }
        .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
        batch_to_python(py, &batch)
    }

    /// `summary.json`'s text.
    fn summary_json(&self) -> PyResult<String> {
        to_json(&self.summary)
    }
}

/// Runs a scenario (without a grid of several points) in the simulator, the GIL released.
#[pyfunction]
#[pyo3(signature = (scenario, seed=None))]
fn simulate(py: Python<'_>, scenario: &Scenario, seed: Option<u64>) -> PyResult<PyRun> {
    let mut variant = single_variant(&scenario.inner)?;
    if let Some(seed) = seed {
        variant.seed = seed;
    }
    let finished = py
        .detach(|| tfrc_cli::sim::run_scenario(&variant, None, true, true, None))
        .map_err(to_python)?;
    Ok(PyRun {
        summary: finished.summary,
        rows: finished.rows,
        wall_time_s: Some(finished.wall_time.as_secs_f64()),
        events: Some(finished.events),
    })
}

/// Runs a scenario in ns-2.35 (`ns` on the PATH, or `ns_path`) in `directory`, the GIL released;
/// its output converted to the simulator's tables.
#[pyfunction]
#[pyo3(signature = (scenario, directory, seed=None, ns_path=None))]
fn ns2(
    py: Python<'_>,
    scenario: &Scenario,
    directory: PathBuf,
    seed: Option<u64>,
    ns_path: Option<PathBuf>,
) -> PyResult<PyRun> {
    let mut variant = single_variant(&scenario.inner)?;
    if let Some(seed) = seed {
        variant.seed = seed;
    }
    let options = tfrc_ns2::RunOptions {
        ns_path: ns_path.unwrap_or_else(|| PathBuf::from(tfrc_ns2::DEFAULT_NS_PATH)),
        ..tfrc_ns2::RunOptions::default()
    };
    let run = py
        .detach(|| -> anyhow::Result<tfrc_analysis::run::Run> {
            let outcomes = tfrc_ns2::run_scenario(&variant, &directory, &options)?;
            let outcome = outcomes
                .first()
                .ok_or_else(|| anyhow::anyhow!("ns-2 gave no run"))?;
            Ok(tfrc_analysis::run::Run::load(&outcome.directory)?)
        })
        .map_err(|error| match error.downcast_ref::<tfrc_ns2::Ns2Error>() {
            Some(tfrc_ns2::Ns2Error::NsNotFound { path }) => PyOSError::new_err(format!(
                "ns-2 is not installed at {} (Debian: apt-get install ns2)",
                path.display()
            )),
            _ => to_python(error),
        })?;
    Ok(PyRun {
        summary: run.summary,
        rows: tfrc_output::Rows {
            flows: run.flows,
            states: run.states,
            links: run.links,
        },
        wall_time_s: None,
        events: None,
    })
}

/// Runs `tfrc reproduce` into `out` and returns the claims table as a pyarrow record batch.
#[pyfunction]
#[pyo3(signature = (out, ids=None, replications=None, quick=false, jobs=None, no_ns2=false, quiet=true, scenarios=None))]
#[allow(clippy::too_many_arguments)]
fn reproduce(
    py: Python<'_>,
    out: PathBuf,
    ids: Option<Vec<String>>,
    replications: Option<u32>,
    quick: bool,
    jobs: Option<usize>,
    no_ns2: bool,
    quiet: bool,
    scenarios: Option<PathBuf>,
) -> PyResult<Py<PyAny>> {
    let args = tfrc_cli::reproduce::ReproduceArgs {
        only: ids.unwrap_or_default(),
        out,
        jobs,
        quick,
        scenarios,
        no_ns2,
        testbed: None,
        embed_images: false,
        quiet,
        replications,
        keep_runs: false,
    };
    let rows = py
        .detach(|| tfrc_cli::reproduce::run(&args))
        .map_err(to_python)?;
    let batch = tfrc_output::arrow::table(&rows)
        .map_err(|error| PyRuntimeError::new_err(error.to_string()))?;
    batch_to_python(py, &batch)
}

/// Parses a seed list (`"1-20"`, `"1,2,10-12"`), as `tfrc sweep --seeds` does.
#[pyfunction]
fn parse_seeds(list: &str) -> PyResult<Vec<u64>> {
    sweep::parse_seeds(list).map_err(|error| PyValueError::new_err(format!("{error:#}")))
}

/// Plans a sweep: its manifest and its runs, as JSON text (a run is self-contained: a Dask task
/// takes one).
#[pyfunction]
fn plan(scenario: &Scenario, seeds: Vec<u64>) -> PyResult<(String, Vec<String>)> {
    let plan = sweep::plan(&scenario.inner, &seeds).map_err(to_python)?;
    let runs = plan
        .runs
        .iter()
        .map(to_json)
        .collect::<PyResult<Vec<_>>>()?;
    Ok((to_json(&plan.manifest)?, runs))
}

fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|error| PyRuntimeError::new_err(error.to_string()))
}

/// The run id of a planned run (JSON text from [`plan`]).
#[pyfunction]
fn run_id(run: &str) -> PyResult<String> {
    Ok(parse_run(run)?.run_id)
}

fn parse_run(run: &str) -> PyResult<PlannedRun> {
    serde_json::from_str(run)
        .map_err(|error| PyValueError::new_err(format!("not a planned run: {error}")))
}

/// Runs one planned run (JSON text from [`plan`]), the GIL released, and returns its four
/// Parquet files (flows, state, links, runs), or, given the `directory` of its dataset (a
/// worker that sees it), stores them there and returns an empty list.
#[pyfunction]
#[pyo3(signature = (run, directory=None))]
fn execute<'py>(
    py: Python<'py>,
    run: &str,
    directory: Option<PathBuf>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let run = parse_run(run)?;
    if let Some(directory) = directory {
        py.detach(|| -> anyhow::Result<()> {
            let dataset = Dataset::existing(&directory)?;
            dataset.store(&sweep::execute(&run)?)
        })
        .map_err(to_python)?;
        return Ok(Vec::new());
    }
    let files = py.detach(|| sweep::execute(&run)).map_err(to_python)?;
    Ok(files
        .tables
        .iter()
        .map(|bytes| PyBytes::new(py, bytes))
        .collect())
}

/// A sweep's dataset directory (`tfrc sweep --out`).
#[pyclass(module = "tfrc._core", name = "Dataset")]
struct PyDataset {
    inner: Dataset,
}

#[pymethods]
impl PyDataset {
    /// Opens (creates) the dataset at `directory` for the runs of `manifest` (JSON text from
    /// [`plan`]); refuses another scenario's runs, and another build's unless
    /// `allow_mixed_versions`.
    #[new]
    fn new(directory: PathBuf, manifest: &str, allow_mixed_versions: bool) -> PyResult<Self> {
        let manifest: Manifest = serde_json::from_str(manifest)
            .map_err(|error| PyValueError::new_err(format!("not a sweep manifest: {error}")))?;
        Dataset::open(&directory, &manifest, allow_mixed_versions)
            .map(|inner| PyDataset { inner })
            .map_err(|error| SweepError::new_err(format!("{error:#}")))
    }

    /// Whether a run is complete in the dataset.
    fn has(&self, run_id: &str) -> bool {
        self.inner.has(run_id)
    }

    /// Writes a run's four Parquet files (from [`execute`]).
    fn store(&self, run_id: String, tables: Vec<Vec<u8>>) -> PyResult<()> {
        let tables: [Vec<u8>; 4] = tables
            .try_into()
            .map_err(|_| PyValueError::new_err("a run has four tables"))?;
        self.inner
            .store(&RunFiles { run_id, tables })
            .map_err(|error| SweepError::new_err(format!("{error:#}")))
    }
}

/// (runs run now, runs already in the dataset, [(run id, error)] of the runs that failed).
type SweepCounts = (usize, usize, Vec<(String, String)>);

/// Runs a sweep on this machine's cores into `directory`, the GIL released; returns (runs run
/// now, runs already there, [(run id, error)] of the runs that failed).
#[pyfunction]
#[pyo3(signature = (scenario, directory, seeds, jobs=None, allow_mixed_versions=false, quiet=false))]
fn sweep_local(
    py: Python<'_>,
    scenario: &Scenario,
    directory: PathBuf,
    seeds: Vec<u64>,
    jobs: Option<usize>,
    allow_mixed_versions: bool,
    quiet: bool,
) -> PyResult<SweepCounts> {
    let plan = sweep::plan(&scenario.inner, &seeds).map_err(to_python)?;
    let dataset = Dataset::open(&directory, &plan.manifest, allow_mixed_versions)
        .map_err(|error| SweepError::new_err(format!("{error:#}")))?;
    let jobs = tfrc_cli::reproduce::runner::jobs_or_cores(jobs);
    if jobs == 0 {
        return Err(PyValueError::new_err("jobs=0: expected at least 1"));
    }
    // The sweep runs on its own thread while this one, between naps without the GIL, lets
    // Python handle signals: on Ctrl-C no further run starts, the runs under way are stored,
    // and KeyboardInterrupt is raised (the sweep resumes from there when called again).
    let stop = AtomicBool::new(false);
    let mut interrupted: Option<PyErr> = None;
    let outcome = py.detach(|| {
        std::thread::scope(|scope| {
            let sweep = scope.spawn(|| sweep::run_local(&plan, &dataset, jobs, quiet, &stop));
            while !sweep.is_finished() {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if interrupted.is_none() {
                    if let Err(error) = Python::attach(|py| py.check_signals()) {
                        stop.store(true, Ordering::Relaxed);
                        interrupted = Some(error);
                    }
                }
            }
            sweep.join()
        })
    });
    if let Some(error) = interrupted {
        return Err(error);
    }
    let outcome = outcome.map_err(|_| SweepError::new_err("the sweep's thread panicked"))?;
    Ok((outcome.ran, outcome.skipped, outcome.failed))
}

/// This build: `0.1.0 (git 1a2b3c4d5e6f)`.
#[pyfunction]
fn version() -> &'static str {
    tfrc_cli::LONG_VERSION
}

/// The Rust side of the `tfrc` Python package.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    tfrc_cli::record_tool();
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("SweepError", m.py().get_type::<SweepError>())?;
    m.add_class::<Scenario>()?;
    m.add_class::<PyDataset>()?;
    m.add_class::<PyRun>()?;
    for function in [
        wrap_pyfunction!(equation, m)?,
        wrap_pyfunction!(loss_event_rate, m)?,
        wrap_pyfunction!(simulate, m)?,
        wrap_pyfunction!(ns2, m)?,
        wrap_pyfunction!(reproduce, m)?,
        wrap_pyfunction!(parse_seeds, m)?,
        wrap_pyfunction!(plan, m)?,
        wrap_pyfunction!(run_id, m)?,
        wrap_pyfunction!(execute, m)?,
        wrap_pyfunction!(sweep_local, m)?,
        wrap_pyfunction!(version, m)?,
    ] {
        m.add_function(function)?;
    }
    Ok(())
}
