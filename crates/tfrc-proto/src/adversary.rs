//! Lying receivers, for testing a sender's defences (RFC 5348 §9, RFC 4342 §9): each [`Lie`]
//! rewrites a feedback that an honest [`crate::Receiver`] produced, keeping whatever proofs it
//! carries, as a receiver written from the wire format could. The adversary suites of the
//! tests and `tfrc recv --lie` use them; docs/udp-tools.md's threat model lists what each gets.
//!
//! A lie is written `NAME` or `NAME=VALUE`, several joined by `,` (applied in order):
//!
//! | lie | what the feedback then says |
//! |---|---|
//! | `p=0` | no loss |
//! | `p=min` | the smallest p > 0 on the wire (2^-32) whenever p > 0 |
//! | `p=VALUE` | p = VALUE whenever p > 0 |
//! | `p/N` | p divided by N |
//! | `x-recv=BYTES_PER_S` | X_recv = BYTES_PER_S |
//! | `t-delay+MICROS` | t_delay MICROS microseconds longer (a smaller RTT sample) |
//! | `merge` | the newest loss event hidden in a lossy part spanning both intervals; p as claimed |
//! | `tail` | the open interval's data part claimed as a loss not yet detected; p as claimed |
//! | `synthetic` | a synthetic first interval of 10^6 packets; p as claimed |
//! | `no-loss` | no loss ever: one interval from the first packet, its sum that of the marks received; p = 0 |
//! | `since-first` | one open interval since the first loss event (the synthetic one kept), its data part's sum that of the data parts received; p as claimed |
//! | `replay` | (drivers) every feedback sent twice, with the one before it again |

use core::fmt;
use core::str::FromStr;

use crate::loss_history;
use crate::wire::{self, FeedbackRepr, LossInterval};

/// One way to lie in a feedback.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lie {
    /// p = 0.
    NoLoss,
    /// p = `value` whenever p > 0 (2^-32 for `p=min`).
    LossRate(f64),
    /// p divided by this.
    LossRateDivided(f64),
    /// X_recv, bytes per second.
    ReceiveRate(u64),
    /// t_delay longer by this many microseconds.
    DelayAdded(u32),
    /// The newest loss event merged into the closed interval before it through its lossy part.
    MergeThroughLossyPart,
    /// The open interval's data part claimed as its tail.
    EndlessTail,
    /// A synthetic interval of 10^6 packets.
    InflatedSynthetic,
    /// No loss ever, with the marks received as the proof.
    HiddenInProvenRun,
    /// Every loss event since the first merged into one open interval.
    SinceFirstEvent,
    /// Every feedback sent twice, with the previous one again (for drivers: see
    /// [`Lie::replays`]).
    Replay,
}

/// Why a lie could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown lie {0:?}: expected p=0, p=min, p=VALUE, p/N, x-recv=BYTES_PER_S, t-delay+MICROS, merge, tail, synthetic, no-loss, since-first or replay")]
pub struct LieError(pub String);

impl FromStr for Lie {
    type Err = LieError;

    fn from_str(text: &str) -> Result<Lie, LieError> {
        let error = || LieError(text.to_owned());
        let number = |value: &str| {
            value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        Ok(match text.trim() {
            "p=0" => Lie::NoLoss,
            "p=min" => Lie::LossRate(1.0 / 4_294_967_296.0),
            "merge" => Lie::MergeThroughLossyPart,
            "tail" => Lie::EndlessTail,
            "synthetic" => Lie::InflatedSynthetic,
            "no-loss" => Lie::HiddenInProvenRun,
            "since-first" => Lie::SinceFirstEvent,
            "replay" => Lie::Replay,
            other => {
                if let Some(value) = other.strip_prefix("p=") {
                    Lie::LossRate(number(value).filter(|v| *v <= 1.0).ok_or_else(error)?)
                } else if let Some(value) = other.strip_prefix("p/") {
                    Lie::LossRateDivided(number(value).filter(|v| *v >= 1.0).ok_or_else(error)?)
                } else if let Some(value) = other.strip_prefix("x-recv=") {
                    Lie::ReceiveRate(number(value).ok_or_else(error)?.min(u64::MAX as f64) as u64)
                } else if let Some(value) = other.strip_prefix("t-delay+") {
                    Lie::DelayAdded(
                        number(value)
                            .filter(|v| *v <= f64::from(u32::MAX))
                            .ok_or_else(error)? as u32,
                    )
                } else {
                    return Err(error());
                }
            }
        })
    }
}

impl fmt::Display for Lie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lie::NoLoss => f.write_str("p=0"),
            Lie::LossRate(p) => write!(f, "p={p}"),
            Lie::LossRateDivided(n) => write!(f, "p/{n}"),
            Lie::ReceiveRate(rate) => write!(f, "x-recv={rate}"),
            Lie::DelayAdded(micros) => write!(f, "t-delay+{micros}"),
            Lie::MergeThroughLossyPart => f.write_str("merge"),
            Lie::EndlessTail => f.write_str("tail"),
            Lie::InflatedSynthetic => f.write_str("synthetic"),
            Lie::HiddenInProvenRun => f.write_str("no-loss"),
            Lie::SinceFirstEvent => f.write_str("since-first"),
            Lie::Replay => f.write_str("replay"),
        }
    }
}

impl Lie {
    /// Reads lies joined by `,`.
    pub fn parse_list(text: &str) -> Result<Vec<Lie>, LieError> {
        text.split(',').map(str::parse).collect()
    }

    /// Whether a driver should replay feedback ([`Lie::Replay`]).
    pub fn replays(lies: &[Lie]) -> bool {
        lies.contains(&Lie::Replay)
    }

    /// Rewrites `repr` with this lie.
    pub fn apply(&self, repr: &mut FeedbackRepr) {
        match *self {
            Lie::NoLoss => repr.loss_event_rate_raw = 0,
            Lie::LossRate(p) => {
                if repr.loss_event_rate_raw > 0 {
                    repr.loss_event_rate_raw = wire::encode_loss_event_rate(p);
                }
            }
            Lie::LossRateDivided(n) => {
                let p = repr.loss_event_rate() / n;
                repr.loss_event_rate_raw = if repr.loss_event_rate_raw > 0 {
                    wire::encode_loss_event_rate(p)
                } else {
                    0
                };
            }
            Lie::ReceiveRate(rate) => repr.x_recv = rate,
            Lie::DelayAdded(micros) => {
                repr.elapsed_micros = repr.elapsed_micros.saturating_add(micros);
            }
            Lie::MergeThroughLossyPart => merge_through_lossy_part(repr),
            Lie::EndlessTail => endless_tail(repr),
            Lie::InflatedSynthetic => inflated_synthetic(repr),
            Lie::HiddenInProvenRun => hidden_in_proven_run(repr),
            Lie::SinceFirstEvent => since_first_event(repr),
            Lie::Replay => {}
        }
    }

    /// Rewrites a feedback packet in place with `lies`; returns its new length (a merge makes
    /// it shorter). Bytes that are not a feedback are left alone.
    pub fn apply_all(lies: &[Lie], packet: &mut [u8]) -> usize {
        let Ok(view) = wire::Packet::new_checked(&*packet) else {
            return packet.len();
        };
        let Ok(mut repr) = FeedbackRepr::parse(&view) else {
            return packet.len();
        };
        for lie in lies {
            lie.apply(&mut repr);
        }
        match repr.emit(packet) {
            Ok(()) => repr.buffer_len(),
            Err(_) => packet.len(),
        }
    }
}

/// Sets p to what the intervals give as claimed (RFC 5348 §5.4's weights), so that a rewritten
/// table and its p agree.
fn consistent_p(repr: &mut FeedbackRepr) {
    let intervals = &repr.intervals;
    if intervals.count < 2 {
        repr.loss_event_rate_raw = 0;
        return;
    }
    let open = (intervals.entries[0].span() + u64::from(intervals.tail)) as f64;
    let closed = intervals.iter().skip(1).map(|entry| {
        let length = if entry.is_synthetic() {
            f64::from(entry.data)
        } else {
            entry.span() as f64
        };
        (length, 1.0)
    });
    let mean = loss_history::weighted_mean(open, closed, 1.0, false);
    repr.loss_event_rate_raw = wire::encode_loss_event_rate(1.0 / mean.max(1.0));
}

fn merge_through_lossy_part(repr: &mut FeedbackRepr) {
    let intervals = &mut repr.intervals;
    if intervals.count < 2 || intervals.entries[1].is_synthetic() {
        return;
    }
    let open = intervals.entries[0];
    let newest = intervals.entries[1];
    intervals.open_start = intervals
        .open_start
        .wrapping_sub(newest.lossy.wrapping_add(newest.data));
    let count = usize::from(intervals.count);
    intervals.entries.copy_within(2..count, 1);
    intervals.entries[0] = LossInterval {
        lossy: newest
            .lossy
            .saturating_add(newest.data)
            .saturating_add(open.lossy),
        data: open.data,
        sum: open.sum,
        flags: open.flags,
    };
    intervals.count -= 1;
    consistent_p(repr);
}

fn endless_tail(repr: &mut FeedbackRepr) {
    let intervals = &mut repr.intervals;
    if intervals.count < 2 {
        return;
    }
    intervals.tail = intervals.tail.saturating_add(intervals.entries[0].data);
    intervals.entries[0].data = 0;
    intervals.entries[0].sum = 0;
    consistent_p(repr);
}

fn inflated_synthetic(repr: &mut FeedbackRepr) {
    let count = usize::from(repr.intervals.count);
    if let Some(last) = repr.intervals.entries[..count].last_mut() {
        if last.is_synthetic() {
            last.data = 1_000_000;
        }
    }
    consistent_p(repr);
}

fn since_first_event(repr: &mut FeedbackRepr) {
    let intervals = &mut repr.intervals;
    let count = usize::from(intervals.count);
    let synthetic = intervals.entries[..count]
        .last()
        .copied()
        .filter(LossInterval::is_synthetic);
    let real = count - usize::from(synthetic.is_some());
    if real < 2 {
        return;
    }
    let (mut first, mut sum, mut span) = (intervals.open_start, 0u16, 0u32);
    for entry in &intervals.entries[1..real] {
        first = first.wrapping_sub(entry.lossy.wrapping_add(entry.data));
    }
    for entry in &intervals.entries[..real] {
        sum = sum.wrapping_add(entry.sum);
        span = span.wrapping_add(entry.lossy.wrapping_add(entry.data));
    }
    let oldest_lossy = intervals.entries[real - 1].lossy;
    intervals.open_start = first;
    intervals.entries[0] = LossInterval {
        lossy: oldest_lossy,
        data: span - oldest_lossy,
        sum,
        flags: 0,
    };
    intervals.count = 1;
    if let Some(synthetic) = synthetic {
        intervals.entries[1] = synthetic;
        intervals.count = 2;
    }
    consistent_p(repr);
}

fn hidden_in_proven_run(repr: &mut FeedbackRepr) {
    let intervals = &mut repr.intervals;
    let mut first = intervals.open_start;
    let mut sum = intervals.entries[0].sum;
    for entry in intervals.iter().skip(1) {
        if entry.is_synthetic() {
            break;
        }
        first = first.wrapping_sub(entry.lossy.wrapping_add(entry.data));
        sum = sum.wrapping_add(entry.sum);
    }
    intervals.open_start = first;
    intervals.tail = 0;
    intervals.count = 1;
    intervals.entries[0] = LossInterval {
        lossy: 0,
        data: repr.echo_sequence.wrapping_sub(first).wrapping_add(1),
        sum,
        flags: 0,
    };
    repr.loss_event_rate_raw = 0;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lies_read_and_print_back() {
        for text in [
            "p=0",
            "p=0.001",
            "p/10",
            "x-recv=1250000000",
            "t-delay+15000",
            "merge",
            "tail",
            "synthetic",
            "no-loss",
            "replay",
        ] {
            let lie: Lie = text.parse().unwrap();
            assert_eq!(lie.to_string(), text);
        }
        assert_eq!(
            "p=min".parse::<Lie>().unwrap(),
            Lie::LossRate(1.0 / 4_294_967_296.0)
        );
        assert_eq!(Lie::parse_list("p=min,x-recv=10").unwrap().len(), 2);
        for bad in [
            "",
            "p=2",
            "p=-1",
            "p/0.5",
            "x-recv=much",
            "t-delay+-3",
            "lie",
        ] {
            let error = bad.parse::<Lie>().unwrap_err();
            assert!(error.to_string().contains("unknown lie"), "{bad}: {error}");
        }
    }
}
