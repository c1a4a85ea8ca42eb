//! Errors of generation, running and conversion, each naming the bad input.

use std::path::PathBuf;

/// What can go wrong between a scenario and its converted ns-2 output.
#[derive(Debug, thiserror::Error)]
pub enum Ns2Error {
    /// The scenario cannot be turned into an ns-2 script at all (not merely approximated: those
    /// cases are listed in [`crate::Generated::unsupported`]).
    #[error("{file}: {key}: cannot be expressed in ns-2: {message}")]
    Generate {
        /// The scenario file.
        file: String,
        /// The scenario key at fault (`flow[2].packet_size`).
        key: String,
        /// Why.
        message: String,
    },
    /// The scenario file, an override or a sweep is invalid.
    #[error(transparent)]
    Scenario(#[from] tfrc_scenario::ScenarioError),
    /// Reading or writing a file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The `ns` binary is missing or not executable.
    #[error(
        "ns-2 not found at {}: install it (Debian: `apt-get install ns2`) or pass --ns PATH",
        path.display()
    )]
    NsNotFound {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// ns-2 exited with a failure.
    #[error("ns-2 failed on {} ({status}); last lines of its output:\n{output_tail}", script.display())]
    NsFailed {
        /// The script it ran.
        script: PathBuf,
        /// Its exit status.
        status: String,
        /// The last lines of its standard error and output.
        output_tail: String,
    },
    /// ns-2 ran longer than the timeout and was killed.
    #[error("ns-2 did not finish {} within {seconds} s and was killed (raise --timeout)", script.display())]
    Timeout {
        /// The script it ran.
        script: PathBuf,
        /// The timeout in seconds.
        seconds: u64,
    },
    /// A line ns-2 printed does not have the form the generated script writes.
    #[error(transparent)]
    Parse(#[from] tfrc_output::external::SampleLineError),
    /// Writing a CSV file failed.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The CSV file.
        path: PathBuf,
        /// The underlying error.
        source: csv::Error,
    },
}

impl Ns2Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Ns2Error {
        Ns2Error::Io {
            path: path.into(),
            source,
        }
    }
}
