//! Loading a run directory: the four files every run writes (`docs/output-format.md`).
//!
//! `tfrc sim`, the testbed and the ns-2 converter all write `flows.csv`, `state.csv`,
//! `links.csv` and `summary.json` into one directory; [`Run::load`] reads them into typed rows
//! so that metrics and plots work on any source alike. A CSV file may also be gzip-compressed
//! (`flows.csv.gz`, as `tfrc reproduce` stores its runs): either form is read. Every error names
//! the file and, where there is one, the line.
//!
//! Columns are matched by header name, so columns added at the end by a later schema version
//! are ignored; a `schema_version` other than [`SCHEMA_VERSION`] is refused, since it means a
//! column was renamed or removed.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;

use tfrc_output::RowFile;
pub use tfrc_output::{
    BottleneckSummary, FlowRow, FlowSummary, LinkRow, LinkSummary, Rows, StateRow, Summary,
    FLOWS_FILE, LINKS_FILE, SCHEMA_VERSION, STATE_FILE, SUMMARY_FILE,
};

/// What went wrong while loading a run directory. Each variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The file could not be opened or read (missing, permissions, ...).
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A CSV file is malformed: wrong header, a value that does not parse, a short row.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(": line {l}")).unwrap_or_default())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The 1-based line (the header is line 1), if known.
        line: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// `summary.json` is not valid JSON or does not match the schema.
    #[error("{}: line {line}, column {column}: {message}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// `summary.json` declares a schema version this crate does not read.
    #[error("{}: schema_version {found} is not supported (this tool reads version {SCHEMA_VERSION})", path.display())]
    UnsupportedSchema {
        /// The file.
        path: PathBuf,
        /// The version found.
        found: u32,
    },
    /// A row names a flow that `summary.json` does not list.
    #[error("{}: line {line}: flow `{flow}` is not listed in {SUMMARY_FILE}", path.display())]
    UnknownFlow {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// The flow name found.
        flow: String,
    },
}

/// Which end of a flow a throughput series is measured at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Bytes the sender put on the wire (`send_kbps`).
    Sent,
    /// Bytes that reached the receiver, headers and duplicates included (`recv_kbps`).
    Received,
    /// Application payload the receiver delivered (`goodput_kbps`).
    Goodput,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Sent => "sender",
            Direction::Received => "receiver",
            Direction::Goodput => "goodput",
        })
    }
}

/// A loaded run directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The directory it was loaded from.
    pub dir: PathBuf,
    /// `summary.json`.
    pub summary: Summary,
    /// `flows.csv` rows, in file order.
    pub flows: Vec<FlowRow>,
    /// `state.csv` rows, in file order.
    pub states: Vec<StateRow>,
    /// `links.csv` rows, in file order.
    pub links: Vec<LinkRow>,
}

impl Run {
    /// The same run with its summary only: what a replication whose time series were not kept
    /// still answers (goodputs, receiving ratios, mean p and RTT, Jain index).
    pub fn summary_only(&self) -> Run {
        Run {
            dir: self.dir.clone(),
            summary: self.summary.clone(),
            flows: Vec::new(),
            states: Vec::new(),
            links: Vec::new(),
        }
    }

    /// A run kept in memory ([`tfrc_output::Rows`], e.g. from the simulator's `keep_rows`), as
    /// if loaded from `dir`: the same checks as [`Run::load`] (every row's flow is listed in
    /// the summary), with errors naming the file the row would be in.
    pub fn from_rows(dir: impl AsRef<Path>, summary: Summary, rows: Rows) -> Result<Run, RunError> {
        let dir = dir.as_ref().to_path_buf();
        let known: HashSet<&str> = summary.flows.iter().map(|f| f.name.as_str()).collect();
        check_flows(
            &dir.join(FLOWS_FILE),
            rows.flows.iter().map(|r| r.flow.as_str()),
            &known,
        )?;
        check_flows(
            &dir.join(STATE_FILE),
            rows.states.iter().map(|r| r.flow.as_str()),
            &known,
        )?;
        Ok(Run {
            dir,
            summary,
            flows: rows.flows,
            states: rows.states,
            links: rows.links,
        })
    }

    /// Loads the four files of a run directory. Every file must exist, each CSV file plain or
    /// gzip-compressed (`flows.csv.gz`; the plain one is read when both are there), a
    /// header-only CSV is fine; every row's flow must be listed in `summary.json`.
    pub fn load(dir: impl AsRef<Path>) -> Result<Run, RunError> {
        let dir = dir.as_ref().to_path_buf();
        let summary = read_summary(&dir.join(SUMMARY_FILE))?;
        let known: HashSet<&str> = summary.flows.iter().map(|f| f.name.as_str()).collect();

        let (flows_path, flows) = read_csv::<FlowRow>(&dir, RowFile::Flows)?;
        check_flows(&flows_path, flows.iter().map(|r| r.flow.as_str()), &known)?;
        let (state_path, states) = read_csv::<StateRow>(&dir, RowFile::State)?;
        check_flows(&state_path, states.iter().map(|r| r.flow.as_str()), &known)?;
        let (_, links) = read_csv::<LinkRow>(&dir, RowFile::Links)?;
        Ok(Run {
            dir,
            summary,
            flows,
            states,
            links,
        })
    }

    /// Flow names in scenario order (the order of `summary.json`).
    pub fn flow_names(&self) -> Vec<&str> {
        self.summary.flows.iter().map(|f| f.name.as_str()).collect()
    }

    /// The summary of one flow.
    pub fn flow_summary(&self, flow: &str) -> Option<&FlowSummary> {
        self.summary.flows.iter().find(|f| f.name == flow)
    }

    /// The `flows.csv` rows of one flow, in time order.
    pub fn flow_rows<'a>(&'a self, flow: &'a str) -> impl Iterator<Item = &'a FlowRow> + 'a {
        self.flows.iter().filter(move |r| r.flow == flow)
    }

    /// Throughput of one flow over time: `(time_s, kb/s)` per interval, at the sender or the
    /// receiver. Empty if the flow is unknown.
    pub fn throughput_series(&self, flow: &str, direction: Direction) -> Vec<(f64, f64)> {
        self.flow_rows(flow)
            .map(|r| {
                let kbps = match direction {
                    Direction::Sent => r.send_kbps,
                    Direction::Received => r.recv_kbps,
                    Direction::Goodput => r.goodput_kbps,
                };
                (r.time_s, kbps)
            })
            .collect()
    }

    /// A state column of one flow over time, skipping samples where it is empty.
    pub fn state_series(
        &self,
        flow: &str,
        column: impl Fn(&StateRow) -> Option<f64>,
    ) -> Vec<(f64, f64)> {
        self.states
            .iter()
            .filter(|r| r.flow == flow)
            .filter_map(|r| column(r).map(|v| (r.time_s, v)))
            .collect()
    }

    /// The numeric columns of `state.csv` a figure can draw: its header (the row type's serde
    /// field names) without `time_s`, `flow` and `kind`.
    pub fn state_columns() -> Vec<&'static str> {
        tfrc_output::header(tfrc_output::RowFile::State)
            .split(',')
            .filter(|name| !matches!(*name, "time_s" | "flow" | "kind"))
            .collect()
    }

    /// The `state.csv` column named `column` (one of [`Run::state_columns`]) of one flow over
    /// time, skipping empty cells. The column is found by its serde name, so the names are those
    /// of the file's header with no second list.
    pub fn state_column_series(&self, flow: &str, column: &str) -> Vec<(f64, f64)> {
        self.state_series(flow, |row| {
            serde_json::to_value(row)
                .ok()?
                .get(column)
                .and_then(serde_json::Value::as_f64)
        })
    }

    /// The sender's RTT estimate over time `(time_s, s)`.
    pub fn rtt_series(&self, flow: &str) -> Vec<(f64, f64)> {
        self.state_series(flow, |r| r.rtt_s)
    }

    /// The loss event rate the sender received over time `(time_s, p)` (TFRC flows).
    pub fn loss_event_rate_series(&self, flow: &str) -> Vec<(f64, f64)> {
        self.state_series(flow, |r| r.p)
    }

    /// The rows of one link direction, in time order.
    pub fn link_rows<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
    ) -> impl Iterator<Item = &'a LinkRow> + 'a {
        self.links
            .iter()
            .filter(move |r| r.from == from && r.to == to)
    }
}

fn read_summary(path: &Path) -> Result<Summary, RunError> {
    let text = std::fs::read_to_string(path).map_err(|source| RunError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // Check the version first, so a newer file gives the version error, not a field error.
    #[derive(Deserialize)]
    struct Version {
        schema_version: u32,
    }
    let json_error = |e: serde_json::Error| RunError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    };
    let version: Version = serde_json::from_str(&text).map_err(json_error)?;
    if version.schema_version != SCHEMA_VERSION {
        return Err(RunError::UnsupportedSchema {
            path: path.to_path_buf(),
            found: version.schema_version,
        });
    }
    serde_json::from_str(&text).map_err(json_error)
}

/// The rows of one CSV file of `dir`, plain or compressed ([`tfrc_output::open_row_file`]),
/// with the path read (errors name it).
fn read_csv<T: DeserializeOwned>(dir: &Path, file: RowFile) -> Result<(PathBuf, Vec<T>), RunError> {
    let (path, opened) = tfrc_output::open_row_file(dir, file);
    let input = opened.map_err(|source| RunError::Io {
        path: path.clone(),
        source,
    })?;
    let mut reader = csv::ReaderBuilder::new().from_reader(std::io::BufReader::new(input));
    let headers = reader
        .headers()
        .map_err(|e| csv_error(&path, None, e))?
        .clone();
    let mut rows = Vec::new();
    for result in reader.deserialize::<T>() {
        rows.push(result.map_err(|e| csv_error(&path, Some(&headers), e))?);
    }
    Ok((path, rows))
}

fn csv_error(path: &Path, headers: Option<&csv::StringRecord>, error: csv::Error) -> RunError {
    let line = error.position().map(|p| p.line());
    let message = match error.kind() {
        csv::ErrorKind::Deserialize { err, .. } => {
            let column = err.field().map(|index| {
                headers
                    .and_then(|h| h.get(index as usize))
                    .map(|name| format!("column `{name}`"))
                    .unwrap_or_else(|| format!("column {}", index + 1))
            });
            match (column, err.kind()) {
                (Some(column), kind) => format!("{column}: {kind}"),
                // A missing header field is reported without a field index.
                (None, kind) => kind.to_string(),
            }
        }
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("{len} fields, the header has {expected_len}"),
        csv::ErrorKind::Io(e) => e.to_string(),
        _ => error.to_string(),
    };
    RunError::Csv {
        path: path.to_path_buf(),
        line,
        message,
    }
}

fn check_flows<'a>(
    path: &Path,
    names: impl Iterator<Item = &'a str>,
    known: &HashSet<&str>,
) -> Result<(), RunError> {
    for (index, name) in names.enumerate() {
        if !known.contains(name) {
            return Err(RunError::UnknownFlow {
                path: path.to_path_buf(),
                line: index as u64 + 2,
                flow: name.to_string(),
            });
        }
    }
    Ok(())
}
