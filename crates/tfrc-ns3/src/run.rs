//! Running the ns-3 program on a run description and converting what it writes.

use core::time::Duration;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use tfrc_scenario::Scenario;

use crate::convert::{convert_samples, write_outputs};
use crate::describe::{describe_with, BbrModel, Described};
use crate::error::Ns3Error;
use crate::program::{build_program, BuildOptions};

/// The run description's file name in the output directory.
pub const DESCRIPTION_NAME: &str = "ns3-run.txt";
/// The program's samples.
pub const SAMPLES_NAME: &str = "ns3-samples.txt";
/// The program's standard output and error.
const OUTPUT_NAME: &str = "ns3-output.txt";
/// The unsupported features and approximation notes of the run.
pub const UNSUPPORTED_NAME: &str = "ns3-unsupported.txt";

/// How to run ns-3.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// How to build the program.
    pub build: BuildOptions,
    /// Kill the program after this long.
    pub timeout: Duration,
    /// Keep the run description (`ns3-run.txt`), the samples (`ns3-samples.txt`) and the
    /// program's output (`ns3-output.txt`) after a successful run; they are always kept when
    /// the run fails.
    pub keep: bool,
    /// Write the run description and the unsupported list only; build and run nothing.
    pub dry_run: bool,
    /// The ns-3 BBR that `variant = "bbr"` flows run.
    pub bbr: BbrModel,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            build: BuildOptions::default(),
            timeout: Duration::from_secs(3600),
            keep: false,
            dry_run: false,
            bbr: BbrModel::default(),
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
    /// The features ns-3 could not express (see [`Described::unsupported`]).
    pub unsupported: Vec<String>,
    /// The approximations (see [`Described::notes`]).
    pub notes: Vec<String>,
    /// The program's wall-clock time, `None` for a dry run.
    pub wall_time: Option<Duration>,
    /// How long building the program took, when this run built it.
    pub compile_time: Option<Duration>,
}

/// Runs `scenario` in ns-3 into `directory`: one run for a scenario without a sweep, or one
/// run per variant into `directory/<variant name>/` for a scenario with one. Each run
/// directory gets `scenario.toml` (the resolved variant), `ns3-unsupported.txt`, and (unless a
/// dry run) `flows.csv`, `state.csv`, `links.csv` and `summary.json`.
pub fn run_scenario(
    scenario: &Scenario,
    directory: &Path,
    options: &RunOptions,
) -> Result<Vec<RunOutcome>, Ns3Error> {
    let variants = scenario.expand()?;
    // Describe everything first, so that a variant ns-3 cannot run stops the sweep before any
    // run.
    let described = variants
        .iter()
        .map(|variant| describe_with(variant, options.bbr))
        .collect::<Result<Vec<_>, _>>()?;
    let mut outcomes = Vec::with_capacity(variants.len());
    for (variant, described) in variants.iter().zip(&described) {
        let run_directory = scenario
            .prepare_run_directory(variant, directory)
            .map_err(|error| Ns3Error::io(error.path, error.source))?;
        outcomes.push(run_described(described, &run_directory, options)?);
    }
    Ok(outcomes)
}

/// Writes `described` into `directory` (created if needed), builds the program if needed, runs
/// it and converts its samples; with `options.dry_run`, writes the description and the
/// unsupported list only.
pub fn run_described(
    described: &Described,
    directory: &Path,
    options: &RunOptions,
) -> Result<RunOutcome, Ns3Error> {
    std::fs::create_dir_all(directory)
        .map_err(|source| Ns3Error::io(directory.to_path_buf(), source))?;
    let description = directory.join(DESCRIPTION_NAME);
    std::fs::write(&description, &described.description)
        .map_err(|source| Ns3Error::io(description.clone(), source))?;
    let unsupported_path = directory.join(UNSUPPORTED_NAME);
    std::fs::write(&unsupported_path, unsupported_text(described))
        .map_err(|source| Ns3Error::io(unsupported_path, source))?;
    let mut outcome = RunOutcome {
        directory: directory.to_path_buf(),
        scenario: described.layout.scenario.clone(),
        unsupported: described.unsupported.clone(),
        notes: described.notes.clone(),
        wall_time: None,
        compile_time: None,
    };
    if options.dry_run {
        return Ok(outcome);
    }
    let program = build_program(&options.build)?;
    outcome.compile_time = program.compile_time;
    let started = Instant::now();
    execute(&program.path, directory, options.timeout)?;
    outcome.wall_time = Some(started.elapsed());
    let samples_path = directory.join(SAMPLES_NAME);
    let samples = std::fs::read_to_string(&samples_path)
        .map_err(|source| Ns3Error::io(samples_path.clone(), source))?;
    let converted = convert_samples(&described.layout, &samples, &samples_path)?;
    write_outputs(&converted, directory)?;
    let output_path = directory.join(OUTPUT_NAME);
    let quiet = std::fs::read_to_string(&output_path).is_ok_and(|text| text.trim().is_empty());
    if !options.keep {
        let _ = std::fs::remove_file(&description);
        let _ = std::fs::remove_file(&samples_path);
    }
    if !options.keep || quiet {
        let _ = std::fs::remove_file(&output_path);
    }
    Ok(outcome)
}

/// Runs `program` on the description in `directory`, its output into `ns3-output.txt`, killed
/// after `timeout`.
fn execute(program: &Path, directory: &Path, timeout: Duration) -> Result<(), Ns3Error> {
    let description = directory.join(DESCRIPTION_NAME);
    let output_path = directory.join(OUTPUT_NAME);
    let output =
        File::create(&output_path).map_err(|source| Ns3Error::io(output_path.clone(), source))?;
    let errors = output
        .try_clone()
        .map_err(|source| Ns3Error::io(output_path.clone(), source))?;
    let started = Instant::now();
    let mut child = Command::new(program)
        .args([DESCRIPTION_NAME, SAMPLES_NAME])
        .current_dir(directory)
        .stdin(Stdio::null())
        .stdout(output)
        .stderr(errors)
        .spawn()
        .map_err(|source| Ns3Error::io(program.to_path_buf(), source))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(Ns3Error::Timeout {
                    description,
                    seconds: timeout.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(source) => return Err(Ns3Error::io(program.to_path_buf(), source)),
        }
    };
    if !status.success() {
        let printed = std::fs::read_to_string(&output_path).unwrap_or_default();
        return Err(Ns3Error::Ns3Failed {
            description,
            status: status.to_string(),
            output_tail: tail(&printed, 15),
        });
    }
    Ok(())
}

/// The text of `ns3-unsupported.txt`.
fn unsupported_text(described: &Described) -> String {
    let mut text =
        String::from("# Scenario features ns-3 cannot express (the run goes without them)\n");
    if described.unsupported.is_empty() {
        text.push_str("(none)\n");
    }
    for line in &described.unsupported {
        text.push_str(line);
        text.push('\n');
    }
    text.push_str("\n# Approximate mappings\n");
    for line in described
        .notes
        .iter()
        .map(String::as_str)
        .chain(FIXED_NOTES.iter().copied())
    {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// What every ns-3 run approximates, whatever the scenario.
const FIXED_NOTES: &[&str] = &[
    "link: ns-3's point-to-point devices add a 2-byte PPP header to every packet on the wire; \
     a packet of packet_size bytes takes packet_size + 2 bytes of link time (departure_bytes \
     count the IP packet, as our simulator)",
    "tcp: ns-3 runs its own TCP: PRR recovery (TcpPrrRecovery), no timestamps, MinRto 200 ms, \
     initial RTO 1 s (see docs/ns3.md)",
];

/// The last `lines` lines of `text`.
pub(crate) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}
