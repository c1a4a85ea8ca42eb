//! Sans-IO TCP-Friendly Rate Control (RFC 5348) with the gTFRC, feedbacks-per-RTT and Veno
//! extensions.
//!
//! **Determinism promise:** this crate has no sockets, threads, clocks or randomness. Every
//! input (time included, as [`Instant`]) is passed in by the caller, so the same sequence of calls
//! always produces the same packets, timers and state. The simulator, the emulator and the UDP
//! tools drive this one implementation.
//!
//! - [`equation`]: the throughput equation X(s, R, p) and its inverse.
//! - [`Sender`] / [`Receiver`]: the protocol state machines (`handle_*` inputs, `poll_*`
//!   outputs), configured by one [`Config`]; the extensions are options of that config.
//! - [`wire`]: data and feedback packets, parsed with bounds checks.
//! - [`Profile`]: RFC 5348 (default) or ns-2.35's TFRC ([`Config::ns2`]), whose extra rules live
//!   in [`ns2`], for side-by-side runs against ns-2.
//!
//! # Example: a sender and a receiver driven by hand
//! ```
//! use core::time::Duration;
//! use tfrc_proto::{Config, Instant, Receiver, Sender};
//!
//! let config = Config::default(); // s = 1000 bytes, plain RFC 5348
//! let mut now = Instant::ZERO;
//! let mut sender = Sender::new(config.clone(), 7, 42, now).unwrap();
//! let mut receiver = Receiver::new(config).unwrap();
//! let one_way = Duration::from_millis(50);
//!
//! let mut packet = [0u8; 1500];
//! let mut feedback = [0u8; tfrc_proto::wire::MAX_FEEDBACK_LEN];
//! for _ in 0..20 {
//!     // Send whatever the schedule allows, deliver it after the one-way delay.
//!     while sender.can_send(now) {
//!         let length = sender.send_padded(now, &mut packet).unwrap();
//!         receiver.handle_packet(now + one_way, &packet[..length]).unwrap();
//!     }
//!     // The receiver answers; its feedback reaches the sender one delay later.
//!     let at_receiver = now + one_way;
//!     if receiver.poll_timeout().is_some_and(|t| t <= at_receiver) {
//!         receiver.handle_timeout(at_receiver);
//!     }
//!     while let Some(length) = receiver.poll_transmit(at_receiver, &mut feedback) {
//!         sender.handle_packet(at_receiver + one_way, &feedback[..length]).unwrap();
//!     }
//!     now = sender.poll_timeout().unwrap().max(now + Duration::from_millis(1));
//!     sender.handle_timeout(now);
//! }
//! let state = sender.state();
//! assert!(state.rtt.is_some());           // an RTT was measured from the echoed timestamps
//! assert!(state.sending_rate > 1000.0);   // and the rate left the initial one packet/second
//! ```

pub mod adversary;
pub mod application;
pub mod config;
mod deque;
pub mod equation;
pub mod loss_history;
pub mod media;
pub mod ns2;
mod numeric;
mod receipts;
pub mod receive_rate;
pub mod receiver;
pub mod sender;
pub mod time;
pub mod wire;

pub use application::CappedApplication;
pub use config::{Config, ConfigError, Profile, SmallPackets, Veno, SMALL_PACKET_MIN_INTERVAL};
pub use media::{Chunk, Frame, FrameLog, MediaConfig, MediaError, MediaSource};
pub use receiver::{ReceiveError, Receiver, ReceiverStats};
pub use sender::{FeedbackError, SendError, Sender, SenderState, SenderStats};
pub use time::Instant;
