//! The typed, validated scenario: what the simulator, the testbed and the reproduction consume.
//!
//! Every default is already filled in, except the few that depend on another key (a flow's stop
//! time defaults to the end of the run, the state sampling interval to the output interval); those
//! stay `Option` and have an accessor that applies the default.

use core::time::Duration;
use std::path::{Path, PathBuf};

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::units::{format_duration, serialize_duration, serialize_optional_duration, Rate};

/// A duplex link between two nodes, with one [`LinkDirectionSpec`] per direction.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The two nodes, as written in `between = [first, second]`.
    pub between: [String; 2],
    /// The direction first → second.
    pub forward: LinkDirectionSpec,
    /// The direction second → first.
    pub reverse: LinkDirectionSpec,
}

impl Link {
    /// The direction `from` → `to` of this link, if it joins these two nodes.
    pub fn direction(&self, from: &str, to: &str) -> Option<&LinkDirectionSpec> {
        if self.between[0] == from && self.between[1] == to {
            Some(&self.forward)
        } else if self.between[1] == from && self.between[0] == to {
            Some(&self.reverse)
        } else {
            None
        }
    }

    /// Whether this link joins `a` and `b` (in either order).
    pub fn joins(&self, a: &str, b: &str) -> bool {
        self.direction(a, b).is_some()
    }
}

/// One direction of a link: how fast it sends, how long packets travel, how it queues and drops.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkDirectionSpec {
    /// A constant rate or a delivery trace.
    pub capacity: Capacity,
    /// One-way propagation delay.
    pub delay: Duration,
    /// The queue in front of the link.
    pub queue: QueueSpec,
    /// Random loss applied to packets entering this direction, if any.
    pub loss: Option<LossSpec>,
}

impl LinkDirectionSpec {
    /// The constant rate, or `None` for a trace-driven direction.
    pub fn rate(&self) -> Option<Rate> {
        match &self.capacity {
            Capacity::Rate(rate) => Some(*rate),
            Capacity::Trace { .. } => None,
        }
    }

    /// The delivery trace, or `None` for a constant-rate direction.
    pub fn trace(&self) -> Option<&Path> {
        match &self.capacity {
            Capacity::Rate(_) => None,
            Capacity::Trace { path, .. } => Some(path),
        }
    }
}

/// How fast a link direction delivers packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capacity {
    /// A constant bit rate (key `rate`).
    Rate(Rate),
    /// A Mahimahi delivery trace (key `trace`): one line per 1500-byte delivery opportunity, in
    /// milliseconds from the start, repeating at its end. A relative path in the file has been
    /// resolved against the scenario file's directory.
    Trace {
        /// The trace file.
        path: PathBuf,
        /// Where in the trace the run starts (key `trace_offset`, default 0): the link's time 0
        /// is the trace's time `offset` (whole milliseconds; the trace repeats at its end).
        offset: Duration,
        /// How queued packets use the trace's opportunities (key `trace_opportunity`).
        opportunity: TraceOpportunity,
    },
}

/// How packets use a trace's delivery opportunities (key `trace_opportunity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TraceOpportunity {
    /// `"bytes"` (the default), Mahimahi's rule (`LinkQueue` in `link_queue.cc`): each
    /// opportunity carries 1500 bytes that the queued packets share, several small packets in
    /// one opportunity or one packet over several; a packet leaves with its last byte.
    #[default]
    Bytes,
    /// `"packet"`: one packet per opportunity whatever its size up to 1500 bytes (a larger one
    /// takes ⌈size / 1500⌉ opportunities): every flow gets the same packet rate regardless of
    /// packet size.
    Packet,
}

impl TraceOpportunity {
    /// Every value, in the order error messages list them.
    pub const ALL: [TraceOpportunity; 2] = [TraceOpportunity::Bytes, TraceOpportunity::Packet];

    /// The key's value in a scenario file.
    pub fn name(self) -> &'static str {
        match self {
            TraceOpportunity::Bytes => "bytes",
            TraceOpportunity::Packet => "packet",
        }
    }

    /// The value named `name` (`"bytes"` or `"packet"`), as the scenario file and
    /// `tfrc emulate --trace FILE:opportunity=…` spell it.
    pub fn from_name(name: &str) -> Option<TraceOpportunity> {
        TraceOpportunity::ALL
            .into_iter()
            .find(|opportunity| opportunity.name() == name)
    }
}

/// The queue in front of a link direction. Limits and thresholds count packets.
///
/// Serialized as the file writes it: `{ kind = "red", limit = 50, min_th = 5.0, … }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum QueueSpec {
    /// First in, first out; arrivals beyond `limit` packets are dropped (`kind = "droptail"`).
    DropTail {
        /// Most packets held (default 50).
        limit: u32,
    },
    /// Random Early Detection (`kind = "red"`).
    Red(RedSpec),
    /// RED with In/Out profiles, RIO-C style (`kind = "rio"`).
    Rio(RioSpec),
}

impl QueueSpec {
    /// The default queue: DropTail, 50 packets.
    pub const DEFAULT: QueueSpec = QueueSpec::DropTail { limit: 50 };

    /// The most packets the queue holds.
    pub fn limit(&self) -> u32 {
        match self {
            QueueSpec::DropTail { limit } => *limit,
            QueueSpec::Red(red) => red.limit,
            QueueSpec::Rio(rio) => rio.limit,
        }
    }
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec::DEFAULT
    }
}

/// RED parameters (Floyd and Jacobson 1993), thresholds in packets of average queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RedSpec {
    /// Most packets held (default 50).
    pub limit: u32,
    /// Average queue below which nothing is dropped (default 5).
    pub min_th: f64,
    /// Average queue at which the drop probability reaches `max_p` (default 15).
    pub max_th: f64,
    /// Drop probability at `max_th` (default 0.1).
    pub max_p: f64,
    /// Gentle RED: between `max_th` and `2·max_th` the probability rises linearly from `max_p`
    /// to 1 instead of jumping to 1 (default false, ns-2's classic `gentle_`).
    pub gentle: bool,
    /// EWMA weight w_q of the average queue (default 0.002).
    pub weight: f64,
    /// Mark ECN-capable (ECT) packets Congestion Experienced instead of dropping them early
    /// (RFC 3168 §5; ns-2's `setbit_`); a full queue still drops. Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

/// A TFRC flow's media source, RFC 8867 §4.3's adaptive codec (`media = { … }`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MediaSpec {
    /// Frames per second (default 30, RFC 8867 §4.3: "Frame rate: 10 fps - 30 fps").
    pub fps: f64,
    /// The codec's lowest rate (default 150 kbps, RFC 8867 §4.3's bit rate range).
    pub min_rate: Rate,
    /// The rate of the first frame (default `min_rate`, RFC 8867 §4.3: "Media startup
    /// behavior: 150 Kbps").
    pub start_rate: Rate,
    /// Playout deadline of a frame from its capture (default 300 ms, as `docs/etp-video.toml`;
    /// RFC 8867 sets none).
    #[serde(serialize_with = "serialize_duration")]
    pub deadline: Duration,
    /// When the source pauses (RFC 8867 §5.8), from the start of the run.
    #[serde(
        serialize_with = "serialize_optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub pause: Option<Duration>,
    /// When it resumes; given exactly when `pause` is.
    #[serde(
        serialize_with = "serialize_optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub resume: Option<Duration>,
    /// What carries the frames (default `"etp"`).
    pub transport: MediaTransport,
}

/// What carries a media flow's frames (`media.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MediaTransport {
    /// An ETP connection (`"etp"`, the default): handshake, one unreliable, unordered stream
    /// whose messages are the frames with the playout deadline as their time control, ETP's
    /// acknowledgements; its rate control is the flow's TFRC (`tfrc`, `gtfrc` with
    /// `target_rate`, `tfrc-sp` with `variant = "sp"`), the same core as a bare TFRC flow.
    #[default]
    Etp,
    /// The bare TFRC core (`"tfrc"`): the frames as one byte stream packed into TFRC packets,
    /// the deadline applied at the sender as ETP's time control would, no ETP headers,
    /// handshake or acknowledgements. For comparisons with ETP, and for TFRC options the ETP
    /// descriptor does not carry (Veno, feedbacks per RTT, ECN, the ns-2 profile).
    Tfrc,
}

impl Default for RedSpec {
    fn default() -> Self {
        RedSpec {
            limit: 50,
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            weight: 0.002,
            gentle: false,
            ecn: false,
        }
    }
}

/// RIO parameters (Clark and Fang 1998), RIO-C: out-of-profile packets are dropped according to
/// the average of the whole queue, in-profile packets according to the average of in-profile
/// packets. Thresholds in packets. Defaults are the gTFRC paper's testbed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RioSpec {
    /// Most packets held, both colours together (default 50).
    pub limit: u32,
    /// In-profile minimum threshold (default 20).
    pub min_in: f64,
    /// In-profile maximum threshold (default 40).
    pub max_in: f64,
    /// In-profile drop probability at `max_in` (default 0.02).
    pub p_in: f64,
    /// Out-of-profile minimum threshold (default 10).
    pub min_out: f64,
    /// Out-of-profile maximum threshold (default 20).
    pub max_out: f64,
    /// Out-of-profile drop probability at `max_out` (default 0.1).
    pub p_out: f64,
    /// EWMA weight of both averages (default 0.002).
    pub weight: f64,
    /// Mark ECN-capable (ECT) packets CE instead of dropping them early, as [`RedSpec::ecn`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

impl Default for RioSpec {
    fn default() -> Self {
        RioSpec {
            limit: 50,
            min_in: 20.0,
            max_in: 40.0,
            p_in: 0.02,
            min_out: 10.0,
            max_out: 20.0,
            p_out: 0.1,
            weight: 0.002,
            ecn: false,
        }
    }
}

/// A loss model on a link direction, optionally active only during `[start, stop)`.
///
/// Serialized as the file writes it: `{ kind = "bernoulli", rate = 0.01, start = "10s" }`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LossSpec {
    /// Which packets are lost.
    #[serde(flatten)]
    pub model: LossModel,
    /// When the model starts acting (default 0s).
    #[serde(
        serialize_with = "serialize_duration",
        skip_serializing_if = "Duration::is_zero"
    )]
    pub start: Duration,
    /// When it stops acting (`None`: until the end of the run).
    #[serde(
        serialize_with = "serialize_optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub stop: Option<Duration>,
}

impl LossSpec {
    /// Whether the model acts at time `at` (since the start of the run).
    pub fn is_active(&self, at: Duration) -> bool {
        at >= self.start
            && match self.stop {
                Some(stop) => at < stop,
                None => true,
            }
    }
}

/// The random process deciding which packets are lost. Probabilities are per packet.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LossModel {
    /// Each packet is lost independently with probability `rate` (`kind = "bernoulli"`).
    Bernoulli {
        /// Loss probability, 0 ≤ rate ≤ 1.
        rate: f64,
    },
    /// The times between losses are exponentially distributed with mean `mean_gap`: after a
    /// loss at `t`, the first packet arriving at or after `t + gap` is lost
    /// (`kind = "exponential"`). Time-based, so the loss process does not depend on the traffic
    /// (a packet-counted exponential gap would be little more than Bernoulli loss).
    Exponential {
        /// Mean time between losses, > 0.
        #[serde(serialize_with = "serialize_duration")]
        mean_gap: Duration,
    },
    /// Two-state Markov chain, one transition per packet (`kind = "gilbert-elliott"`).
    GilbertElliott {
        /// Probability of moving from the good to the bad state, per packet.
        p_good_to_bad: f64,
        /// Probability of moving from the bad to the good state, per packet.
        p_bad_to_good: f64,
        /// Loss probability in the good state (default 0).
        loss_good: f64,
        /// Loss probability in the bad state (default 1).
        loss_bad: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost, when it does not depend on the traffic (`None`
    /// for time-based exponential gaps).
    pub fn mean_loss_rate(&self) -> Option<f64> {
        Some(match *self {
            LossModel::Bernoulli { rate } => rate,
            LossModel::Exponential { .. } => return None,
            LossModel::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let total = p_good_to_bad + p_bad_to_good;
                if total == 0.0 {
                    loss_good
                } else {
                    (p_bad_to_good * loss_good + p_good_to_bad * loss_bad) / total
                }
            }
        })
    }
}

/// A two-colour token-bucket marker on one link direction: packets of its flows that find
/// enough tokens are marked in-profile, the others out-of-profile. Several flows share one
/// bucket (an aggregate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkerSpec {
    /// The marked direction `[from, to]`; a link must join these nodes.
    pub link: [String; 2],
    /// The marking algorithm.
    pub kind: MarkerKind,
    /// The flows marked together. After [`crate::Scenario::expand`], instance names (`a.1`);
    /// before it, a flow with `count` is named by its base name.
    pub flows: Vec<String>,
    /// Token rate (committed information rate).
    pub rate: Rate,
    /// Bucket depth in bytes (committed burst size).
    #[serde(serialize_with = "serialize_toml_integer")]
    pub bucket: u64,
}

/// Marker algorithms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MarkerKind {
    /// Two-colour token bucket (`"token-bucket"`, the default).
    #[default]
    TokenBucket,
}

/// A traffic source and its sink.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Unique name (letters, digits, `_`, `-`, `.`). Instances of a flow with `count` are named
    /// `name.1` … `name.N`.
    pub name: String,
    /// Sending node.
    pub from: String,
    /// Receiving node.
    pub to: String,
    /// When the source starts (default 0s).
    pub start: Duration,
    /// When the source stops (`None`: at the end of the run; see [`FlowSpec::stop_time`]).
    pub stop: Option<Duration>,
    /// Packet size in bytes, headers included (default 1000).
    pub packet_size: u32,
    /// `Some(n)`: this entry stands for `n` identical flows `name.1` … `name.n`, expanded by
    /// [`crate::Scenario::expand`]. `None`: one flow named `name`.
    pub count: Option<u32>,
    /// `false`: the flow is defined but left out of the run (`enabled = false` in the file,
    /// default `true`). [`crate::Scenario::expand`] removes disabled flows and their marker
    /// references, so a sweep can switch flows on and off (the runs of one experiment that
    /// differ in which flows take part, e.g. "one TCP flow" vs "one TCP and one TFRC flow").
    pub enabled: bool,
    /// The protocol or traffic model and its own parameters.
    pub kind: FlowKind,
}

impl FlowSpec {
    /// The stop time, `run_duration` when none is given.
    pub fn stop_time(&self, run_duration: Duration) -> Duration {
        self.stop.unwrap_or(run_duration)
    }

    /// The kind's name as written in files: `"tfrc"`, `"tcp"`, `"cbr"`, `"pareto"`, `"exp-onoff"`.
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    /// The flow's kind as every output names it ([`FlowKind::output_kind`]).
    pub fn output_kind(&self) -> tfrc_output::FlowKind {
        self.kind.output_kind()
    }
}

/// The protocol or traffic model of a flow.
///
/// Serialized as the flow's `kind` and the kind's own keys (`kind = "tcp"`, `variant = "sack"`,
/// …); [`FlowSpec`] writes them among the flow's keys.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FlowKind {
    /// A TFRC sender and receiver (`kind = "tfrc"`).
    Tfrc(TfrcSpec),
    /// A TCP sender and sink (`kind = "tcp"`).
    Tcp(TcpSpec),
    /// Constant bit rate over UDP (`kind = "cbr"`).
    Cbr {
        /// Sending rate.
        rate: Rate,
    },
    /// Pareto on/off over UDP (`kind = "pareto"`, ns-2's Application/Traffic/Pareto).
    Pareto(OnOffSpec),
    /// Exponential on/off over UDP (`kind = "exp-onoff"`, ns-2's Application/Traffic/Exponential).
    /// Its `shape` is unused and always `None`.
    #[serde(rename = "exp-onoff")]
    ExponentialOnOff(OnOffSpec),
}

impl FlowKind {
    /// The kind as every output names it (`flows.csv`'s `kind`, `summary.json`): one output
    /// kind per scenario kind.
    pub fn output_kind(&self) -> tfrc_output::FlowKind {
        match self {
            FlowKind::Tfrc(_) => tfrc_output::FlowKind::Tfrc,
            FlowKind::Tcp(_) => tfrc_output::FlowKind::Tcp,
            FlowKind::Cbr { .. } => tfrc_output::FlowKind::Cbr,
            FlowKind::Pareto(_) => tfrc_output::FlowKind::Pareto,
            FlowKind::ExponentialOnOff(_) => tfrc_output::FlowKind::ExpOnOff,
        }
    }

    /// The kind's name as written in files (the output kind's name: one spelling of each).
    pub fn name(&self) -> &'static str {
        self.output_kind().name()
    }
}

/// TFRC options; each extension is off unless given.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TfrcSpec {
    /// gTFRC target rate g: the sender uses max(g, X).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<Rate>,
    /// RTT_ref: the receiver sends max(int(RTT / RTT_ref), 1) feedbacks per RTT.
    #[serde(
        serialize_with = "serialize_optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub rtt_ref: Option<Duration>,
    /// A fixed number of feedbacks per RTT whatever the RTT, as ns-2's `NumFeedback_`
    /// (key `feedbacks_per_rtt`; excludes `rtt_ref`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedbacks_per_rtt: Option<u32>,
    /// Veno loss differentiation (keys `veno_beta`, `veno_alpha`).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub veno: Option<VenoSpec>,
    /// Which reading of TFRC to follow (default RFC 5348).
    pub profile: TfrcProfile,
    /// History discounting of old loss intervals, RFC 5348 §5.5 (default false).
    pub history_discounting: bool,
    /// Oscillation prevention by √RTT spacing, RFC 5348 §4.5 (default false).
    pub oscillation_damping: bool,
    /// Standard TFRC or TFRC-SP, the small-packet variant of RFC 4828 (key `variant`, default
    /// `"standard"`).
    #[serde(skip_serializing_if = "TfrcVariant::is_standard")]
    pub variant: TfrcVariant,
    /// TFRC-SP's nominal segment size s of the equation, bytes (key `nominal_segment_size`,
    /// default 1460, RFC 4828 §3). `Some` exactly when `variant` is `"sp"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nominal_segment_size: Option<u32>,
    /// TFRC-SP's header size H, bytes (key `header_size`, default 40, RFC 4828 §3: the rate is
    /// reduced by s_true/(s_true + H)). `Some` exactly when `variant` is `"sp"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub header_size: Option<u32>,
    /// The application's data rate cap (key `max_rate`, as `tfrc send -b`): the application has
    /// one segment of data every s / `max_rate`, so the sender is data-limited above it (RFC
    /// 5348 §4.3's data-limited rules apply). `None`: bulk data (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<Rate>,
    /// A media source instead of bulk data (key `media`): frames at `fps`, each encoded at the
    /// rate TFRC allows within [`MediaSpec::min_rate`, `max_rate`] and judged against a playout
    /// deadline (RFC 8867 §4.3). Requires `max_rate`, the codec's top rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media: Option<MediaSpec>,
    /// The sender marks its data packets ECN-capable (ECT(0), RFC 3168), so that RED and RIO
    /// queues with `ecn = true` mark them CE instead of dropping them; the receiver counts a CE
    /// mark in its loss events (RFC 5348 §5.1: "For an ECN-capable connection, a marked packet
    /// is detected as a congestion event as soon as it arrives"). Default false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
}

/// Which TFRC a flow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TfrcVariant {
    /// RFC 5348 TFRC (`"standard"`, the default).
    #[default]
    Standard,
    /// TFRC-SP, RFC 4828 (`"sp"`): rate in bytes/s of a TCP flow with 1460-byte segments, less
    /// the headers, at most one packet per 10 ms, short loss intervals counting every loss.
    Sp,
}

impl TfrcVariant {
    /// True for standard TFRC (the variant written files leave out).
    pub fn is_standard(&self) -> bool {
        *self == TfrcVariant::Standard
    }
}

/// Veno differentiation parameters (keys `veno_beta`, `veno_alpha`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct VenoSpec {
    /// β in packets: a loss seen while the backlog N < β counts as non-congestion loss.
    #[serde(rename = "veno_beta")]
    pub beta: f64,
    /// α: a non-congestion loss interval counts α times its length (default 3).
    #[serde(rename = "veno_alpha")]
    pub alpha: f64,
}

/// Which reading of TFRC the core follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TfrcProfile {
    /// RFC 5348 as written (`"rfc5348"`, the default).
    #[default]
    Rfc5348,
    /// ns-2.35's `Agent/TFRC` behaviour (`"ns2"`), for side-by-side runs.
    Ns2,
}

/// TCP options.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct TcpSpec {
    /// Loss recovery variant (default SACK).
    pub variant: TcpVariant,
    /// The sink delays ACKs (one ACK per two segments or 100 ms, ns-2's `DelAck` `interval_`; default false, as ns-2's
    /// `TCPSink`).
    pub delayed_ack: bool,
    /// Largest congestion window in packets (`None`: unlimited; ns-2's default is 20).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u32>,
    /// Where the RFCs and ns-2.35's agents part, which one the sender follows (default the
    /// RFCs).
    pub profile: TcpProfile,
    /// Short transfers instead of one bulk transfer (key `downloads`): RFC 8868 §5.1's short TCP
    /// flows, groups of connections fetching small files separated by idle periods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub downloads: Option<DownloadsSpec>,
}

/// RFC 8868 §5.1's short TCP flows (`downloads = { … }` on a TCP flow): "30 connections start
/// simultaneously fetching small (30-50 KB) amounts of data, evenly distributed"; "The idle
/// period between bursts of starting a group of TCP flows is typically derived from an
/// exponential distribution with the mean value of 10 seconds."
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DownloadsSpec {
    /// Connections of a group, started together (default 30).
    pub connections: u32,
    /// The smallest transfer, bytes (default 30 000).
    pub min_size: u64,
    /// The largest transfer, bytes (default 50 000); each connection's size is uniform in
    /// [`min_size`, `max_size`].
    pub max_size: u64,
    /// Mean of the exponential idle time after a group's last transfer ends (default 10 s).
    #[serde(serialize_with = "serialize_duration")]
    pub idle: Duration,
    /// Whether the flow starts with a group (`"on"`, the default) or with an idle period
    /// (`"off"`; RFC 8867 §5.7: "two of them start in the ON state, while rest of the eight
    /// flows start in an OFF state").
    pub first: DownloadPhase,
}

/// The phase a short-TCP source starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DownloadPhase {
    /// A group of transfers at the flow's start.
    #[default]
    On,
    /// An idle period first.
    Off,
}

/// Which TCP the sender follows where the RFCs, ns-2.35 and ns-3.37 differ
/// (`tfrc_tcp::SenderConfig::ns2` lists ns-2's differences: the SYN round trip, unrounded
/// halving, the 3 s initial RTO; `tfrc_tcp::SenderConfig::ns3` ns-3's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpProfile {
    /// RFC 5681, 6298, 6582 and 6675 as written, with ns-2's values (`"rfc"`, the default).
    #[default]
    Rfc,
    /// ns-2.35's one-way `Agent/TCP` defaults (`"ns2"`), for side-by-side runs.
    Ns2,
    /// ns-3.37's `TcpSocketBase` where it differs from Linux (`"ns3"`: no RACK-TLP, RFC
    /// 6298's RTO with a 1 ms granularity, the backoff ending with the first new ACK, an
    /// impatient timer in recovery; `tfrc_tcp::SenderConfig::ns3`), for side-by-side runs with
    /// `tfrc ns3`.
    Ns3,
}

/// TCP variants: the papers' loss recoveries with Reno's window (`reno`, `newreno`, `sack`) and
/// today's congestion controls over SACK recovery (`cubic`, `bbr`; docs/network-elements.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpVariant {
    /// Reno: fast retransmit and fast recovery (`"reno"`).
    Reno,
    /// NewReno: partial ACKs keep fast recovery going (`"newreno"`).
    NewReno,
    /// SACK-based recovery (`"sack"`, the default).
    #[default]
    Sack,
    /// CUBIC (RFC 9438, as Linux's `tcp_cubic.c` runs it, HyStart included) over SACK recovery
    /// (`"cubic"`).
    Cubic,
    /// BBR v1 (draft-cardwell-iccrg-bbr-congestion-control-00, Linux's `tcp_bbr.c`), paced, over
    /// SACK recovery (`"bbr"`).
    Bbr,
}

impl TcpVariant {
    /// Whether the variant's sink sends SACK blocks (every variant but Reno and NewReno).
    #[must_use]
    pub fn uses_sack(self) -> bool {
        !matches!(self, TcpVariant::Reno | TcpVariant::NewReno)
    }
}

/// An on/off UDP source: sends at `rate` during on periods, nothing during off periods.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OnOffSpec {
    /// Sending rate during on periods.
    pub rate: Rate,
    /// Mean on time (key `burst`, default 500ms as ns-2).
    #[serde(serialize_with = "serialize_duration")]
    pub burst: Duration,
    /// Mean off time (key `idle`, default 500ms as ns-2).
    #[serde(serialize_with = "serialize_duration")]
    pub idle: Duration,
    /// Pareto shape parameter (default 1.5; must exceed 1). `None` for exponential on/off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<f64>,
}

/// What the run records and how often.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Output {
    /// Bin width of the per-flow and per-link time series (default 1s).
    #[serde(serialize_with = "serialize_duration")]
    pub interval: Duration,
    /// Sampling interval of protocol state (`None`: the same as `interval`).
    #[serde(
        serialize_with = "serialize_optional_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub state_interval: Option<Duration>,
}

impl Output {
    /// The state sampling interval, `interval` when none is given.
    pub fn state_sampling_interval(&self) -> Duration {
        self.state_interval.unwrap_or(self.interval)
    }
}

impl Default for Output {
    fn default() -> Self {
        Output {
            interval: Duration::from_secs(1),
            state_interval: None,
        }
    }
}

/// One axis of a sweep: a list of choices, each setting one or more override paths.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepAxis {
    /// The axis name used in variant names (`flows` in `e002-grid[flows=2,…]`).
    pub label: String,
    /// How the axis was written, so that it is written back the same way.
    pub form: SweepForm,
    /// The choices, in order.
    pub choices: Vec<SweepChoice>,
}

impl SweepAxis {
    /// The axis's key in the `[sweep]` table: the override path for a
    /// [`SweepForm::List`] axis, the label otherwise.
    pub fn file_key(&self) -> String {
        match self.form {
            SweepForm::List => self
                .choices
                .first()
                .and_then(|choice| choice.settings.first())
                .map(|(path, _)| path.clone())
                .unwrap_or_else(|| self.label.clone()),
            SweepForm::Paths | SweepForm::Grouped => self.label.clone(),
        }
    }
}

/// How a sweep axis is written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepForm {
    /// `"path" = [value, …]`: one path, label = its last segment.
    List,
    /// `label = { paths = […], values = […], labels = […] }`: every path gets the same value.
    Paths,
    /// `label = [ { "path" = value, …, label = "…" }, … ]`: each choice sets its own paths.
    Grouped,
}

/// One choice of a sweep axis.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepChoice {
    /// The override paths and the TOML values they get.
    pub settings: Vec<(String, toml::Value)>,
    /// The name components this choice adds to the variant name, in order (`("flows", "2")`).
    pub name_parts: Vec<(String, String)>,
    /// An explicit label given in the file (`labels = […]` or `label = "…"`), if any.
    pub explicit_label: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// The model written as a scenario file (every default explicit). `Scenario::to_toml_string`
// records it beside a run's results, and `Scenario::validate` reads it back; no intermediate
// form stands between the model and the file.

/// Writes an integer TOML can hold: values above [`crate::MAX_TOML_INTEGER`] (which
/// `Scenario::validate` reports) are written as that maximum.
fn serialize_toml_integer<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_u64((*value).min(crate::MAX_TOML_INTEGER))
}

/// The keys of one link direction as the file writes them at one level (the link's top
/// level or its `reverse` table); absent keys are left out.
#[derive(Default)]
struct DirectionKeys<'a> {
    capacity: Option<&'a Capacity>,
    delay: Option<Duration>,
    queue: Option<&'a QueueSpec>,
    loss: Option<&'a LossSpec>,
}

impl DirectionKeys<'_> {
    fn is_empty(&self) -> bool {
        self.capacity.is_none()
            && self.delay.is_none()
            && self.queue.is_none()
            && self.loss.is_none()
    }

    fn write<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error> {
        match self.capacity {
            Some(Capacity::Rate(rate)) => map.serialize_entry("rate", rate)?,
            Some(Capacity::Trace {
                path,
                offset,
                opportunity,
            }) => {
                map.serialize_entry("trace", &path.to_string_lossy())?;
                if !offset.is_zero() {
                    map.serialize_entry("trace_offset", &format_duration(*offset))?;
                }
                if *opportunity != TraceOpportunity::default() {
                    map.serialize_entry("trace_opportunity", opportunity.name())?;
                }
            }
            None => {}
        }
        if let Some(delay) = self.delay {
            map.serialize_entry("delay", &format_duration(delay))?;
        }
        if let Some(queue) = self.queue {
            map.serialize_entry("queue", queue)?;
        }
        if let Some(loss) = self.loss {
            map.serialize_entry("loss", loss)?;
        }
        Ok(())
    }
}

impl Serialize for DirectionKeys<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        self.write(&mut map)?;
        map.end()
    }
}

impl Serialize for Link {
    /// The file's shape: the forward direction's settings at the top level (a top-level
    /// capacity, delay and queue also apply to the reverse direction, a top-level loss to the
    /// forward direction only), and under `reverse` what the reverse direction has otherwise.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (forward, reverse) = (&self.forward, &self.reverse);
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("between", &self.between)?;
        DirectionKeys {
            capacity: Some(&forward.capacity),
            delay: Some(forward.delay),
            queue: Some(&forward.queue),
            loss: forward.loss.as_ref(),
        }
        .write(&mut map)?;
        let reverse_keys = DirectionKeys {
            capacity: (reverse.capacity != forward.capacity).then_some(&reverse.capacity),
            delay: (reverse.delay != forward.delay).then_some(reverse.delay),
            queue: (reverse.queue != forward.queue).then_some(&reverse.queue),
            loss: reverse.loss.as_ref(),
        };
        if !reverse_keys.is_empty() {
            map.serialize_entry("reverse", &reverse_keys)?;
        }
        map.end()
    }
}

impl Serialize for FlowSpec {
    /// The flow's common keys with `kind` second (as files are written), then the kind's own
    /// keys. `count`, `stop` are written when set; `enabled` only when false, so that expanded
    /// runs (which have no disabled flows) read as before the key existed.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error as _;
        let kind = match toml::Value::try_from(&self.kind) {
            Ok(toml::Value::Table(table)) => table,
            Ok(_) => return Err(S::Error::custom("a flow kind serializes as a table")),
            Err(error) => return Err(S::Error::custom(error)),
        };
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("kind", self.kind.name())?;
        map.serialize_entry("from", &self.from)?;
        map.serialize_entry("to", &self.to)?;
        map.serialize_entry("start", &format_duration(self.start))?;
        if let Some(stop) = self.stop {
            map.serialize_entry("stop", &format_duration(stop))?;
        }
        map.serialize_entry("packet_size", &self.packet_size)?;
        if let Some(count) = self.count {
            map.serialize_entry("count", &count)?;
        }
        if !self.enabled {
            map.serialize_entry("enabled", &false)?;
        }
        for (key, value) in kind.iter().filter(|(key, _)| *key != "kind") {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}
