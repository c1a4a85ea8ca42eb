//! TFRC over real networks: the `tfrc-proto` core driven over UDP sockets, kernel TCP flows for
//! comparison, and a logger of every flow's variables.
//!
//! The core has no sockets, clocks or randomness; this crate supplies them:
//! - [`sender::UdpSender`]: one TFRC flow over a connected UDP socket, paced by sleeping until
//!   shortly before each send time and spinning the rest ([`pacing`]); the session id and nonce
//!   come from the operating system's random source.
//! - [`receiver::UdpReceiver`]: several concurrent flows on one socket, demultiplexed by session
//!   id, with bounded state (flow count, idle expiry) and counted, dropped bad input.
//! - [`control`]: what this driver adds on the wire (flow options in the payload, end of session).
//! - [`tcp`]: kernel TCP bulk flows with a chosen congestion control, sampled through
//!   `TCP_INFO` ([`tcp_info`]).
//! - [`logger`]: the one-call logger: local ports and an interval in, one CSV file per flow out
//!   (TFRC flows of this process and TCP connections of any process via [`diag`]).
//! - [`batch`]: many datagrams per system call (UDP GSO and GRO).
//!
//! The `tfrc send` and `tfrc recv` commands built on these live in `tfrc-cli` (`udp/`).
//!
//! Linux only: pacing uses `ppoll` and `PR_SET_TIMERSLACK`, TCP sampling `TCP_INFO` and
//! sock_diag.

pub mod batch;
pub mod clock;
pub mod control;
pub mod csvlog;
pub mod diag;
pub mod logger;
pub mod pacing;
pub mod port_set;
pub mod receiver;
pub mod registry;
mod schedule;
pub mod sender;
pub mod sockopt;
pub mod tcp;
pub mod tcp_info;

pub use receiver::{ReceiverOptions, ReceiverReport, UdpReceiver};
pub use sender::{SenderOptions, SenderReport, UdpSender};
