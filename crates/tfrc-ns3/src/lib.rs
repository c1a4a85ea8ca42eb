//! ns-3 side by side: run a scenario file (`docs/scenario-format.md`) in ns-3.37 and convert
//! its output to the toolkit's own schema (`docs/output-format.md`), as `tfrc-ns2` does for
//! ns-2.35, so one plot or analysis script reads our simulator's results and ns-3's alike.
//!
//! - [`describe`] writes the run description of one concrete scenario (no sweep, `count`
//!   expanded): nodes, links, queues, loss, TCP and CBR flows and their routes (from the one
//!   route function), and lists what ns-3 cannot express ([`Described::unsupported`]) and
//!   where the mapping is approximate ([`Described::notes`]). Nothing is dropped silently.
//! - [`build_program`] builds the one shipped C++ program (`ns3/tfrc-ns3.cc`, embedded in the
//!   binary) against the installed ns-3 once per source version, into a cache directory.
//! - [`run_scenario`] writes the description, runs the program with a timeout and converts
//!   the counters it writes into `flows.csv`, `state.csv`, `links.csv` and `summary.json`.
//! - The `tfrc ns3` command line is in `tfrc-cli`, which fills [`RunOptions`] and reports
//!   [`Ns3Error`].
//!
//! The mapping table and the list of unsupported features are in `docs/ns3.md`.

mod convert;
mod describe;
mod error;
mod program;
mod run;

pub use convert::{convert_samples, write_outputs, Converted};
pub use describe::{
    describe, describe_with, BbrModel, Described, DirectionLayout, FlowLayout, Layout,
    NS3_TCP_HEADER_BYTES, NS3_UDP_HEADER_BYTES,
};
pub use error::Ns3Error;
pub use program::{
    build_program, default_cache_dir, missing_toolchain, ns3_flags, BuildOptions, Program,
    NS3_MODULES, PROGRAM_SOURCE,
};
pub use run::{
    run_described, run_scenario, RunOptions, RunOutcome, DESCRIPTION_NAME, SAMPLES_NAME,
    UNSUPPORTED_NAME,
};
