//! Link emulator and network-namespace testbed for TFRC experiments.
//!
//! The emulator drives the **same** sans-IO network elements as the simulator
//! ([`tfrc_sim::LinkDirection`]: token-bucket markers, loss models, DropTail/RED/RIO queues,
//! fixed-rate or Mahimahi-trace transmitters, propagation delay) with wall-clock time instead of
//! simulated time, so a scenario means the same thing in both. One implementation, two clocks.
//!
//! - [`spec`]: the command-line element syntax (`droptail:50`, `red:min_th=5`, `bernoulli:0.01`,
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
//! - [`linklog`]: per-direction `links.csv` rows (the simulator's schema); captures of the
//!   bottleneck go through the simulator's pcap writer (`tfrc_sim::pcap`).
//!
//! See `docs/emulator.md` for the syntax, the guarantees and the measured accuracy.

pub mod cli;
pub mod linklog;
pub mod network;
pub mod realtime;
pub mod relay;
pub mod scenario;
pub mod spec;
pub mod testbed;
