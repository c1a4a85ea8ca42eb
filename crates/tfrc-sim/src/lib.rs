//! Discrete-event simulation engine and network elements for TFRC experiments.
//!
//! **Determinism promise:** nothing in this crate reads a clock, spawns a thread or touches a
//! global random number generator. Time is passed in as [`Instant`] (integer nanoseconds), and
//! every element that needs randomness owns a [`rand_chacha::ChaCha8Rng`] seeded from a `u64`
//! given at construction (derive per-element seeds from one run seed with [`rng::derive_seed`]).
//! The same inputs therefore always give the same outputs, on every run.
//!
//! The network elements are *sans-IO*: they see only packet metadata ([`PacketMeta`]) and the
//! current time, never packet bodies, sockets or timers. The simulator drives them with
//! simulated time and the link emulator drives the very same elements with wall-clock time.
//!
//! - [`Scheduler`]: the event queue of the simulator, ordered by `(time, insertion order)`.
//! - [`LinkDirection`]: one direction of a link, composed of an optional
//!   [`TokenBucketMarker`], an optional [`LossModel`], a [`Queue`] ([`DropTail`], [`Red`],
//!   [`Rio`]), a [`Transmitter`] (fixed rate or a Mahimahi [`DeliveryTrace`]) and a
//!   propagation delay.
//! - [`source`]: traffic sources (CBR, Pareto and exponential on/off) with ns-2's timing.
//!
//! See `docs/network-elements.md` for the parameters, defaults and the ns-2 behaviour each
//! element mirrors.
//!
//! # Example: a 1 Mb/s, 20 ms link with a DropTail queue
//! ```
//! use core::time::Duration;
//! use tfrc_proto::Instant;
//! use tfrc_sim::{DropTail, LinkDirection, PacketMeta, Transmitter};
//!
//! let mut link = LinkDirection::new(
//!     Transmitter::fixed_rate(1_000_000).unwrap(),
//!     Duration::from_millis(20),
//!     Box::new(DropTail::new(50).unwrap()),
//! );
//! let arrival = link.handle_arrival(Instant::ZERO, PacketMeta::new(1, 7, 1000));
//! assert!(arrival.is_accepted());
//! // 1000 bytes take 8 ms to serialize at 1 Mb/s, then 20 ms to propagate: the link next has
//! // something to show at 28 ms, when the packet reaches the far end.
//! let due = link.poll_timeout().unwrap();
//! assert_eq!(due, Instant::from_millis(28));
//! link.handle_timeout(Instant::from_millis(8));
//! assert_eq!(link.sample().in_flight, 1);
//! assert_eq!(link.poll_timeout(), Some(Instant::from_millis(28)));
//! assert!(link.poll_delivery(Instant::from_millis(27)).is_none());
//! let delivered = link.poll_delivery(Instant::from_millis(28)).unwrap();
//! assert_eq!(delivered.id, 1);
//! ```

pub mod error;
pub mod link;
pub mod loss;
pub mod marker;
pub mod packet;
pub mod pcap;
pub mod queue;
pub mod rng;
pub mod scheduler;
pub mod simulation;
pub mod source;
pub mod trace;

pub use error::{ParameterError, TraceError};
pub use link::{
    Arrival, DropReason, LinkCounters, LinkDirection, LinkDirectionConfig, LinkSample, Transmitter,
};
pub use loss::{GilbertElliottParams, LossConfig, LossKind, LossModel, TimeWindow};
pub use marker::{FlowSelector, TokenBucketConfig, TokenBucketMarker};
pub use packet::{Color, FlowId, PacketMeta, ECN_CE, ECN_ECT0, ECN_MASK};
pub use queue::{
    DropTail, Enqueue, Queue, QueueConfig, QueueDrop, Red, RedParams, Rio, RioParams, RioThresholds,
};
pub use scheduler::{EventId, Scheduler};
pub use source::{
    Burst, CbrParams, CbrSource, OnOffDistribution, OnOffParams, OnOffSource, TrafficSource,
};
pub use tfrc_proto::Instant;
pub use trace::{DeliveryTrace, OpportunityUse, TRACE_OPPORTUNITY_BYTES};
