//! Scenario files for the TFRC toolkit: one TOML format shared by the simulator (`tfrc sim`),
//! the testbed (`tfrc testbed run`) and the reproduction of the papers' experiments
//! (`tfrc reproduce`). The complete reference is `docs/scenario-format.md`.
//!
//! - [`Scenario::from_path`] / [`Scenario::from_str_named`] parse and validate a file. Unknown
//!   keys are errors; every error names the file, the key path (`link[1].queue.min_out`) and
//!   what was expected ([`ScenarioError`]).
//! - [`Scenario::apply_set`] applies a `--set key.path=value` override.
//! - [`Scenario::expand`] turns a scenario with a `[sweep]` into concrete, uniquely named
//!   variants, and expands `count = N` flows into `name.1` … `name.N`.
//! - [`Scenario::route`] finds the fewest-hop route between two nodes, the one route every
//!   consumer (simulator, testbed, ns-2 generator) takes ([`route`]), and
//!   [`Scenario::path_base_rtt`] its base RTT.
//! - [`Scenario::to_toml_string`] writes the resolved scenario (every default explicit) so it
//!   can be recorded beside a run's results; it parses back to an equal scenario.
//!
//! Times are [`core::time::Duration`] (integer nanoseconds) and rates [`Rate`] (integer bits
//! per second): no floating-point time is stored. Parsing never panics, whatever the input.
//!
//! # Example
//! ```
//! use tfrc_scenario::{FlowKind, Rate, Scenario};
//!
//! let text = r#"
//!     name = "demo"
//!     duration = "60s"
//!
//!     [[link]]
//!     between = ["sender", "receiver"]
//!     rate = "1Mbps"
//!     delay = "25ms"
//!
//!     [[flow]]
//!     name = "a"
//!     kind = "tfrc"
//!     from = "sender"
//!     to = "receiver"
//!
//!     [sweep]
//!     "link.0.delay" = ["25ms", "250ms"]
//! "#;
//! let mut scenario = Scenario::from_str_named(text, "demo.toml")?;
//! assert_eq!(scenario.seed, 1); // the default, written out by to_toml_string
//! scenario.apply_set("flow.a.target_rate=600kbps")?;
//! let FlowKind::Tfrc(tfrc) = &scenario.flows[0].kind else { unreachable!() };
//! assert_eq!(tfrc.target_rate, Some(Rate::from_kbps(600)));
//!
//! let variants = scenario.expand()?;
//! let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
//! assert_eq!(names, ["demo[delay=25ms]", "demo[delay=250ms]"]);
//! # Ok::<(), tfrc_scenario::ScenarioError>(())
//! ```

mod emit;
mod error;
mod model;
mod overrides;
mod raw;
mod replicate;
mod resolve;
pub mod route;
mod scenario;
mod sweep;
/// Rates and durations: the toolkit's one units grammar, which scenario files share with every
/// command-line flag.
pub use tfrc_units as units;

pub use error::ScenarioError;
pub use model::{
    Capacity, DownloadPhase, DownloadsSpec, FlowKind, FlowSpec, Link, LinkDirectionSpec, LossModel,
    LossSpec, MarkerKind, MarkerSpec, MediaSpec, MediaTransport, OnOffSpec, Output, QueueSpec,
    RedSpec, RioSpec, SweepAxis, SweepChoice, SweepForm, TcpProfile, TcpSpec, TcpVariant,
    TfrcProfile, TfrcSpec, TfrcVariant, TraceOpportunity, VenoSpec,
};
pub use raw::table_keys;
pub use replicate::replication_seed;
pub use resolve::{
    link_from_table, MAX_FLOW_COUNT, MAX_PACKET_SIZE, MAX_TOML_INTEGER, MAX_TOTAL_FLOWS,
};
pub use route::{Hop, Route, RouteError};
pub use scenario::Scenario;
pub use sweep::MAX_VARIANTS;
pub use units::{Rate, UnitError};
