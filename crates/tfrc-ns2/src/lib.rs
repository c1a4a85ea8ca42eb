//! ns-2 side by side: run a scenario file (`docs/scenario-format.md`) in ns-2.35 and convert its
//! output to the toolkit's own schema (`docs/output-format.md`), so one plot or analysis script
//! reads our simulator's results and ns-2's alike.
//!
//! - [`generate`] writes an ns-2 Tcl script for one concrete scenario (no sweep, `count`
//!   expanded) and lists what ns-2 cannot express ([`Generated::unsupported`], each naming the
//!   scenario key) and where the mapping is an approximation ([`Generated::notes`]). Nothing is
//!   dropped silently.
//! - [`run_scenario`] writes the script into a directory, runs `/usr/bin/ns` with a timeout and
//!   converts the samples the script prints into `flows.csv`, `state.csv`, `links.csv` and
//!   `summary.json` (empty cells for what ns-2 does not expose).
//! - The `tfrc ns2` command line (arguments, printing) is in `tfrc-cli`, which fills
//!   [`RunOptions`] and reports [`Ns2Error`].
//!
//! The mapping table and the list of unsupported features are in `docs/ns2.md`.

mod convert;
mod error;
mod generate;
mod nodes;
mod run;
mod tcl;

pub use convert::{convert_samples, write_outputs, Converted};
pub use error::Ns2Error;
pub use generate::{
    generate, loss_rate_flow, DirectionLayout, FlowLayout, FlowSampling, Generated, Layout,
    SampleKind, NS2_TCP_HEADER_BYTES,
};
pub use run::{find_ns, run_generated, run_scenario, RunOptions, RunOutcome, DEFAULT_NS_PATH};
