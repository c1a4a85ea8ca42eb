//! Analysis of TFRC runs: loading run directories, metrics, plots and reports.

pub mod metrics;
pub mod plot;
pub mod run;
pub mod table;
