//! Errors of describing, building, running and converting, each naming the bad input.

use std::path::PathBuf;

/// What can go wrong between a scenario and its converted ns-3 output.
#[derive(Debug, thiserror::Error)]
pub enum Ns3Error {
    /// The scenario cannot be run in ns-3 at all (not merely approximated: those cases are
    /// listed in [`crate::Described::unsupported`]).
    #[error("{file}: {key}: cannot be expressed in ns-3: {message}")]
    Describe {
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
    /// The C++ compiler could not be started.
    #[error(
        "the C++ compiler {} could not be started ({source}): install it (Debian: \
         `apt-get install g++`) or pass --cxx PATH",
        cxx.display()
    )]
    CompilerNotFound {
        /// The compiler asked for.
        cxx: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// `pkg-config` could not be started.
    #[error(
        "pkg-config ({}) could not be started ({source}): install it (Debian: \
         `apt-get install pkg-config`) or pass --pkg-config PATH",
        path.display()
    )]
    PkgConfigNotFound {
        /// The pkg-config asked for.
        path: PathBuf,
        /// Why it did not start.
        source: std::io::Error,
    },
    /// An ns-3 module's pkg-config file is missing.
    #[error(
        "ns-3.37 is not installed: pkg-config has no {module}.pc (Debian: `apt-get install \
         libns3-dev`; or set PKG_CONFIG_PATH to the directory of ns-3's .pc files)"
    )]
    Ns3NotInstalled {
        /// The first missing module (`ns3-core`).
        module: String,
    },
    /// Compiling the ns-3 program failed.
    #[error("compiling {} failed ({status}); last lines of the compiler's output:\n{stderr_tail}", source_path.display())]
    CompileFailed {
        /// The source it compiled.
        source_path: PathBuf,
        /// The compiler's exit status.
        status: String,
        /// The last lines of its standard error.
        stderr_tail: String,
    },
    /// The ns-3 program exited with a failure.
    #[error("the ns-3 program failed on {} ({status}); last lines of its output:\n{output_tail}", description.display())]
    Ns3Failed {
        /// The run description it read.
        description: PathBuf,
        /// Its exit status.
        status: String,
        /// The last lines of its standard error and output.
        output_tail: String,
    },
    /// The ns-3 program ran longer than the timeout and was killed.
    #[error("ns-3 did not finish {} within {seconds} s and was killed (raise --timeout)", description.display())]
    Timeout {
        /// The run description it read.
        description: PathBuf,
        /// The timeout in seconds.
        seconds: u64,
    },
    /// A line of the program's samples does not have the form it writes.
    #[error(transparent)]
    Parse(#[from] tfrc_output::external::SampleLineError),
}

impl Ns3Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Ns3Error {
        Ns3Error::Io {
            path: path.into(),
            source,
        }
    }
}
