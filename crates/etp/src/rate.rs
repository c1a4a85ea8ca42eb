//! Rate-control micro-mechanisms: when may the next data packet leave.
//!
//! Every implementation writes the same TFRC data header (so the receiver's TFRC feedback and
//! RTT echo work whatever the sender's rate control) and decides the schedule:
//! - [`TfrcRate`]: `tfrc_proto::Sender`, plain TFRC or gTFRC (`target_rate` = the floor g);
//! - [`FixedRate`]: a constant rate, not congestion controlled;
//! - [`Unlimited`]: no pacing (tests).

use core::fmt;
use core::time::Duration;

use tfrc_proto::time::duration_from_secs;
use tfrc_proto::wire::{DataRepr, DATA_HEADER_LEN};
use tfrc_proto::{Config, Instant, Sender, SenderState};

use crate::descriptor::RateControlKind;

/// Why a packet could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateError {
    /// Not allowed to send yet.
    #[error("rate control does not allow a packet yet")]
    TooEarly,
    /// Buffer or payload size problem.
    #[error("packet does not fit: {0}")]
    Size(String),
}

/// A rate-control mechanism.
pub trait RateControl: fmt::Debug + Send {
    /// Which mechanism this is.
    fn kind(&self) -> RateControlKind;
    /// True if a packet may leave at `now`.
    fn can_send(&self, now: Instant) -> bool;
    /// Builds a TFRC data packet (header then `payload`) into `buffer`; returns its length.
    fn emit(&mut self, now: Instant, payload: &[u8], buffer: &mut [u8])
        -> Result<usize, RateError>;
    /// The application had nothing to send at a send opportunity (ignored by default).
    fn note_data_limited(&mut self, _now: Instant) {}
    /// A TFRC feedback packet from the peer (ignored by default: a mechanism without feedback).
    fn handle_feedback(&mut self, _now: Instant, _feedback: &[u8]) {}
    /// When the mechanism's own timer (e.g. TFRC's no-feedback timer) is due (none by default).
    fn timer(&self) -> Option<Instant> {
        None
    }
    /// Earliest time the next packet may leave (`None` = any time).
    fn next_send_time(&self) -> Option<Instant>;
    /// Fires due timers (none by default).
    fn handle_timeout(&mut self, _now: Instant) {}
    /// Current allowed sending rate in bytes/s (`None` = unlimited).
    fn sending_rate(&self) -> Option<f64>;
    /// Bytes/s of `payload`-byte payloads the mechanism lets out now, one per packet (`None` =
    /// unlimited); the allowed sending rate by default.
    fn payload_rate(&self, _payload: usize) -> Option<f64> {
        self.sending_rate()
    }
    /// Changes the gTFRC target rate in place; false if this mechanism has none (the default).
    fn set_target_rate(&mut self, _target_rate: Option<f64>) -> bool {
        false
    }
    /// TFRC state, for statistics (none by default).
    fn tfrc_state(&self) -> Option<SenderState> {
        None
    }
}

/// The TFRC core's configuration for `kind`: s = `packet_size`, gTFRC's floor g = `target_rate`
/// (bytes/s) with `gtfrc`, TFRC-SP's rules with `tfrc-sp`, plain TFRC otherwise (`fixed` and
/// `none` send no TFRC rate but their receiver still echoes TFRC feedback). Both ends build
/// theirs from the negotiated descriptor with this one function, so the receiver keeps the loss
/// history the sender's variant expects (TFRC-SP's short loss intervals are counted at the
/// receiver, RFC 4828 §4).
pub fn tfrc_config(kind: RateControlKind, target_rate: Option<f64>, packet_size: u32) -> Config {
    Config {
        packet_size,
        target_rate: if kind == RateControlKind::Gtfrc {
            target_rate
        } else {
            None
        },
        small_packets: (kind == RateControlKind::TfrcSp).then(tfrc_proto::SmallPackets::default),
        ..Config::default()
    }
}

/// Why [`build`] could not build a rate control.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RateSetupError {
    /// `fixed` without a rate.
    #[error("fixed rate control needs a fixed_rate")]
    MissingFixedRate,
    /// The TFRC sender refused its configuration (its message).
    #[error(transparent)]
    Tfrc(#[from] tfrc_proto::ConfigError),
}

/// Builds the rate control a descriptor asks for. `packet_size` is TFRC's s: the datagram less
/// the ETP and TFRC headers.
pub fn build(
    kind: RateControlKind,
    target_rate: Option<f64>,
    fixed_rate: Option<f64>,
    packet_size: u32,
    session_id: u32,
    key: u64,
    now: Instant,
) -> Result<Box<dyn RateControl>, RateSetupError> {
    Ok(match kind {
        RateControlKind::Fixed => Box::new(FixedRate::new(
            fixed_rate.ok_or(RateSetupError::MissingFixedRate)?,
            session_id,
            key,
        )),
        RateControlKind::None => Box::new(Unlimited::new(session_id, key)),
        RateControlKind::Tfrc | RateControlKind::Gtfrc | RateControlKind::TfrcSp => {
            let config = tfrc_config(kind, target_rate, packet_size);
            let sender = Sender::new(config, session_id, key, now)?;
            Box::new(TfrcRate { sender, kind })
        }
    })
}

/// TFRC, gTFRC or TFRC-SP, driven through `tfrc_proto::Sender`.
#[derive(Debug)]
pub struct TfrcRate {
    sender: Sender,
    kind: RateControlKind,
}

impl RateControl for TfrcRate {
    fn kind(&self) -> RateControlKind {
        self.kind
    }

    fn can_send(&self, now: Instant) -> bool {
        self.sender.can_send(now)
    }

    fn emit(
        &mut self,
        now: Instant,
        payload: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, RateError> {
        self.sender
            .send_packet(now, payload, buffer)
            .map_err(|error| match error {
                tfrc_proto::SendError::TooEarly(_) => RateError::TooEarly,
                other => RateError::Size(other.to_string()),
            })
    }

    fn note_data_limited(&mut self, now: Instant) {
        self.sender.note_data_limited(now);
    }

    fn handle_feedback(&mut self, now: Instant, feedback: &[u8]) {
        // Stale or foreign feedback is counted by the sender and otherwise ignored.
        let _ = self.sender.handle_packet(now, feedback);
    }

    fn timer(&self) -> Option<Instant> {
        Some(self.sender.no_feedback_deadline())
    }

    fn next_send_time(&self) -> Option<Instant> {
        Some(self.sender.next_send_time())
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.sender.handle_timeout(now);
    }

    fn sending_rate(&self) -> Option<f64> {
        Some(self.sender.sending_rate())
    }

    /// One packet per t_ipi: X, G = max(g, X) under gTFRC, at most one packet per 10 ms under
    /// TFRC-SP ("TFRC-SP enforces a Min Interval between packets of 10 ms", RFC 4828 §3).
    fn payload_rate(&self, payload: usize) -> Option<f64> {
        let interval = self.sender.inter_packet_interval().as_secs_f64();
        Some(payload as f64 / interval.max(1e-9))
    }

    fn set_target_rate(&mut self, target_rate: Option<f64>) -> bool {
        if self.sender.set_target_rate(target_rate).is_err() {
            return false;
        }
        self.kind = if target_rate.is_some() {
            RateControlKind::Gtfrc
        } else {
            RateControlKind::Tfrc
        };
        true
    }

    fn tfrc_state(&self) -> Option<SenderState> {
        Some(self.sender.state())
    }
}

/// Header fields shared by the non-TFRC mechanisms.
#[derive(Debug, Clone, Copy)]
struct HeaderWriter {
    session_id: u32,
    /// The packets' marks, as the TFRC sender's ([`tfrc_proto::wire::PacketMarker`]).
    marker: tfrc_proto::wire::PacketMarker,
    sequence: u32,
}

impl HeaderWriter {
    fn new(session_id: u32, key: u64) -> HeaderWriter {
        HeaderWriter {
            session_id,
            marker: tfrc_proto::wire::PacketMarker::new(key),
            sequence: 0,
        }
    }

    fn emit(
        &mut self,
        now: Instant,
        payload: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, RateError> {
        let length = DATA_HEADER_LEN + payload.len();
        if buffer.len() < length {
            return Err(RateError::Size(format!(
                "buffer of {} bytes, packet of {length}",
                buffer.len()
            )));
        }
        DataRepr {
            session_id: self.session_id,
            sequence: self.sequence,
            timestamp: now.as_nanos(),
            rtt_micros: 0,
            veno_backlog_millipackets: 0,
            nonce: self.marker.nonce(self.sequence),
        }
        .emit(buffer)
        .map_err(|error| RateError::Size(error.to_string()))?;
        buffer[DATA_HEADER_LEN..length].copy_from_slice(payload);
        self.sequence = self.sequence.wrapping_add(1);
        Ok(length)
    }
}

/// A constant rate in bytes/s: each packet of `n` bytes delays the next by `n / rate`.
#[derive(Debug)]
pub struct FixedRate {
    rate: f64,
    next_send: Instant,
    header: HeaderWriter,
}

impl FixedRate {
    /// A fixed rate of `rate` bytes/s.
    pub fn new(rate: f64, session_id: u32, key: u64) -> FixedRate {
        FixedRate {
            rate,
            next_send: Instant::ZERO,
            header: HeaderWriter::new(session_id, key),
        }
    }
}

impl RateControl for FixedRate {
    fn kind(&self) -> RateControlKind {
        RateControlKind::Fixed
    }

    fn can_send(&self, now: Instant) -> bool {
        now >= self.next_send
    }

    fn emit(
        &mut self,
        now: Instant,
        payload: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, RateError> {
        if !self.can_send(now) {
            return Err(RateError::TooEarly);
        }
        let length = self.header.emit(now, payload, buffer)?;
        // No catch-up burst after an idle period: the schedule restarts from now when behind by
        // more than one packet.
        let interval = duration_from_secs(length as f64 / self.rate);
        let nominal = if self.next_send + interval < now {
            now
        } else {
            self.next_send.max(now.saturating_sub(interval))
        };
        self.next_send = nominal + interval;
        Ok(length)
    }

    fn next_send_time(&self) -> Option<Instant> {
        Some(self.next_send)
    }

    fn sending_rate(&self) -> Option<f64> {
        Some(self.rate)
    }
}

/// No pacing: a packet may always leave.
#[derive(Debug)]
pub struct Unlimited {
    header: HeaderWriter,
}

impl Unlimited {
    /// An unpaced sender.
    pub fn new(session_id: u32, key: u64) -> Unlimited {
        Unlimited {
            header: HeaderWriter::new(session_id, key),
        }
    }
}

impl RateControl for Unlimited {
    fn kind(&self) -> RateControlKind {
        RateControlKind::None
    }

    fn can_send(&self, _now: Instant) -> bool {
        true
    }

    fn emit(
        &mut self,
        now: Instant,
        payload: &[u8],
        buffer: &mut [u8],
    ) -> Result<usize, RateError> {
        self.header.emit(now, payload, buffer)
    }

    fn next_send_time(&self) -> Option<Instant> {
        None
    }

    fn sending_rate(&self) -> Option<f64> {
        None
    }
}

/// Time for `bytes` at `rate` bytes/s.
pub fn transmission_time(bytes: usize, rate: f64) -> Duration {
    duration_from_secs(bytes as f64 / rate.max(1e-9))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rate_spaces_packets_by_size_over_rate() {
        let mut rate = FixedRate::new(100_000.0, 1, 2);
        let mut buffer = [0u8; 2000];
        let now = Instant::from_secs(1);
        let length = rate.emit(now, &[0u8; 968], &mut buffer).unwrap();
        assert_eq!(length, 1000);
        assert!(!rate.can_send(now + Duration::from_micros(9_999)));
        assert!(rate.can_send(now + Duration::from_millis(10)));
        assert_eq!(rate.emit(now, &[], &mut buffer), Err(RateError::TooEarly));
    }

    #[test]
    fn gtfrc_floor_changes_in_place() {
        let mut rate = build(RateControlKind::Tfrc, None, None, 1000, 1, 2, Instant::ZERO).unwrap();
        assert!(rate.sending_rate().unwrap() < 2000.0);
        assert!(rate.set_target_rate(Some(250_000.0)));
        assert_eq!(rate.kind(), RateControlKind::Gtfrc);
        assert_eq!(rate.sending_rate(), Some(250_000.0));
        assert!(!rate.set_target_rate(Some(-1.0)));
    }
}
