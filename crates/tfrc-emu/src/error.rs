//! The emulator's error type: what went wrong in the relay, the testbed or a testbed run.
//!
//! Every message is the text the command line prints. An error with a context (`cannot create
//! X`) keeps its cause as its [`std::error::Error::source`], so a front end that prints the
//! chain (anyhow's `Error: …\n\nCaused by: …`, or [`chain`]'s `a: b`) prints what it printed
//! when the context was added with anyhow.

use std::path::PathBuf;

use crate::element_syntax::SpecError;

/// What went wrong in the emulator (relay or testbed).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system call failed; `context` says which (its cause is the source).
    #[error("{context}")]
    Io {
        /// What was being done (`cannot create /run/tfrc-emu`).
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// An operating-system call failed (the OS error's own text).
    #[error(transparent)]
    Os(#[from] std::io::Error),
    /// A command-line element (`--queue`, `--loss`, …) is malformed.
    #[error(transparent)]
    Syntax(#[from] SpecError),
    /// A network element's parameters are invalid (the simulator's check).
    #[error(transparent)]
    Parameter(#[from] tfrc_sim::ParameterError),
    /// A delivery trace file cannot be read.
    #[error(transparent)]
    Trace(#[from] tfrc_sim::TraceError),
    /// A scenario file cannot be read or used.
    #[error(transparent)]
    Scenario(#[from] tfrc_scenario::ScenarioError),
    /// A scenario's flow cannot be configured as the simulator would.
    #[error(transparent)]
    Simulation(#[from] tfrc_sim::simulation::SimulationError),
    /// An output file (`flows.csv`, `state.csv`) cannot be written.
    #[error(transparent)]
    Output(#[from] tfrc_output::WriteError),
    /// A TFRC receiver of a testbed run failed.
    #[error(transparent)]
    Receiver(#[from] tfrc_udp::receiver::ReceiverError),
    /// A TFRC sender of a testbed run failed.
    #[error(transparent)]
    Sender(#[from] tfrc_udp::sender::SenderError),
    /// A state file or summary cannot be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The request or configuration is refused; the message says why.
    #[error("{0}")]
    Invalid(String),
    /// The testbed cannot run on this machine (not root, no `/dev/net/tun`, no `ip`).
    #[error("{0}")]
    Unavailable(String),
    /// A command, namespace or thread the emulator depends on failed; the message says which.
    #[error("{0}")]
    Failed(String),
}

/// The emulator's result type.
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
    /// An OS error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// `cannot create PATH` with its OS error.
    pub fn create(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::io(format!("cannot create {}", path.into().display()), source)
    }
}

/// Adds a context to an OS error, as anyhow's `Context` did: `result.context("cannot …")`.
pub trait IoContext<T> {
    /// The error with this context.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// The error with a context computed only on failure.
    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T> IoContext<T> for core::result::Result<T, std::io::Error> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|source| Error::io(context, source))
    }

    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|source| Error::io(context(), source))
    }
}

/// Returns early with [`Error::Invalid`] and a formatted message: a refused request or
/// configuration (anyhow's `bail!`, typed).
macro_rules! invalid {
    ($($message:tt)*) => {
        return Err($crate::error::Error::Invalid(format!($($message)*)))
    };
}
pub(crate) use invalid;

/// Returns early with [`Error::Failed`] and a formatted message: a command, namespace or thread
/// the emulator depends on failed.
macro_rules! failed {
    ($($message:tt)*) => {
        return Err($crate::error::Error::Failed(format!($($message)*)))
    };
}
pub(crate) use failed;

/// An error and its causes on one line, `outer: cause: cause` (anyhow's `{:#}`), for warnings.
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_keeps_its_cause_as_the_source() {
        let error = Err::<(), _>(std::io::Error::from(std::io::ErrorKind::NotFound))
            .context("cannot open x")
            .unwrap_err();
        assert_eq!(error.to_string(), "cannot open x");
        assert_eq!(chain(&error), "cannot open x: entity not found");
    }
}
