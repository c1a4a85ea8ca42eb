//! Running ns-2 on a generated script and converting what it prints.

use core::time::Duration;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use tfrc_scenario::Scenario;

use crate::convert::{convert_samples, write_outputs};
use crate::error::Ns2Error;
use crate::generate::{generate, Generated, SAMPLES_FILE};

/// Where Debian's `ns2` package installs ns-2.35.
pub const DEFAULT_NS_PATH: &str = "/usr/bin/ns";

/// The script's file name in the output directory.
const SCRIPT_NAME: &str = "ns2.tcl";
/// ns-2's standard output (what its C code prints) and standard error, kept with `keep_tcl` or on failure.
const OUTPUT_NAME: &str = "ns2-output.txt";
const ERRORS_NAME: &str = "ns2-stderr.txt";
/// The unsupported features and approximation notes of the run.
const UNSUPPORTED_NAME: &str = "ns2-unsupported.txt";

/// How to run ns-2.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The `ns` binary.
    pub ns_path: PathBuf,
    /// Kill ns-2 after this long.
    pub timeout: Duration,
    /// Keep the script (`ns2.tcl`), its samples (`ns2-samples.txt`) and ns-2's standard
    /// output (`ns2-output.txt`) after a successful run; they are always kept when the run
    /// fails.
    pub keep_tcl: bool,
    /// Write the script and the unsupported list only; do not run ns-2.
    pub dry_run: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            ns_path: PathBuf::from(DEFAULT_NS_PATH),
            timeout: Duration::from_secs(3600),
            keep_tcl: false,
            dry_run: false,
        }
    }
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The directory holding its files.
    pub directory: PathBuf,
    /// The scenario (or variant) name.
    pub scenario: String,
    /// The features ns-2 could not express (see [`Generated::unsupported`]).
    pub unsupported: Vec<String>,
    /// The approximations (see [`Generated::notes`]).
    pub notes: Vec<String>,
    /// ns-2's wall-clock time, `None` for a dry run.
    pub wall_time: Option<Duration>,
}

/// Checks that `path` is an executable file.
pub fn find_ns(path: &Path) -> Result<PathBuf, Ns2Error> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_file() && metadata.permissions().mode() & 0o111 != 0 => {
            Ok(path.to_path_buf())
        }
        _ => Err(Ns2Error::NsNotFound {
            path: path.to_path_buf(),
        }),
    }
}

/// Runs `scenario` in ns-2 into `directory`: one run for a scenario without a sweep, or one
/// run per variant into `directory/<variant name>/` for a scenario with one. Each run directory
/// gets `scenario.toml` (the resolved variant), `ns2-unsupported.txt`, and (unless a dry run)
/// `flows.csv`, `state.csv`, `links.csv` and `summary.json`.
pub fn run_scenario(
    scenario: &Scenario,
    directory: &Path,
    options: &RunOptions,
) -> Result<Vec<RunOutcome>, Ns2Error> {
    let variants = scenario.expand()?;
    // Generate everything first, so that a variant ns-2 cannot express stops the sweep before
    // any run.
    let generated = variants
        .iter()
        .map(generate)
        .collect::<Result<Vec<_>, _>>()?;
    if !options.dry_run {
        find_ns(&options.ns_path)?;
    }
    let mut outcomes = Vec::with_capacity(variants.len());
    for (variant, generated) in variants.iter().zip(&generated) {
        let run_directory = scenario
            .prepare_run_directory(variant, directory)
            .map_err(|error| Ns2Error::io(error.path, error.source))?;
        outcomes.push(run_generated(generated, &run_directory, options)?);
    }
    Ok(outcomes)
}

/// Writes `generated` into `directory` (created if needed), runs ns-2 on it and converts the
/// output; with `options.dry_run`, writes the script and the unsupported list only.
pub fn run_generated(
    generated: &Generated,
    directory: &Path,
    options: &RunOptions,
) -> Result<RunOutcome, Ns2Error> {
    std::fs::create_dir_all(directory)
        .map_err(|source| Ns2Error::io(directory.to_path_buf(), source))?;
    let script = directory.join(SCRIPT_NAME);
    std::fs::write(&script, &generated.tcl)
        .map_err(|source| Ns2Error::io(script.clone(), source))?;
    let unsupported_path = directory.join(UNSUPPORTED_NAME);
    std::fs::write(&unsupported_path, unsupported_text(generated))
        .map_err(|source| Ns2Error::io(unsupported_path, source))?;
    let mut outcome = RunOutcome {
        directory: directory.to_path_buf(),
        scenario: generated.layout.scenario.clone(),
        unsupported: generated.unsupported.clone(),
        notes: generated.notes.clone(),
        wall_time: None,
    };
    if options.dry_run {
        return Ok(outcome);
    }
    let ns = find_ns(&options.ns_path)?;
    let output_path = directory.join(OUTPUT_NAME);
    let errors_path = directory.join(ERRORS_NAME);
    let stdout =
        File::create(&output_path).map_err(|source| Ns2Error::io(output_path.clone(), source))?;
    let stderr =
        File::create(&errors_path).map_err(|source| Ns2Error::io(errors_path.clone(), source))?;
    let started = Instant::now();
    let mut child = Command::new(&ns)
        .arg(SCRIPT_NAME)
        .current_dir(directory)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .map_err(|source| Ns2Error::io(ns.clone(), source))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= options.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Ns2Error::Timeout {
                    script,
                    seconds: options.timeout.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(source) => return Err(Ns2Error::io(ns, source)),
        }
    };
    outcome.wall_time = Some(started.elapsed());
    let output = std::fs::read_to_string(&output_path)
        .map_err(|source| Ns2Error::io(output_path.clone(), source))?;
    let errors = std::fs::read_to_string(&errors_path).unwrap_or_default();
    if !status.success() {
        return Err(Ns2Error::NsFailed {
            script,
            status: status.to_string(),
            output_tail: tail(&format!("{errors}{output}"), 15),
        });
    }
    let samples_path = directory.join(SAMPLES_FILE);
    let samples = std::fs::read_to_string(&samples_path)
        .map_err(|source| Ns2Error::io(samples_path.clone(), source))?;
    let converted = convert_samples(&generated.layout, &samples, &output, &samples_path)?;
    write_outputs(&converted, directory)?;
    if !options.keep_tcl {
        let _ = std::fs::remove_file(&script);
        let _ = std::fs::remove_file(&output_path);
        let _ = std::fs::remove_file(&samples_path);
    }
    if errors.trim().is_empty() {
        let _ = std::fs::remove_file(&errors_path);
    }
    Ok(outcome)
}

fn unsupported_text(generated: &Generated) -> String {
    let mut text =
        String::from("# Scenario features ns-2 cannot express (the run goes without them)\n");
    if generated.unsupported.is_empty() {
        text.push_str("(none)\n");
    }
    for line in &generated.unsupported {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("\n# Approximate mappings\n");
    if generated.notes.is_empty() {
        text.push_str("(none)\n");
    }
    for line in &generated.notes {
        text.push_str(line);
        text.push('\n');
    }
    text
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
