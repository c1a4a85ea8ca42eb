//! Sans-IO models of TCP senders and sinks, close to ns-2's one-way TCP agents, so that the
//! simulator's TCP-friendliness experiments compare with ns-2's.
//!
//! **Determinism promise:** no clocks, sockets, threads or outside randomness (BBR's one random
//! choice comes from [`SenderConfig::seed`]). Time comes in as
//! [`tfrc_proto::Instant`] (integer nanoseconds); the same calls always give the same segments,
//! ACKs and timers.
//!
//! - [`TcpSender`]: Reno, NewReno or SACK loss recovery with Reno's window, or CUBIC (RFC 9438 as
//!   Linux's `tcp_cubic.c`, HyStart included) or BBR v1 (Linux's `tcp_bbr.c`, paced) with
//!   RACK-TLP loss detection (RFC 8985, as Linux runs it) and Linux's RTO, chosen by [`Variant`]
//!   in [`SenderConfig`]; slow start, congestion avoidance, fast retransmit, RFC 6298
//!   retransmission timer with Karn's algorithm and exponential backoff.
//!   Bulk (infinite backlog) by default, optionally a finite number of packets, and
//!   [`TcpSender::stop`]. docs/network-elements.md ("TCP: today's congestion controls") says
//!   which source each CUBIC and BBR rule follows.
//! - [`TcpSink`]: cumulative ACKs, SACK blocks (RFC 2018, up to three, most recent first),
//!   optional delayed ACKs, in-order delivery counted in bytes (goodput).
//! - [`Segment`] and [`Ack`]: plain structs with a [`Segment::wire_size`] / [`Ack::wire_size`]
//!   for links (data: segment size + 40 bytes; ACK: 40 bytes + SACK option).
//!
//! Like ns-2's `Agent/TCP`, sequence numbers count packets, the window is in packets, every
//! segment carries a full segment size, there is no byte stream and no advertised-window
//! dynamics (a fixed `max_window` stands for the receiver's window). The handshake is at most
//! ns-2's: a header-only SYN as sequence 0 ([`SenderConfig::syn_handshake`]).
//!
//! [`SenderConfig::new`] follows the RFCs where they and ns-2.35 part; [`SenderConfig::ns2`]
//! follows ns-2.35's defaults there (the SYN round trip, unrounded halving, a 3 s initial RTO),
//! for side-by-side runs (a scenario's TCP `profile = "ns2"`).
//!
//! # Driving a sender and a sink by hand
//! ```
//! use core::time::Duration;
//! use tfrc_proto::Instant;
//! use tfrc_tcp::{SenderConfig, SinkConfig, TcpSender, TcpSink, Variant};
//!
//! let mut sender = TcpSender::new(SenderConfig::new(Variant::Sack)).unwrap();
//! let mut sink = TcpSink::new(SinkConfig::for_variant(Variant::Sack)).unwrap();
//! let one_way = Duration::from_millis(25);
//! let mut now = Instant::ZERO;
//!
//! for _round in 0..3 {
//!     // Everything the window allows leaves now and arrives one delay later.
//!     let mut segments = Vec::new();
//!     while let Some(segment) = sender.poll_transmit(now) {
//!         assert_eq!(segment.wire_size(), 1040);
//!         segments.push(segment);
//!     }
//!     now += one_way;
//!     let mut acks = Vec::new();
//!     for segment in &segments {
//!         sink.handle_segment(now, segment).unwrap();
//!         while let Some(ack) = sink.poll_ack() {
//!             acks.push(ack);
//!         }
//!     }
//!     // The ACKs come back one delay later.
//!     now += one_way;
//!     for ack in &acks {
//!         sender.handle_ack(now, ack).unwrap();
//!     }
//! }
//! // Slow start from an initial window of 2: 2 + 4 + 8 packets, one RTT each.
//! assert_eq!(sink.delivered_bytes(), 14_000);
//! assert_eq!(sender.congestion_window(), 16.0);
//! assert_eq!(sender.smoothed_rtt(), Some(Duration::from_millis(50)));
//! // Nothing is outstanding, so no retransmission timer runs.
//! assert_eq!(sender.poll_timeout(), None);
//! ```
//!
//! # Defaults and their ns-2 counterparts
//! | setting | default here | ns-2 (ns-default.tcl) | note |
//! |---|---|---|---|
//! | segment size | 1000 B | `Agent/TCP packetSize_ 1000` | |
//! | header | 40 B | `tcpip_base_hdr_size_ 40` | ACKs 40 B + SACK option |
//! | initial window | 2 | `windowInit_ 2` | ns-2 first spends a round trip on a SYN (`syn_ true`, `delay_growth_ true`): `syn_handshake` in [`SenderConfig::ns2`] |
//! | maximum window | 10 000 | `window_ 20` | raised so bulk TCP fills the bottleneck |
//! | initial ssthresh | maximum window | `ssthresh_` = `window_` | |
//! | duplicate ACK threshold | 3 | `numdupacks_ 3` | |
//! | limited transmit | on | `singledup_ 1` | RFC 3042 |
//! | window increase | +1 per ACK (slow start), +1/cwnd per ACK | `windowOption_ 1` | per ACK, not per packet acked |
//! | window decrease | ssthresh = ⌊min(cwnd, max window)⌋ / 2, at least 2; cwnd = ssthresh | `decrease_num_ 0.5`, `slowdown()` | ns-2 also halves with the window, not the flight size; its `precisionReduce_ true` keeps cwnd at the unrounded half through the recovery: `precise_halving` in [`SenderConfig::ns2`] |
//! | fast recovery window | ssthresh + 3, +1 per further duplicate | `dupwnd_` | RFC 5681; ns-2's `exitFastRetrans_` starts the inflation at 0 instead |
//! | NewReno timer | reset on the first partial ACK only | `newreno_changes1_ 1` | RFC 6582 "Impatient" |
//! | initial RTO | 1 s | `rtxcur_init_` 3 s (ns-2.35) | RFC 6298 §2.1; 3 s in [`SenderConfig::ns2`] |
//! | minimum RTO | 200 ms | `minrto_ 0.2` | applied before backoff, like ns-2 with `rfc2988_ true` |
//! | maximum RTO | 60 s | `maxrto_ 60` (ns-2.35) | |
//! | clock granularity | 10 ms | `tcpTick_ 0.01` | samples are not rounded to ticks here |
//! | RTO backoff cap | ×64 | `t_backoff_` stops at 64 | |
//! | RTT sampling | one timed segment per RTT | `rtt_active_`, `timestamps_ false` | Karn: cancelled by any retransmission |
//! | RTT sampling, CUBIC and BBR | every ACK; across a retransmission from the timestamp echo (`SenderConfig::timestamps`) | — | Linux `tcp_ack_update_rtt` with `tcp_timestamps = 1`, its default; the option's 12 bytes are not counted on the wire |
//! | after a timeout | ssthresh ⌊cwnd⌋ / 2, cwnd 1, go-back-N, SACK scoreboard cleared | `CLOSE_SSTHRESH_HALF`, `CLOSE_CWND_RESTART`, `wnd_restart_ 1` | a repeated timeout brings ssthresh to 2, as in ns-2 (RFC 5681 would halve the flight size) |
//! | max burst | unlimited | `maxburst_ 0` | |
//! | sink | immediate ACK per segment | `Agent/TCPSink` | |
//! | delayed ACK | off; 100 ms timer, every 2nd segment | `Agent/TCPSink/DelAck interval_ 100ms` | |
//! | SACK blocks | 3 | `maxSackBlocks_ 3` | `Agent/TCPSink/Sack1` |
//!
//! # Validation
//! The integration tests (`tests/`) run senders and sinks over a DropTail bottleneck modelled in
//! the tests themselves (rate, propagation delay, queue limit in packets, seeded Bernoulli
//! loss, deterministic drops). Figures measured (`cargo test -p tfrc-tcp -- --nocapture`):
//!
//! - **Sawtooth**: one Reno flow, 1 Mb/s, 50 ms base RTT, queue 20: 32 halvings in 90 s, window
//!   13 ↔ 28 packets, growth 0.99 packet per round trip, no timeout, utilisation 100 %.
//! - **PFTK model** (Padhye et al. 1998, full formula, b = 1) under Bernoulli loss on a 100 ms,
//!   unqueued path, fed with the measured loss rate, mean SRTT and mean RTO; error of the
//!   sending rate at p = 0.5 %, 1 %, 2 %: Reno −7.5 %, −9 %, −12.5 % (tolerance 20 %);
//!   NewReno and SACK −2 % to −5 % (tolerance 10 %). Reno falls below the model as p grows
//!   because two losses in a window cost it a timeout.
//! - **Fairness**: 4 and 8 flows with the same RTT on 10 Mb/s, queue 50: Jain index ≥ 0.998
//!   (Reno and SACK; tolerance 0.95).
//! - **Recovery**: three losses in one window: Reno times out, NewReno recovers in three round
//!   trips without a timeout, SACK in about one; both retransmit exactly the lost packets.

mod bbr;
mod config;
mod cubic;
mod delivery;
mod rack;
mod ranges;
mod rtt;
mod segment;
mod sender;
mod sink;

pub use bbr::BbrMode;
pub use config::{ConfigError, SenderConfig, SinkConfig, UnknownVariant, Variant};
pub use segment::{Ack, SackBlock, Segment, DEFAULT_SACK_BLOCKS, HEADER_BYTES, MAX_SACK_BLOCKS};
pub use sender::{AckError, SenderStats, TcpSender};
pub use sink::{SegmentError, SinkStats, TcpSink};
