//! ETP: a connection-oriented, message-oriented transport whose service is composed of
//! micro-mechanisms chosen by a QoS session descriptor, after the gTFRC paper's ETP.
//!
//! - [`descriptor`]: the QoS session descriptor (TOML or JSON) and its validation.
//! - [`rate`]: rate control — TFRC, gTFRC (target rate floor), fixed rate, none.
//! - [`mechanisms`]: reliability (none, full, partial), time control (deadlines), multiplexing
//!   (strict or weighted priorities) and ordering (none, per stream/group, full).
//! - [`connection`]: the sans-IO [`Connection`] state machine (`handle_datagram`,
//!   `handle_timeout`, `poll_transmit`, `poll_timeout`, integer [`tfrc_proto::Instant`] time).
//! - [`listener`]: stateless connection set-up with a cookie.
//! - [`wire`]: packet and frame formats, parsed with bounds checks.
//! - [`harness`]: a deterministic in-process lossy link driving two connections in virtual
//!   time (tests, `tfrc stream --simulate`).
//!
//! The core does no I/O: the UDP driver is the `etp-udp` crate (`connect` / `listen` →
//! `Session`), and `tfrc stream`, the synthetic video source over ETP, is in `tfrc-cli`.
//!
//! See `docs/etp.md` for the descriptor schema and the API.

pub mod connection;
pub mod descriptor;
pub mod harness;
pub mod listener;
pub mod mechanisms;
pub mod rate;
pub mod wire;

pub use connection::{
    fragment_room, tfrc_rate_carrying, CloseReason, Connection, ConnectionError, ConnectionStats,
    Event, Message, MessageOptions, Policy, PolicyError, SetupError, State, StreamStats,
};
pub use descriptor::{Descriptor, DescriptorError, StreamDescriptor, ValueError};
pub use harness::{HarnessError, LinkConfigError};
pub use listener::{Listener, ListenerConfig, ListenerOutput, ListeningEnd};
