//! Errors of the simulator's elements: invalid parameters and unreadable traces.
//!
//! Parameters may come from untrusted scenario files, so every constructor validates its input
//! and returns a [`ParameterError`] naming the element, the parameter and what was expected,
//! instead of panicking.

use core::fmt::Display;
use std::path::PathBuf;

use thiserror::Error;

/// A parameter of a network element or traffic source is outside its valid range.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{element}: invalid parameter `{parameter}` = {value}; expected {expected}")]
pub struct ParameterError {
    /// The element being configured, e.g. `"RED queue"`.
    pub element: &'static str,
    /// The parameter's name, e.g. `"max_probability"`.
    pub parameter: &'static str,
    /// The rejected value, formatted.
    pub value: String,
    /// What a valid value looks like, e.g. `"a probability in [0, 1]"`.
    pub expected: &'static str,
}

impl ParameterError {
    /// An error for `parameter` of `element`, which had `value` but should be `expected`.
    pub fn new(
        element: &'static str,
        parameter: &'static str,
        value: impl Display,
        expected: &'static str,
    ) -> Self {
        ParameterError {
            element,
            parameter,
            value: value.to_string(),
            expected,
        }
    }
}

/// `value` if `accepted`, else the error saying `parameter` of `element` expected `expected`.
pub(crate) fn check<T: Display + Copy>(
    element: &'static str,
    parameter: &'static str,
    value: T,
    accepted: bool,
    expected: &'static str,
) -> Result<T, ParameterError> {
    if accepted {
        Ok(value)
    } else {
        Err(ParameterError::new(element, parameter, value, expected))
    }
}

/// `value` if it is a probability in `[0, 1]` (NaN is rejected).
pub(crate) fn check_probability(
    element: &'static str,
    parameter: &'static str,
    value: f64,
) -> Result<f64, ParameterError> {
    let accepted = (0.0..=1.0).contains(&value);
    check(
        element,
        parameter,
        value,
        accepted,
        "a probability in [0, 1]",
    )
}

/// `value` if it is not zero.
pub(crate) fn check_nonzero(
    element: &'static str,
    parameter: &'static str,
    value: u64,
) -> Result<u64, ParameterError> {
    check(
        element,
        parameter,
        value,
        value > 0,
        "a value greater than 0",
    )
}

/// A delivery trace could not be read or is not a valid Mahimahi trace.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The trace file could not be read.
    #[error("cannot read trace file {path}: {source}")]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },
    /// A line is not a valid timestamp.
    #[error("{trace}:{line}: {problem} (line: {content:?})")]
    BadLine {
        /// The trace's name (its file name when read from a file).
        trace: String,
        /// 1-based line number.
        line: usize,
        /// The offending line, shortened to at most 40 characters.
        content: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The trace has no delivery opportunity at all.
    #[error("{trace}: the trace has no delivery opportunities")]
    Empty {
        /// The trace's name.
        trace: String,
    },
    /// The last timestamp is 0, so the trace's period (its duration) would be zero.
    #[error("{trace}: the trace must last a nonzero time (its last timestamp is 0 ms)")]
    ZeroDuration {
        /// The trace's name.
        trace: String,
    },
}
