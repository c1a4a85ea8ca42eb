//! The iperf3-style JSON documents of `tfrc send` as typed structs (schema in
//! `docs/udp-tools.md`). Field names are the JSON keys; documents are printed through
//! [`super::json_text`], which goes through a `serde_json::Value` whose objects order their keys
//! alphabetically, so a struct's field order does not change the bytes printed.

use serde::Serialize;
use tfrc_proto::Config;
use tfrc_udp::pacing::TimerCalibration;
use tfrc_udp::sender::{EndReason, ReceiverTotals, RttSummary, SenderInterval, SenderReport};

use super::{FlowName, SendArgs};

/// A float that JSON can hold: non-finite values (an unbounded rate) are written as `null`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Finite(pub f64);

impl Serialize for Finite {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            serializer.serialize_f64(self.0)
        } else {
            serializer.serialize_none()
        }
    }
}

/// `start.timestamp`.
#[derive(Debug, Serialize)]
pub(super) struct Timestamp {
    pub unix_s: f64,
}

/// `start.connecting_to`.
#[derive(Debug, Serialize)]
pub(super) struct ConnectingTo {
    pub host: String,
    pub port: u16,
}

/// One entry of `start.connected` (iperf3's list of streams, with our session and flow ids).
#[derive(Debug, Serialize)]
pub(super) struct Connected {
    pub local: String,
    pub session_id: String,
    pub flow_id: String,
}

/// `start.test_start.veno`.
#[derive(Debug, Serialize)]
pub(super) struct VenoStart {
    pub beta: f64,
    pub alpha: f64,
}

/// `start.test_start.small_packets`.
#[derive(Debug, Serialize)]
pub(super) struct SmallPacketsStart {
    pub nominal_segment_size: u32,
    pub header_size: u32,
}

/// `start.test_start`: the run's parameters.
#[derive(Debug, Serialize)]
pub(super) struct TestStart {
    pub duration_s: f64,
    pub packet_size: u32,
    pub num_streams: u32,
    pub target_rate_bps: Option<f64>,
    pub max_rate_bps: Option<f64>,
    pub rtt_ref_s: Option<f64>,
    pub veno: Option<VenoStart>,
    pub history_discounting: bool,
    pub oscillation_damping: bool,
    pub small_packets: Option<SmallPacketsStart>,
    pub ecn: bool,
    pub log: Option<String>,
    pub realtime: bool,
}

/// `start.offload`: many datagrams per system call (UDP GSO), or one ("none") where the kernel
/// has no GSO.
#[derive(Debug, Serialize)]
pub(super) struct Offload {
    pub send: &'static str,
}

/// `start.timer`: the sleep calibration behind pacing.
#[derive(Debug, Serialize)]
pub(super) struct TimerStart {
    pub sleep_late_p50_us: f64,
    pub sleep_late_p90_us: f64,
    pub spin_margin_us: f64,
    pub timer_granularity_us: f64,
}

/// `start` of a `tfrc send` document (TFRC flows).
#[derive(Debug, Serialize)]
pub(super) struct SendStart {
    pub version: String,
    pub protocol: &'static str,
    pub role: &'static str,
    pub timestamp: Timestamp,
    pub connecting_to: ConnectingTo,
    pub local: String,
    pub session_id: String,
    pub flow_id: String,
    pub connected: Vec<Connected>,
    pub test_start: TestStart,
    pub offload: Offload,
    pub timer: TimerStart,
}

impl SendStart {
    /// The start of a run of `names` (the first flow at the top, as before `-P`) to `to`, with
    /// the first sender's `config` and timer `calibration`.
    pub(super) fn new(
        args: &SendArgs,
        to: std::net::SocketAddr,
        names: &[FlowName],
        config: &Config,
        calibration: &TimerCalibration,
        send_offload: &'static str,
    ) -> SendStart {
        let first = &names[0];
        SendStart {
            version: super::version(),
            protocol: "tfrc",
            role: "sender",
            timestamp: Timestamp {
                unix_s: tfrc_udp::clock::unix_time_seconds(),
            },
            connecting_to: ConnectingTo {
                host: to.ip().to_string(),
                port: to.port(),
            },
            local: first.local.clone(),
            session_id: first.session.clone(),
            flow_id: first.flow_id.clone(),
            connected: names
                .iter()
                .map(|name| Connected {
                    local: name.local.clone(),
                    session_id: name.session.clone(),
                    flow_id: name.flow_id.clone(),
                })
                .collect(),
            test_start: TestStart {
                duration_s: args.time.as_secs_f64(),
                packet_size: args.packet_size,
                num_streams: args.parallel,
                target_rate_bps: args.target_rate,
                max_rate_bps: args.max_rate,
                rtt_ref_s: args.rtt_ref.map(|rtt| rtt.as_secs_f64()),
                veno: config.veno.map(|veno| VenoStart {
                    beta: veno.beta,
                    alpha: veno.alpha,
                }),
                history_discounting: config.history_discounting,
                oscillation_damping: config.oscillation_damping,
                small_packets: config.small_packets.map(|small| SmallPacketsStart {
                    nominal_segment_size: small.nominal_segment_size,
                    header_size: small.header_size,
                }),
                ecn: args.ecn,
                log: args.log.as_ref().map(|path| path.display().to_string()),
                realtime: args.realtime,
            },
            offload: Offload { send: send_offload },
            timer: TimerStart {
                sleep_late_p50_us: calibration.sleep_late_p50_us,
                sleep_late_p90_us: calibration.sleep_late_p90_us,
                spin_margin_us: calibration.spin_margin_us,
                timer_granularity_us: config.timer_granularity.as_secs_f64() * 1e6,
            },
        }
    }
}

/// An iperf3 `sum_sent` / `sum_received` object: the whole run from 0 to `seconds`; for
/// datagrams also iperf3's `lost_packets`, `packets`, `lost_percent` (and `jitter_ms` for
/// `sum_received`).
#[derive(Debug, Clone, Serialize)]
pub(super) struct Iperf3Sum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub bits_per_second: Finite,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<Finite>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
}

impl Iperf3Sum {
    /// The sum over `seconds` of `bytes` at `bits_per_second`; `lost_of` = `(lost, sent)`
    /// packets for datagrams.
    pub(super) fn new(
        seconds: f64,
        bytes: u64,
        bits_per_second: f64,
        lost_of: Option<(u64, u64)>,
    ) -> Iperf3Sum {
        Iperf3Sum {
            start: 0.0,
            end: seconds,
            seconds,
            bytes,
            bits_per_second: Finite(bits_per_second),
            lost_packets: lost_of.map(|(lost, _)| lost),
            packets: lost_of.map(|(_, sent)| sent),
            lost_percent: lost_of.map(|(lost, sent)| {
                Finite(if sent > 0 {
                    lost as f64 * 100.0 / sent as f64
                } else {
                    0.0
                })
            }),
            jitter_ms: None,
        }
    }

    /// iperf3's `sum_sent` over the flows: bytes and rates add up, over the longest flow's time.
    pub(super) fn sent(reports: &[SenderReport]) -> Iperf3Sum {
        let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
        Iperf3Sum::new(
            seconds,
            reports.iter().map(|r| r.bytes).sum(),
            reports.iter().map(|r| r.bits_per_second).sum(),
            None,
        )
    }

    /// iperf3's `sum_received` over the flows (None when a receiver did not acknowledge its end
    /// of session): bytes, rates, lost and sent packets add up; `jitter_ms` is the flows' mean,
    /// as iperf3's sum of UDP streams.
    pub(super) fn received(reports: &[SenderReport]) -> Option<Iperf3Sum> {
        let receivers = reports
            .iter()
            .map(|report| report.receiver)
            .collect::<Option<Vec<ReceiverTotals>>>()?;
        let sent: u64 = reports.iter().map(|r| r.packets).sum();
        let received: u64 = receivers.iter().map(|r| r.packets).sum();
        let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
        let mut sum = Iperf3Sum::new(
            seconds,
            receivers.iter().map(|r| r.bytes).sum(),
            receivers.iter().map(|r| r.bits_per_second).sum(),
            Some((sent.saturating_sub(received), sent)),
        );
        sum.jitter_ms =
            Some(receivers.iter().map(|r| r.jitter_ms).sum::<f64>() / receivers.len() as f64);
        Some(sum)
    }
}

/// `end.sender` of one flow: what it sent.
#[derive(Debug, Serialize)]
pub(super) struct SentTotals {
    pub seconds: f64,
    pub packets: u64,
    pub bytes: u64,
    pub payload_bytes: u64,
    pub bits_per_second: f64,
}

/// `end.counters` of one flow: feedback taken and refused (by reason), errors.
#[derive(Debug, Serialize)]
pub(super) struct Counters {
    pub feedbacks: u64,
    pub malformed: u64,
    pub foreign: u64,
    pub invalid_echo: u64,
    pub unproven: u64,
    pub hidden_loss: u64,
    pub unconfirmed: u64,
    pub replayed: u64,
    pub false_intervals: u64,
    pub under_reported: u64,
    pub lies: u64,
    pub p_raised: u64,
    pub x_recv_capped: u64,
    pub no_feedback_expiries: u64,
    pub send_errors: u64,
    pub icmp_errors: u64,
}

/// `end.final_state` of one flow: the TFRC core's variables when it stopped.
#[derive(Debug, Serialize)]
pub(super) struct FinalState {
    pub x_bps: Finite,
    pub sending_rate_bps: Finite,
    pub x_calc_bps: Finite,
    pub x_recv_bps: Finite,
    pub p: f64,
    pub rtt_s: Option<f64>,
    pub rto_s: f64,
    pub slow_start: bool,
}

/// The `end` of one flow: what it sent, what its receiver acknowledged, and its TFRC state;
/// with several flows each is an entry of `end.streams` with its ids.
#[derive(Debug, Serialize)]
pub(super) struct FlowEnd<'a> {
    pub reason: EndReason,
    pub sender: SentTotals,
    pub receiver: Option<ReceiverTotals>,
    pub mean_p: f64,
    pub rtt: RttSummary,
    pub pacing: &'a tfrc_udp::pacing::PacingSummary,
    pub timer_granularity_max_us: f64,
    pub counters: Counters,
    pub final_state: FinalState,
    pub cpu_utilization_percent: &'a tfrc_udp::clock::CpuUtilization,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flow_id: Option<String>,
}

impl<'a> FlowEnd<'a> {
    /// The end of the flow of `report`.
    pub(super) fn new(report: &'a SenderReport) -> FlowEnd<'a> {
        let stats = &report.stats;
        let state = &report.final_state;
        FlowEnd {
            reason: report.reason,
            sender: SentTotals {
                seconds: report.seconds,
                packets: report.packets,
                bytes: report.bytes,
                payload_bytes: report.payload_bytes,
                bits_per_second: report.bits_per_second,
            },
            receiver: report.receiver,
            mean_p: report.mean_p,
            rtt: report.rtt,
            pacing: &report.pacing,
            timer_granularity_max_us: report.timer_granularity_max_us,
            counters: Counters {
                feedbacks: stats.feedbacks,
                malformed: stats.malformed,
                foreign: stats.foreign,
                invalid_echo: stats.invalid_echo,
                unproven: stats.unproven,
                hidden_loss: stats.hidden_loss,
                unconfirmed: stats.unconfirmed,
                replayed: stats.replayed,
                false_intervals: stats.false_intervals,
                under_reported: stats.under_reported,
                lies: stats.lies,
                p_raised: stats.p_raised,
                x_recv_capped: stats.x_recv_capped,
                no_feedback_expiries: stats.no_feedback_expiries,
                send_errors: report.send_errors,
                icmp_errors: report.icmp_errors,
            },
            final_state: FinalState {
                x_bps: Finite(state.x * 8.0),
                sending_rate_bps: Finite(state.sending_rate * 8.0),
                x_calc_bps: Finite(state.x_calc * 8.0),
                x_recv_bps: Finite(state.x_recv * 8.0),
                p: state.p,
                rtt_s: state.rtt.map(|rtt| rtt.as_secs_f64()),
                rto_s: state.rto.as_secs_f64(),
                slow_start: state.slow_start,
            },
            cpu_utilization_percent: &report.cpu_utilization_percent,
            session_id: None,
            flow_id: None,
        }
    }
}

/// `end` of a `tfrc send` document: one flow's end at the top (as before `-P`), or each flow in
/// `streams`; the sums always.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum SendEnd<'a> {
    /// One flow.
    Single {
        #[serde(flatten)]
        flow: Box<FlowEnd<'a>>,
        sum_sent: Iperf3Sum,
        sum_received: Option<Iperf3Sum>,
    },
    /// Several flows.
    Several {
        streams: Vec<FlowEnd<'a>>,
        cpu_utilization_percent: &'a tfrc_udp::clock::CpuUtilization,
        sum_sent: Iperf3Sum,
        sum_received: Option<Iperf3Sum>,
    },
}

/// `intervals[k].sum`: the flows' reports of one interval added up.
#[derive(Debug, Serialize)]
pub(super) struct IntervalSum {
    pub start: f64,
    pub end: f64,
    pub seconds: f64,
    pub bytes: u64,
    pub packets: u64,
    pub bits_per_second: f64,
}

/// One stream of `intervals[k].streams`: a flow's interval report and its flow id.
#[derive(Debug, Serialize)]
pub(super) struct IntervalStream<'a> {
    #[serde(flatten)]
    pub interval: &'a SenderInterval,
    pub flow_id: &'a str,
}

/// One of iperf3's `intervals[]` entries: the reports of one interval of the flows that gave
/// it, and their sum.
#[derive(Debug, Serialize)]
pub(super) struct IntervalReport<'a> {
    pub streams: Vec<IntervalStream<'a>>,
    pub sum: IntervalSum,
}

impl<'a> IntervalReport<'a> {
    /// The entry for `group` (`group[k]`: flow k's report of this interval, if it gave one).
    pub(super) fn new(
        group: &'a [Option<SenderInterval>],
        names: &'a [FlowName],
    ) -> IntervalReport<'a> {
        let given: Vec<(&FlowName, &SenderInterval)> = names
            .iter()
            .zip(group)
            .filter_map(|(name, interval)| Some((name, interval.as_ref()?)))
            .collect();
        let start = given
            .iter()
            .map(|(_, i)| i.start)
            .fold(f64::INFINITY, f64::min);
        let end = given
            .iter()
            .map(|(_, i)| i.end)
            .fold(f64::NEG_INFINITY, f64::max);
        IntervalReport {
            sum: IntervalSum {
                start,
                end,
                seconds: end - start,
                bytes: given.iter().map(|(_, i)| i.bytes).sum(),
                packets: given.iter().map(|(_, i)| i.packets).sum(),
                bits_per_second: given.iter().map(|(_, i)| i.bits_per_second).sum(),
            },
            streams: given
                .into_iter()
                .map(|(name, interval)| IntervalStream {
                    interval,
                    flow_id: &name.flow_id,
                })
                .collect(),
        }
    }
}
