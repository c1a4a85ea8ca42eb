//! Configuration of the sender and the sink, with defaults chosen to match ns-2's one-way TCP
//! agents (each field names its ns-2 counterpart).

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use thiserror::Error;

/// Which TCP the sender runs. One [`TcpSender`](crate::TcpSender) implements all five.
///
/// The papers' three (Reno, NewReno, SACK) share Reno's window (RFC 5681) and differ only in what
/// happens between a loss being detected and being repaired. Today's two (CUBIC, BBR) recover
/// with SACK as [`Variant::Sack`] does and replace the window's growth and reduction: CUBIC's
/// cubic function (RFC 9438), BBR's model of the path (bottleneck bandwidth and minimum RTT)
/// with pacing (docs/network-elements.md, "Today's TCP").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// Reno (RFC 5681 fast retransmit and fast recovery; ns-2 `Agent/TCP/Reno`): the first ACK
    /// for new data ends fast recovery, so a second loss in the same window usually waits for
    /// the retransmission timer.
    Reno,
    /// NewReno (RFC 6582; ns-2 `Agent/TCP/Newreno`): a partial ACK retransmits the next hole and
    /// stays in fast recovery until everything sent before the loss is acknowledged.
    NewReno,
    /// SACK-based recovery (RFC 6675 scoreboard, `IsLost`, `pipe` and `NextSeg`; ns-2
    /// `Agent/TCP/Sack1`): retransmits exactly the holes the receiver reports.
    Sack,
    /// CUBIC (RFC 9438 as Linux's `tcp_cubic.c` runs it, HyStart included) over SACK recovery,
    /// with Linux's initial window of 10 packets.
    Cubic,
    /// BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00 as Linux's `tcp_bbr.c` runs it),
    /// paced, over SACK recovery, with Linux's initial window of 10 packets.
    Bbr,
}

impl Variant {
    /// Every variant, for iteration in tests and tools.
    pub const ALL: [Variant; 5] = [
        Variant::Reno,
        Variant::NewReno,
        Variant::Sack,
        Variant::Cubic,
        Variant::Bbr,
    ];

    /// The lowercase name used in scenario files: `reno`, `newreno`, `sack`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Variant::Reno => "reno",
            Variant::NewReno => "newreno",
            Variant::Sack => "sack",
            Variant::Cubic => "cubic",
            Variant::Bbr => "bbr",
        }
    }

    /// Whether the sender keeps a SACK scoreboard and recovers as RFC 6675 says (SACK, CUBIC
    /// and BBR), and so whether its sink sends SACK blocks.
    #[must_use]
    pub fn uses_sack(self) -> bool {
        matches!(self, Variant::Sack | Variant::Cubic | Variant::Bbr)
    }

    /// Whether this is one of today's congestion controls (CUBIC, BBR), which count the
    /// packets each ACK delivers, take an RTT sample from every ACK and start with 10 packets,
    /// as Linux does, rather than following ns-2's agents.
    #[must_use]
    pub fn is_modern(self) -> bool {
        matches!(self, Variant::Cubic | Variant::Bbr)
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A variant name that is none of `reno`, `newreno` (or `new-reno`), `sack`, `cubic`, `bbr`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "unknown TCP variant {0:?}: expected \"reno\", \"newreno\", \"sack\", \"cubic\" or \"bbr\""
)]
pub struct UnknownVariant(pub String);

impl FromStr for Variant {
    type Err = UnknownVariant;

    /// Parses a scenario-file name, ignoring ASCII case.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "reno" => Ok(Variant::Reno),
            "newreno" | "new-reno" | "new_reno" => Ok(Variant::NewReno),
            "sack" | "sack1" => Ok(Variant::Sack),
            "cubic" => Ok(Variant::Cubic),
            "bbr" => Ok(Variant::Bbr),
            _ => Err(UnknownVariant(name.to_owned())),
        }
    }
}

/// A configuration value that would make the sender or sink misbehave.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// `segment_size` is zero.
    #[error("segment size must be at least 1 byte")]
    ZeroSegmentSize,
    /// `initial_window` is zero.
    #[error("initial window must be at least 1 packet")]
    ZeroInitialWindow,
    /// `max_window` is zero.
    #[error("maximum window must be at least 1 packet")]
    ZeroMaxWindow,
    /// `duplicate_ack_threshold` is zero.
    #[error("duplicate ACK threshold must be at least 1")]
    ZeroDuplicateAckThreshold,
    /// `initial_rto` is zero.
    #[error("initial retransmission timeout must be positive")]
    ZeroInitialRto,
    /// `min_rto` is zero (a zero timeout would fire in a loop).
    #[error("minimum retransmission timeout must be positive")]
    ZeroMinRto,
    /// `min_rto` exceeds `max_rto`.
    #[error("minimum retransmission timeout {min:?} exceeds the maximum {max:?}")]
    MinRtoAboveMaxRto {
        /// The configured minimum.
        min: Duration,
        /// The configured maximum.
        max: Duration,
    },
    /// `max_backoff` is zero.
    #[error("maximum backoff factor must be at least 1")]
    ZeroMaxBackoff,
    /// `delayed_ack_timeout` is zero while delayed ACKs are on.
    #[error("delayed-ACK timeout must be positive")]
    ZeroDelayedAckTimeout,
    /// `max_sack_blocks` is above [`MAX_SACK_BLOCKS`](crate::MAX_SACK_BLOCKS).
    #[error("at most {max} SACK blocks fit in an ACK, {requested} requested")]
    TooManySackBlocks {
        /// The configured number.
        requested: u8,
        /// The limit.
        max: usize,
    },
    /// `out_of_order_limit` is zero.
    #[error("the sink must accept at least one packet beyond the next expected one")]
    ZeroOutOfOrderLimit,
}

/// Sender configuration. Build it with [`SenderConfig::new`] and adjust fields.
///
/// | field | default | ns-2 counterpart |
/// |---|---|---|
/// | `segment_size` | 1000 B | `packetSize_ 1000` |
/// | `initial_window` | 2 (10 for CUBIC and BBR, RFC 6928 and Linux) | `windowInit_ 2` |
/// | `max_window` | 10 000 | `window_ 20` (raised on purpose, see the field) |
/// | `initial_slow_start_threshold` | `max_window` | `ssthresh_ = window_` at reset |
/// | `duplicate_ack_threshold` | 3 | `numdupacks_ 3` |
/// | `limited_transmit` | on | `singledup_ 1` |
/// | `initial_rto` | 1 s (3 s with [`SenderConfig::ns2`]) | `rtxcur_init_ 3.0` |
/// | `min_rto` | 200 ms | `minrto_ 0.2` |
/// | `max_rto` | 60 s | `maxrto_ 60` (ns-2.35) |
/// | `clock_granularity` | 10 ms | `tcpTick_ 0.01` |
/// | `max_backoff` | 64 | `t_backoff_` capped at 64 |
/// | `packet_limit` | none (bulk) | FTP source, `maxpkts_` |
/// | `syn_handshake` | off | `syn_ true`, `delay_growth_ true` |
/// | `precise_halving` | off | `precisionReduce_ true` |
/// | `hystart` | on (CUBIC only) | none (Linux `hystart = 1`) |
/// | `seed` | 0 (BBR only) | none |
/// | `rack_tlp` | on for CUBIC and BBR (RFC 8985, Linux `tcp_recovery = 1`) | none (ns-2.35 has no RACK) |
/// | `linux_rto` | on for CUBIC and BBR (SRTT + max(4·RTTVAR, `min_rto`)) | none (ns-2 follows RFC 6298) |
/// | `timestamps` | on for CUBIC and BBR (RTT samples from TSecr, Linux `tcp_timestamps = 1`) | `timestamps_ false` |
/// | `ssthresh_once_per_loss` | on for CUBIC and BBR (Linux `tcp_enter_loss`) | none (ns-2 halves at every timeout) |
/// | `backoff_ends_with_new_ack` | off | none (ns-2 keeps `t_backoff_` until an RTT sample) |
/// | `impatient_timer` | off (NewReno: on partial ACKs) | `newreno_changes1_ 1` (NewReno) |
/// | `timeout_keeps_sacks` | off | none (Sack1 clears its scoreboard at a timeout) |
/// | `sack_dupacks` | off | none (Sack1 counts every duplicate ACK) |
/// | `segment_counted_growth` | off | none (ns-2 opens the window once per ACK) |
/// | `proportional_rate_reduction` | off | none (Sack1 sends while `pipe` < cwnd) |
/// | `ns3_cubic_growth` | off (Linux's CUBIC) | none |
/// | `partial_ack_retransmits` | off | none (Sack1 follows `pipe`) |
/// | `loss_test_on_second_packet` | off | none (Sack1 tests the first unacknowledged packet) |
/// | `sacked_retransmissions_in_flight` | off | none (Sack1's pipe counts nothing SACKed) |
/// | `ns3_hystart` | off (Linux's HyStart) | none |
/// | `cumulative_rtt_samples` | off (CUBIC and BBR sample every ACK, SACKs too) | none (ns-2 times one packet per RTT) |
/// | `smoothed_rtt_to_congestion_control` | off (CUBIC and BBR read each sample) | none |
/// | `ns3_bbr_losses` | off (BBR reads Linux's `rs->losses`) | none |
/// | `ns3_bbr_recovery_exit` | off (BBR restores its window, Linux) | none |
/// | `ns3_bbr_pacing_without_margin` | off (BBR paces 1 % below its estimate, Linux) | none |
///
/// [`SenderConfig::new`] gives the RFC behaviour with ns-2's values (and Linux's for CUBIC and
/// BBR); [`SenderConfig::ns2`] turns on the three ns-2.35 defaults that differ from the RFCs
/// (`syn_handshake`, `precise_halving`, a 3 s initial RTO); [`SenderConfig::ns3`] gives
/// ns-3.37's `TcpSocketBase` where it differs from Linux.
#[derive(Clone, Debug, PartialEq)]
pub struct SenderConfig {
    /// Loss recovery algorithm.
    pub variant: Variant,
    /// Payload bytes per segment (MSS). Default 1000, like ns-2's `packetSize_`, so results
    /// compare with ns-2 runs directly. Every segment carries exactly this much.
    pub segment_size: u32,
    /// Congestion window at start, in packets (RFC 5681 IW). Default 2 (ns-2 `windowInit_ 2`).
    /// ns-2 with `syn_ true` first spends one RTT on a header-only SYN with a window of 1; this
    /// model has no handshake and starts with the initial window at once.
    pub initial_window: u32,
    /// Largest window in packets, standing for the receiver's advertised window. ns-2's default
    /// `window_ 20` caps a flow at 20 packets per RTT, which cannot fill the bottlenecks of the
    /// TCP-friendliness experiments; the default here, 10 000, never limits them. Set 20 to
    /// reproduce an ns-2 script that keeps the default.
    pub max_window: u32,
    /// Slow-start threshold at start, in packets; `None` means `max_window` (ns-2 sets
    /// `ssthresh_` to `window_` at reset), so the first slow start ends with the first loss.
    pub initial_slow_start_threshold: Option<u32>,
    /// Duplicate ACKs that trigger fast retransmit (RFC 5681 §3.2; ns-2 `numdupacks_ 3`).
    pub duplicate_ack_threshold: u32,
    /// RFC 3042 limited transmit: the first duplicate ACKs each let one new segment out
    /// (ns-2 `singledup_ 1`, the default since 2001).
    pub limited_transmit: bool,
    /// Retransmission timeout before any RTT sample (RFC 6298 §2.1: 1 s; ns-2.35 uses 3 s).
    pub initial_rto: Duration,
    /// Lower bound of the retransmission timeout (RFC 6298 §2.4 says 1 s; ns-2 `minrto_ 0.2`
    /// and most deployed stacks use 200 ms, which is the default here).
    pub min_rto: Duration,
    /// Upper bound of the retransmission timeout, backoff included (RFC 6298 §2.5: at least
    /// 60 s; ns-2.35 `maxrto_ 60`).
    pub max_rto: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, 4·RTTVAR) (RFC 6298 §2.3). Default 10 ms,
    /// ns-2's `tcpTick_ 0.01`. Unlike ns-2, RTT samples are not rounded to ticks.
    pub clock_granularity: Duration,
    /// Largest factor the retransmission timeout is multiplied by after repeated timeouts
    /// (ns-2 stops doubling `t_backoff_` at 64).
    pub max_backoff: u32,
    /// Packets the application has to send: `None` is an infinite backlog (bulk transfer, ns-2
    /// FTP); `Some(n)` sends `n` data packets (sequences `0..n`, or `1..=n` after a SYN) and
    /// finishes once all are acknowledged.
    pub packet_limit: Option<u64>,
    /// ns-2's one-way SYN exchange (`syn_ true` with `delay_growth_ true`, its defaults): sequence
    /// 0 is a header-only SYN sent with a window of one packet, and the initial window opens when
    /// it is acknowledged, one round trip after the start. tcp.cc: "in 1-way TCP, syn_ indicates
    /// we are modeling a SYN exchange at the beginning. If this is true and we are delaying
    /// growth, then use an initial window of one." A SYN lost before any ACK leaves an initial
    /// window of one packet (RFC 5681 §3.1; ns-2 `bugfix_ss_`). Off: the first data packets leave
    /// at the start, a round trip earlier.
    pub syn_handshake: bool,
    /// ns-2's `precisionReduce_ true` (its default since 2006) with `exit_recovery_fix_ 0`: a fast
    /// retransmit sets the window to half the window unrounded (`cwnd_ = windowd() / 2`) and
    /// ssthresh to its integer part, and the window stays as it is when the recovery ends. Off:
    /// both become ⌊window⌋ / 2 in whole packets, and the window is set to ssthresh when the
    /// recovery ends (RFC 5681 §3.2 step 6, RFC 6582 §3.2 step 3, RFC 6675 §5 (A)).
    pub precise_halving: bool,
    /// CUBIC's hybrid slow start (HyStart: ACK-train and delay detection), on by default as in
    /// Linux (`tcp_cubic.c`: `hystart = 1`, `hystart_detect = HYSTART_ACK_TRAIN |
    /// HYSTART_DELAY`). Other variants ignore it.
    pub hystart: bool,
    /// Seed of the sender's only random choice: the phase BBR's gain cycle starts in when it
    /// enters PROBE_BW (Linux: `cycle_idx = CYCLE_LEN - 1 - get_random_u32_below(7)`). The
    /// same seed gives the same run; other variants ignore it.
    pub seed: u64,
    /// RACK-TLP loss detection (RFC 8985) instead of RFC 6675's duplicate-ACK and SACK-count
    /// rules, as Linux runs CUBIC and BBR (`net.ipv4.tcp_recovery = 1`, its default): on by
    /// default for CUBIC and BBR, ignored by Reno, NewReno and SACK (ns-2's agents, which
    /// keep RFC 6675). Off: CUBIC and BBR recover as `sack` does.
    pub rack_tlp: bool,
    /// Linux's retransmission timeout, RTO = SRTT + max(4·RTTVAR, `min_rto`), instead of RFC
    /// 6298's max(`min_rto`, SRTT + max(G, 4·RTTVAR)): Linux `tcp_rtt_estimator` keeps its
    /// variation term at or above `tcp_rto_min`. On by default for CUBIC and BBR, which take an
    /// RTT sample from every ACK as Linux does; ignored by Reno, NewReno and SACK (ns-2's
    /// agents time one segment per round trip and follow RFC 6298 as ns-2 does).
    pub linux_rto: bool,
    /// RTT samples from the timestamp option (RFC 7323 §4) as Linux takes them, its default
    /// (`net.ipv4.tcp_timestamps = 1`): an ACK that advances the cumulative ACK and gives no
    /// sample from packets sent once (Karn's algorithm: a retransmission was acknowledged)
    /// gives one from its echo, in whole milliseconds, and so ends the RTO's backoff (Linux
    /// `tcp_ack_update_rtt`). Off: no sample across a retransmission, the backoff lasting
    /// until a packet sent once is acknowledged. On by default for CUBIC and BBR; ignored by
    /// Reno, NewReno and SACK (ns-2's agents, `timestamps_ false`).
    pub timestamps: bool,
    /// Linux's rule for ssthresh at a retransmission timeout (`tcp_enter_loss`: "Reduce
    /// ssthresh if it has not yet been made inside this window"): a timeout reduces it only
    /// outside a recovery, or in an RTO recovery once the cumulative ACK has advanced since the
    /// last timeout (`icsk_ca_state <= TCP_CA_Disorder || !after(tp->high_seq, tp->snd_una) ||
    /// (icsk_ca_state == TCP_CA_Loss && !icsk_retransmits)`, `icsk_retransmits` cleared by an
    /// ACK that advances `snd_una`). CUBIC still restarts its epoch at every timeout (its
    /// `set_state` to `TCP_CA_Loss` runs each time). Off: every timeout takes ssthresh from
    /// the window, which is one packet after the first (ns-2's agents; ns-3.37, whose test
    /// `IsHeadRetransmitted()` follows `SetSentListLost` clearing the flags it reads). On by
    /// default for CUBIC and BBR; ignored by Reno, NewReno and SACK.
    pub ssthresh_once_per_loss: bool,
    /// ns-3.37's retransmission timer after a timeout: every ACK that advances the
    /// cumulative ACK recomputes the RTO from SRTT and RTTVAR without the doubling
    /// (`TcpSocketBase::NewAck`: "On receiving a "New" ack we restart retransmission timer ..
    /// RFC 6298", `m_rto = Max(m_rtt->GetEstimate() + Max(m_clockGranularity,
    /// m_rtt->GetVariation() * 4), m_minRto)`), so the backoff ends with the first new ACK,
    /// an RTT sample or not. Off (the default): the backoff lasts until an RTT sample, RFC
    /// 6298 §5.7 with Karn's algorithm, as Linux (`tcp_ack_update_rtt`: "RFC6298: only reset
    /// backoff on valid RTT measurement") and ns-2 do.
    pub backoff_ends_with_new_ack: bool,
    /// ns-3.37's retransmission timer in a fast recovery (without RACK): the fast retransmit
    /// does not restart it (`SendDataPacket` starts it only "if (m_retxEvent.IsExpired())"),
    /// and of the partial ACKs only the first does, RFC 6582's "Impatient" variant, for SACK,
    /// CUBIC and BBR too (`NewAck(ackNumber, m_isFirstPartialAck)`; "and this is NOT the first
    /// (RTO will not be reset)"). Off (the default): the fast retransmit restarts it (ns-2
    /// `reset_rtx_timer(1, 0)`) and so does every ACK of new data (RFC 6298 §5.3); NewReno is
    /// impatient on partial ACKs either way (ns-2 `newreno_changes1_ 1`).
    pub impatient_timer: bool,
    /// ns-3.37's scoreboard at a retransmission timeout (without RACK): the SACKed packets
    /// stay SACKed and every other outstanding one is deemed lost (`ReTxTimeout`:
    /// `m_txBuffer->SetSentListLost(!m_sackEnabled)`, which keeps SACKed items when SACK is
    /// on), so the resending after the timeout skips what the receiver reported holding, and a
    /// packet may leave while the packets in flight, those sent since the timeout and neither
    /// acknowledged nor SACKed (`BytesInFlight`: "m_sentSize - leftOut + retrans"), are fewer
    /// than the window. Off (the default, ns-2's Sack1): the timeout clears the scoreboard, as
    /// RFC 2018 advises ("expunge the SACK information gathered from a receiver upon a
    /// retransmission timeout"), and the window counts from the cumulative ACK.
    pub timeout_keeps_sacks: bool,
    /// RFC 6675's duplicate ACK for a SACK sender (SACK, CUBIC and BBR): an ACK that moves
    /// nothing counts only if "the ACK carries a SACK block that identifies previously
    /// unacknowledged and un-SACKed octets between HighACK and HighData" (§2, DupAck (e)), as
    /// ns-3.37 counts them (`isDupack = m_sackEnabled ? scoreboardUpdated : ...`); the ACK of
    /// a duplicate segment is then no duplicate ACK. Off (the default): every such ACK counts,
    /// as ns-2's Sack1 does (Linux with RACK starts no recovery from duplicate ACKs).
    pub sack_dupacks: bool,
    /// ns-3.37's window growth for CUBIC: every ACK that moves the cumulative ACK grows the
    /// window by the packets it covers, those SACKed before included (`ProcessAck`:
    /// `bytesAcked = ackNumber - oldHeadSequence; uint32_t segsAcked = bytesAcked /
    /// m_tcb->m_segmentSize`), in an RTO recovery too ("else if (ackNumber < m_recover &&
    /// m_tcb->m_congState == TcpSocketState::CA_LOSS) { ... IncreaseWindow(m_tcb,
    /// segsAcked)"), the ACK that ends it counting only the packets above its point
    /// ("segsAcked = (ackNumber - m_recover) / m_tcb->m_segmentSize"); and slow start is not
    /// capped at ssthresh (`TcpCubic::IncreaseWindow`: "tcb->m_cWnd += segmentsAcked *
    /// tcb->m_segmentSize; segmentsAcked = 0;"). So after a timeout the retransmission that
    /// fills the first hole brings the window back over every packet SACKed beyond it at
    /// once. Off (the default, Linux): the packets newly delivered, cumulatively or by SACK
    /// (`tcp_ack`'s `delivered`), grow the window, and slow start stops at ssthresh with the
    /// rest going to congestion avoidance (`tcp_slow_start`: "cwnd = min(cwnd + acked,
    /// tp->snd_ssthresh)"). Ignored by Reno, NewReno, SACK and BBR (ns-3's NewReno opens
    /// once per ACK in slow start, as ours; BBR sets its window itself).
    pub segment_counted_growth: bool,
    /// RFC 6937's Proportional Rate Reduction in CUBIC's fast recovery (without RACK), as
    /// ns-3.37 runs it by default (`TcpL4Protocol` "RecoveryType": `TcpPrrRecovery`,
    /// "ReductionBound" SSRB): on each ACK the window becomes the packets in flight plus a
    /// share of those delivered, ssthresh / RecoverFS of them while more than ssthresh are in
    /// flight, so the window comes down to ssthresh over the round trip instead of at once.
    /// Off (the default): RFC 6675's recovery, the window ssthresh from the fast retransmit
    /// on and a packet sent whenever `pipe` is below it. (Linux runs PRR too; with RACK ours
    /// does not yet, and this flag leaves that path alone.)
    pub proportional_rate_reduction: bool,
    /// ns-3.37's `TcpCubic` congestion avoidance: the cubic function in whole packets, no
    /// Reno-friendly region (RFC 9438 §4.3's W_est; ns-3.37's `TcpCubic::Update` has none), and
    /// at most one packet of growth per ACK, the acknowledged packets counted towards the next
    /// ("m_cWndCnt += segmentsAcked; ... if (m_cWndCnt >= cnt) { tcb->m_cWnd +=
    /// tcb->m_segmentSize; m_cWndCnt -= cnt; }"). Off (the default): Linux's `bictcp_update`
    /// with `tcp_friendliness` and `tcp_cong_avoid_ai`, `acked / cnt` per ACK. CUBIC only.
    pub ns3_cubic_growth: bool,
    /// ns-3.37's partial ACK in a SACK recovery (without RACK): the first unacknowledged
    /// packet leaves at once, whatever the window, unless it was retransmitted in this
    /// recovery already (`ProcessAck`: "If the packet is already retransmitted do not
    /// retransmit it: if (!m_txBuffer->IsRetransmittedDataAcked(ackNumber +
    /// m_tcb->m_segmentSize)) { DoRetransmit(); ...", with `DoRetransmit` sending the first
    /// segment marked lost and not retransmitted, the head here), as RFC 6582's NewReno does
    /// for its partial ACKs. Off (the default): RFC 6675 sends only what `NextSeg()` picks
    /// while `pipe` is below the window.
    pub partial_ack_retransmits: bool,
    /// ns-3.37's test for a loss shown by SACK before three duplicate ACKs (RFC 6675 §5 step
    /// (2), "IsLost (HighACK + 1)"): ns-3 asks about the second unacknowledged packet,
    /// `m_highRxAckMark` being the first unacknowledged byte ("else if
    /// (m_txBuffer->IsLost(m_highRxAckMark + m_tcb->m_segmentSize))"), so a recovery starts
    /// from SACK alone only once three packets above the second are SACKed and the second is
    /// not. Off (the default): the first unacknowledged packet, as the RFC means.
    pub loss_test_on_second_packet: bool,
    /// ns-3.37's count of the packets in flight (`BytesInFlight`: "m_sentSize - leftOut +
    /// retrans"): a retransmitted packet stays in flight until the cumulative ACK covers it,
    /// even once SACKed, since `TcpTxBuffer::Update` clears a SACKed packet's lost mark but
    /// neither its `m_retrans` flag nor the `m_retrans` byte count ("(*item_it)->m_lost =
    /// false; m_lostOut -= ...; (*item_it)->m_sacked = true; m_sackedOut += ..."), and only
    /// `DiscardUpTo` takes it off ("m_retrans -= item->m_packet->GetSize()"); so in a fast
    /// recovery and after a timeout (`timeout_keeps_sacks`) a SACK for a packet sent twice
    /// lets nothing new leave. Off (the default): RFC 6675's `SetPipe()`, which counts only
    /// packets not SACKed.
    pub sacked_retransmissions_in_flight: bool,
    /// ns-3.37's RTT samples for CUBIC and BBR (`TcpSocketBase::EstimateRtt`): one per ACK
    /// that advances the cumulative ACK past the oldest packet of its send history, timed on
    /// that packet, none if it was retransmitted ("RttHistory& h = m_history.front(); if
    /// (!h.retx && ackSeq >= (h.seq + SequenceNumber32(h.count))) { ... m =
    /// Simulator::Now() - h.time;"), the history holding the packets sent as new data since
    /// the last timeout (`ReTxTimeout`: "m_history.clear();"); SACKs give none. Off (the
    /// default): Linux's `ca_rtt_us`, the most recently sent packet the ACK newly delivers,
    /// cumulatively or by SACK, if sent once.
    pub cumulative_rtt_samples: bool,
    /// ns-3.37's HyStart in CUBIC (`TcpCubic::HystartUpdate`, `PktsAcked`): an ACK train ends
    /// slow start once it spans the minimum delay ("if ((now - m_roundStart) > m_delayMin)"),
    /// where Linux waits half of it; a delay increase ends it once the round's smallest RTT
    /// exceeds the minimum by the minimum itself, clamped to [4 ms, 1 s] ("m_currRtt >
    /// m_delayMin + HystartDelayThresh(m_delayMin)"), where Linux's margin is an eighth of
    /// it clamped to [4 ms, 16 ms]; and delay samples are ignored for 10 ms after an epoch
    /// starts ("CubicDelta", "(Simulator::Now() - m_epochStart) < m_cubicDelta"), Linux's
    /// for a second. Off (the default): Linux's `hystart_update`.
    pub ns3_hystart: bool,
    /// ns-3.37 hands congestion control the smoothed RTT, not the sample (`EstimateRtt`:
    /// "m_tcb->m_lastRtt = m_rtt->GetEstimate();", the RTT `PktsAcked` passes to CUBIC's
    /// HyStart and `TcpBbr::UpdateRTprop` reads), and BBR reads it on every ACK, taking it as
    /// the minimum RTT when not above the current one ("if (tcb->m_lastRtt >= Seconds(0) &&
    /// (tcb->m_lastRtt <= m_rtProp || m_rtPropExpired))"). Off (the default): Linux's, each
    /// ACK's own sample, a new minimum only when below the current one (`bbr_update_min_rtt`:
    /// "rs->rtt_us < bbr->min_rtt_us").
    pub smoothed_rtt_to_congestion_control: bool,
    /// ns-3.37's losses for BBR (`TcpSocketBase::ReceivedAck`): "uint32_t lost =
    /// (currentLost > previousLost) ? currentLost - previousLost : previousLost -
    /// currentLost;", the change either way of the bytes marked lost (`TcpTxBuffer::
    /// m_lostOut`, where a packet stays marked, resent or not, until a SACK or the cumulative
    /// ACK covers it), so a lost packet counts when marked and again when its retransmission is
    /// acknowledged; and BBR takes them off its window only in fast recovery (`TcpBbr::SetCwnd`:
    /// "if (tcb->m_congState == TcpSocketState::CA_RECOVERY) { if
    /// (ModulateCwndForRecovery(tcb, rs))", which does "m_cWnd - rs.m_bytesLoss"). Off (the
    /// default): Linux's `rs->losses`, "tp->lost - prior_lost", the packets newly marked, taken
    /// off in every state (`bbr_set_cwnd_to_recover_or_restore`).
    pub ns3_bbr_losses: bool,
    /// ns-3.37's BBR window when a recovery ends. Leaving a fast recovery, `TcpSocketBase`
    /// overwrites the window BBR has just restored with the slow-start threshold
    /// (`ProcessAck`: "m_congestionControl->CwndEvent(m_tcb,
    /// TcpSocketState::CA_EVENT_COMPLETE_CWR); ... if (exitedFastRecovery) { NewAck(ackNumber,
    /// true); m_tcb->m_cWnd = m_tcb->m_ssThresh.Get();"), which BBR sets once, to one
    /// bandwidth-delay product, when STARTUP ends (`TcpBbr::CheckDrain`: "tcb->m_ssThresh =
    /// InFlight(tcb, 1);"), and `TcpBbr::GetSsThresh` returns unchanged; leaving a timeout's
    /// recovery restores nothing (`TcpBbr::CongestionStateSet` acts on `CA_OPEN` only "if
    /// (newState == TcpSocketState::CA_OPEN && !m_isInitialized)"). Off (the default): Linux's
    /// `bbr_set_cwnd_to_recover_or_restore`, "Exiting loss recovery; restore cwnd saved before
    /// recovery", after either.
    pub ns3_bbr_recovery_exit: bool,
    /// ns-3.37's BBR paces at its gain times its bandwidth estimate (`TcpBbr::SetPacingRate`:
    /// "DataRate rate(gain * m_maxBwFilter.GetBest().GetBitRate());"). Off (the default):
    /// Linux's `bbr_rate_bytes_per_sec`, "Pace at ~1% below estimated bw"
    /// (`bbr_pacing_margin_percent` 1).
    pub ns3_bbr_pacing_without_margin: bool,
}

impl SenderConfig {
    /// The defaults listed on [`SenderConfig`] for `variant`.
    #[must_use]
    pub fn new(variant: Variant) -> Self {
        Self {
            variant,
            segment_size: 1000,
            // RFC 6928 and Linux (TCP_INIT_CWND 10) for today's TCPs; ns-2's windowInit_ 2 else.
            initial_window: if variant.is_modern() { 10 } else { 2 },
            max_window: 10_000,
            initial_slow_start_threshold: None,
            duplicate_ack_threshold: 3,
            limited_transmit: true,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(10),
            max_backoff: 64,
            packet_limit: None,
            syn_handshake: false,
            precise_halving: false,
            hystart: true,
            seed: 0,
            rack_tlp: variant.is_modern(),
            linux_rto: variant.is_modern(),
            timestamps: variant.is_modern(),
            ssthresh_once_per_loss: variant.is_modern(),
            backoff_ends_with_new_ack: false,
            impatient_timer: false,
            timeout_keeps_sacks: false,
            sack_dupacks: false,
            segment_counted_growth: false,
            proportional_rate_reduction: false,
            ns3_cubic_growth: false,
            partial_ack_retransmits: false,
            loss_test_on_second_packet: false,
            sacked_retransmissions_in_flight: false,
            cumulative_rtt_samples: false,
            ns3_hystart: false,
            smoothed_rtt_to_congestion_control: false,
            ns3_bbr_losses: false,
            ns3_bbr_recovery_exit: false,
            ns3_bbr_pacing_without_margin: false,
        }
    }

    /// ns-2.35's defaults for `variant` where they differ from the RFCs: the SYN exchange
    /// (`syn_ true`, `delay_growth_ true`), unrounded halving (`precisionReduce_ true`) and a
    /// 3 s initial retransmission timeout (`rtxcur_init_ 3.0`, ns-default.tcl: "Default changed
    /// on 2006/01/21"). What scenarios ask for with `profile = "ns2"` on a TCP flow.
    #[must_use]
    pub fn ns2(variant: Variant) -> Self {
        Self {
            initial_rto: Duration::from_secs(3),
            syn_handshake: true,
            precise_halving: true,
            ..Self::new(variant)
        }
    }

    /// ns-3.37's `TcpSocketBase` (the TCP of `tfrc ns3`) where it differs from the Linux of
    /// [`SenderConfig::new`], for side-by-side runs (`profile = "ns3"` on a TCP flow;
    /// docs/ns3.md "The `ns3` profile"):
    ///
    /// - no RACK-TLP: ns-3.37 detects loss by three duplicate ACKs and its SACK scoreboard
    ///   (RFC 6675), and a lost retransmission waits for the timer;
    /// - RFC 6298's RTO, max(`min_rto`, SRTT + max(G, 4·RTTVAR)), with ns-3's G of 1 ms
    ///   ("ClockGranularity ... MilliSeconds(1)"), not Linux's variation floor;
    /// - no timestamps (`tfrc ns3` turns them off: "No timestamps: a data segment's header is
    ///   then 40 bytes");
    /// - the backoff ends with the first ACK of new data (`backoff_ends_with_new_ack`), neither
    ///   the fast retransmit nor any partial ACK but the first restarts the timer
    ///   (`impatient_timer`), and every timeout takes ssthresh from the window
    ///   (`ssthresh_once_per_loss` off);
    /// - a timeout keeps the SACKed packets and resends only the others, counting in flight
    ///   what was sent since (`timeout_keeps_sacks`);
    /// - with SACK, a duplicate ACK counts only if it SACKs new data (`sack_dupacks`);
    /// - CUBIC's window grows by the packets each cumulative ACK covers, in an RTO recovery too,
    ///   and its slow start is not capped at ssthresh (`segment_counted_growth`);
    /// - CUBIC's fast recovery reduces the window by RFC 6937's PRR
    ///   (`proportional_rate_reduction`), and its congestion avoidance is ns-3's, with no
    ///   Reno-friendly region and one packet per ACK at most (`ns3_cubic_growth`);
    /// - a partial ACK in a SACK recovery resends the first unacknowledged packet at once if
    ///   it was not resent yet (`partial_ack_retransmits`);
    /// - a loss shown by SACK alone is tested on the second unacknowledged packet
    ///   (`loss_test_on_second_packet`);
    /// - a retransmission counts in flight until the cumulative ACK covers it, SACKed or not
    ///   (`sacked_retransmissions_in_flight`);
    /// - CUBIC and BBR take an RTT sample only from a cumulative ACK, on the oldest packet it
    ///   covers (`cumulative_rtt_samples`), and read the smoothed RTT, BBR on every ACK
    ///   (`smoothed_rtt_to_congestion_control`);
    /// - CUBIC's HyStart has ns-3's thresholds (`ns3_hystart`);
    /// - BBR reads ns-3's loss count and takes it off its window in fast recovery only
    ///   (`ns3_bbr_losses`), its window is the slow-start threshold when a fast recovery ends
    ///   and is not restored when a timeout's recovery ends (`ns3_bbr_recovery_exit`), and it
    ///   paces without Linux's 1 % margin (`ns3_bbr_pacing_without_margin`).
    ///
    /// Not modelled: PRR for the other variants (ns-3 runs it for every TCP but BBR), ns-3's
    /// scoreboard's approximations (docs/ns3.md).
    #[must_use]
    pub fn ns3(variant: Variant) -> Self {
        Self {
            clock_granularity: Duration::from_millis(1),
            rack_tlp: false,
            linux_rto: false,
            timestamps: false,
            ssthresh_once_per_loss: false,
            backoff_ends_with_new_ack: true,
            impatient_timer: true,
            timeout_keeps_sacks: true,
            sack_dupacks: true,
            segment_counted_growth: true,
            ns3_cubic_growth: true,
            partial_ack_retransmits: true,
            loss_test_on_second_packet: true,
            sacked_retransmissions_in_flight: true,
            proportional_rate_reduction: true,
            cumulative_rtt_samples: true,
            ns3_hystart: true,
            smoothed_rtt_to_congestion_control: true,
            ns3_bbr_losses: true,
            ns3_bbr_recovery_exit: true,
            ns3_bbr_pacing_without_margin: true,
            ..Self::new(variant)
        }
    }

    /// Checks the values that would make the sender misbehave.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.segment_size == 0 {
            return Err(ConfigError::ZeroSegmentSize);
        }
        if self.initial_window == 0 {
            return Err(ConfigError::ZeroInitialWindow);
        }
        if self.max_window == 0 {
            return Err(ConfigError::ZeroMaxWindow);
        }
        if self.duplicate_ack_threshold == 0 {
            return Err(ConfigError::ZeroDuplicateAckThreshold);
        }
        if self.initial_rto.is_zero() {
            return Err(ConfigError::ZeroInitialRto);
        }
        if self.min_rto.is_zero() {
            return Err(ConfigError::ZeroMinRto);
        }
        if self.min_rto > self.max_rto {
            return Err(ConfigError::MinRtoAboveMaxRto {
                min: self.min_rto,
                max: self.max_rto,
            });
        }
        if self.max_backoff == 0 {
            return Err(ConfigError::ZeroMaxBackoff);
        }
        Ok(())
    }
}

/// Sink configuration.
///
/// | field | default | ns-2 counterpart |
/// |---|---|---|
/// | `sack` | off (on for [`SinkConfig::for_variant`]`(Sack)`) | `Agent/TCPSink` vs `Agent/TCPSink/Sack1` |
/// | `delayed_ack` | off | `Agent/TCPSink` vs `Agent/TCPSink/DelAck` |
/// | `delayed_ack_timeout` | 100 ms | `Agent/TCPSink/DelAck set interval_ 100ms` |
/// | `max_sack_blocks` | 3 (4 in [`SinkConfig::ns3`]) | `maxSackBlocks_ 3` |
/// | `out_of_order_limit` | 2²⁰ packets | none (ns-2 buffers without limit) |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkConfig {
    /// Whether ACKs carry SACK blocks (RFC 2018). A SACK sender needs them; Reno and NewReno
    /// ignore them.
    pub sack: bool,
    /// Delayed ACKs (RFC 5681 §4.2): acknowledge every second in-order segment, or when
    /// `delayed_ack_timeout` has passed since the first unacknowledged one. Out-of-order
    /// segments, duplicates and segments filling a hole are still acknowledged at once.
    pub delayed_ack: bool,
    /// Longest an in-order segment waits for its ACK when `delayed_ack` is on.
    pub delayed_ack_timeout: Duration,
    /// SACK blocks per ACK: [`DEFAULT_SACK_BLOCKS`](crate::DEFAULT_SACK_BLOCKS) unless set,
    /// at most [`MAX_SACK_BLOCKS`](crate::MAX_SACK_BLOCKS).
    pub max_sack_blocks: u8,
    /// How far beyond the next expected packet the sink accepts segments (its buffer, in
    /// packets); segments further out are rejected so hostile input cannot exhaust memory.
    pub out_of_order_limit: u64,
}

impl SinkConfig {
    /// A sink with immediate ACKs and no SACK (ns-2 `Agent/TCPSink`).
    #[must_use]
    pub fn new() -> Self {
        Self {
            sack: false,
            delayed_ack: false,
            delayed_ack_timeout: Duration::from_millis(100),
            max_sack_blocks: crate::DEFAULT_SACK_BLOCKS,
            out_of_order_limit: 1 << 20,
        }
    }

    /// The sink a sender of `variant` needs: SACK blocks for the variants that keep a scoreboard
    /// ([`Variant::uses_sack`]; ns-2 `Agent/TCPSink/Sack1`), plain cumulative ACKs otherwise.
    #[must_use]
    pub fn for_variant(variant: Variant) -> Self {
        Self {
            sack: variant.uses_sack(),
            ..Self::new()
        }
    }

    /// The sink of ns-3.37's `TcpSocketBase` for a sender of `variant`, beside
    /// [`SenderConfig::ns3`]: without timestamps (as `tfrc ns3` runs it) an ACK carries as many
    /// SACK blocks as the 40 option bytes hold, four.
    ///
    /// ns-3.37 `TcpSocketBase::AddOptionSack`: "uint8_t optionLenAvail =
    /// header.GetMaxOptionLength() - header.GetOptionLength(); uint8_t allowedSackBlocks =
    /// (optionLenAvail - 2) / 8;".
    #[must_use]
    pub fn ns3(variant: Variant) -> Self {
        Self {
            max_sack_blocks: crate::MAX_SACK_BLOCKS as u8,
            ..Self::for_variant(variant)
        }
    }

    /// Checks the values that would make the sink misbehave.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.delayed_ack && self.delayed_ack_timeout.is_zero() {
            return Err(ConfigError::ZeroDelayedAckTimeout);
        }
        if usize::from(self.max_sack_blocks) > crate::MAX_SACK_BLOCKS {
            return Err(ConfigError::TooManySackBlocks {
                requested: self.max_sack_blocks,
                max: crate::MAX_SACK_BLOCKS,
            });
        }
        if self.out_of_order_limit == 0 {
            return Err(ConfigError::ZeroOutOfOrderLimit);
        }
        Ok(())
    }
}

impl Default for SinkConfig {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variant_names_round_trip() {
        for variant in Variant::ALL {
            assert_eq!(variant.name().parse::<Variant>(), Ok(variant));
            assert_eq!(variant.to_string(), variant.name());
        }
        assert_eq!("NewReno".parse::<Variant>(), Ok(Variant::NewReno));
        assert!("vegas".parse::<Variant>().is_err());
    }

    #[test]
    fn defaults_are_valid_and_bad_values_rejected() {
        for variant in Variant::ALL {
            assert_eq!(SenderConfig::new(variant).validate(), Ok(()));
            assert_eq!(SinkConfig::for_variant(variant).validate(), Ok(()));
        }
        let mut config = SenderConfig::new(Variant::Reno);
        config.min_rto = Duration::from_secs(90);
        assert!(matches!(
            config.validate(),
            Err(ConfigError::MinRtoAboveMaxRto { .. })
        ));
        config = SenderConfig::new(Variant::Reno);
        config.segment_size = 0;
        assert_eq!(config.validate(), Err(ConfigError::ZeroSegmentSize));
        config = SenderConfig::new(Variant::Reno);
        config.min_rto = Duration::ZERO;
        assert_eq!(config.validate(), Err(ConfigError::ZeroMinRto));

        let mut sink = SinkConfig::new();
        assert_eq!(sink.max_sack_blocks, 3);
        assert_eq!(SinkConfig::ns3(Variant::Cubic).validate(), Ok(()));
        sink.max_sack_blocks = 5;
        assert!(matches!(
            sink.validate(),
            Err(ConfigError::TooManySackBlocks { .. })
        ));
        sink = SinkConfig::new();
        sink.delayed_ack = true;
        sink.delayed_ack_timeout = Duration::ZERO;
        assert_eq!(sink.validate(), Err(ConfigError::ZeroDelayedAckTimeout));
    }
}
