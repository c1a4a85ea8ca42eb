//! Link emulator and network-namespace testbed for TFRC experiments.
//!
//! The emulator drives the **same** sans-IO network elements as the simulator
//! ([`tfrc_sim::LinkDirection`]: token-bucket markers, loss models, DropTail/RED/RIO queues,
//! fixed-rate or Mahimahi-trace transmitters, propagation delay) with wall-clock time instead of
//! simulated time, so a scenario means the same thing in both. One implementation, two clocks.
//!
//! - [`element_syntax`]: the command-line element syntax (`droptail:50`, `red:min_th=5`, `bernoulli:0.01`,
//!   `token-bucket:800kbps:10000`, per-direction `forward=`/`reverse=` prefixes) turned into
//!   [`tfrc_sim::LinkDirectionConfig`]s.
//! - [`network`]: a set of link directions and routes through them; packet bodies are kept
//!   beside, keyed by [`tfrc_sim::PacketMeta::id`].
//! - [`realtime`]: the wall clock mapped onto [`tfrc_proto::Instant`], and a waiter that sleeps
//!   in `ppoll` until shortly before a deadline and spins the rest.
//! - [`relay`]: relay mode, a UDP relay between a sender and a receiver (`tfrc emulate`), no
//!   privileges needed.
//! - [`testbed`]: testbed mode (root): network namespaces joined through TUN devices served by
//!   the emulator, so that any traffic, kernel TCP included, crosses the emulated topology
//!   (`tfrc testbed up|down|exec|run`).
//! - [`testbed_run`]: a scenario file run for real on a testbed (`tfrc testbed run`), writing
//!   the simulator's output files.
//! - [`error`]: the typed errors of all of it.
//! - [`linklog`]: per-direction `links.csv` rows (the simulator's schema); captures of the
//!   bottleneck go through the simulator's pcap writer (`tfrc_sim::pcap`).
//!
//! The command line (`tfrc emulate`, `tfrc testbed`) is in `tfrc-cli`; this crate takes typed
//! options ([`relay::RelayConfig`], [`testbed::TestbedConfig`], [`testbed_run::RunOptions`]).
//!
//! See `docs/emulator.md` for the syntax, the guarantees and the measured accuracy.

pub mod element_syntax;
pub mod error;
pub mod linklog;
pub mod network;
pub mod realtime;
pub mod relay;
pub mod testbed;
pub mod testbed_run;

pub use error::{Error, Result};
