//! What this driver adds on the wire around the core's packets.
//!
//! 1. **Flow options in every data payload.** The receiver's half of the extensions (feedbacks per
//!    RTT, Veno) and the segment size are chosen on the sender's command line, so every data
//!    packet's payload starts with a 20-byte [`FlowOptions`] block. The receiver builds a flow's
//!    `Config` from the first packet it gets (any packet will do, so losing the first one does not
//!    matter). A payload without a valid block is counted as malformed and dropped.
//! 2. **End of session.** Out of band, in two control datagrams that share the core's common
//!    header (version 1, a kind byte, the session id) but use kinds the core does not know:
//!    [`EndOfSession`] (sender → receiver: "I am done; here is what I sent") and
//!    [`EndAcknowledgement`] (receiver → sender: "here is what I received"). Both carry the
//!    session nonce, so a stray or spoofed one is counted and ignored like spoofed feedback. The
//!    sender repeats its END until acknowledged or a second has passed; the receiver also expires
//!    flows that stay idle (a sender that crashed never says goodbye).
//!
//! ```text
//! flow options (start of every data payload, 20 bytes, big-endian)
//!   0..4   magic "TFUO"
//!   4      options version (1)
//!   5      flags: bit 0 = rtt_ref present, bit 1 = veno present
//!   6..8   reserved (0)
//!   8..12  rtt_ref in microseconds
//!   12..16 veno beta in thousandths of a packet
//!   16..20 veno alpha in thousandths
//! end of session (36 bytes)
//!   0 version (1) · 1 kind 0x10 · 2..4 flags (0) · 4..8 session id · 8..12 nonce
//!   12..20 data packets sent · 20..28 bytes sent (headers included) · 28..36 duration in ns
//! end acknowledgement (56 bytes)
//!   0 version (1) · 1 kind 0x11 · 2..4 flags (0) · 4..8 session id · 8..12 nonce
//!   12..20 data packets received · 20..28 bytes received · 28..36 packets declared lost
//!   36..44 loss events · 44..48 loss event rate p (fraction of 2^32, as in feedback)
//!   48..56 duplicate packets
//! ```

use core::time::Duration;

use tfrc_proto::wire;
use tfrc_proto::{Config, Veno};

/// Length of the flow-options block at the start of every data payload.
pub const FLOW_OPTIONS_LEN: usize = 20;
const OPTIONS_MAGIC: &[u8; 4] = b"TFUO";
const OPTIONS_VERSION: u8 = 1;
const FLAG_RTT_REF: u8 = 1;
const FLAG_VENO: u8 = 2;

/// Kind byte of an end-of-session datagram.
pub const KIND_END: u8 = 0x10;
/// Kind byte of an end acknowledgement.
pub const KIND_END_ACK: u8 = 0x11;
/// Length of an end-of-session datagram.
pub const END_LEN: usize = 36;
/// Length of an end acknowledgement.
pub const END_ACK_LEN: usize = 56;

/// The receiver-side options a sender announces in its data payloads.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FlowOptions {
    /// Feedbacks per RTT: the receiver reports every RTT_ref (`Config::rtt_ref`).
    pub rtt_ref: Option<Duration>,
    /// Veno loss differentiation at the receiver (`Config::veno`).
    pub veno: Option<Veno>,
}

impl FlowOptions {
    /// The options of a configuration.
    pub fn from_config(config: &Config) -> FlowOptions {
        FlowOptions {
            rtt_ref: config.rtt_ref,
            veno: config.veno,
        }
    }

    /// Writes the block into the first [`FLOW_OPTIONS_LEN`] bytes of `buffer` (which must hold them).
    pub fn emit(&self, buffer: &mut [u8]) {
        let block = &mut buffer[..FLOW_OPTIONS_LEN];
        block.fill(0);
        block[0..4].copy_from_slice(OPTIONS_MAGIC);
        block[4] = OPTIONS_VERSION;
        let mut flags = 0;
        if let Some(rtt_ref) = self.rtt_ref {
            flags |= FLAG_RTT_REF;
            let micros = u32::try_from(rtt_ref.as_micros()).unwrap_or(u32::MAX);
            block[8..12].copy_from_slice(&micros.to_be_bytes());
        }
        if let Some(veno) = self.veno {
            flags |= FLAG_VENO;
            let thousandths =
                |value: f64| (value * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32;
            block[12..16].copy_from_slice(&thousandths(veno.beta).to_be_bytes());
            block[16..20].copy_from_slice(&thousandths(veno.alpha).to_be_bytes());
        }
        block[5] = flags;
    }

    /// Reads the block at the start of a data payload; `None` if it is absent or malformed.
    pub fn parse(payload: &[u8]) -> Option<FlowOptions> {
        let block = payload.get(..FLOW_OPTIONS_LEN)?;
        if &block[0..4] != OPTIONS_MAGIC || block[4] != OPTIONS_VERSION {
            return None;
        }
        let word = |range: core::ops::Range<usize>| {
            let mut bytes = [0u8; 4];
            bytes.copy_from_slice(&block[range]);
            u32::from_be_bytes(bytes)
        };
        let flags = block[5];
        let rtt_ref =
            (flags & FLAG_RTT_REF != 0).then(|| Duration::from_micros(u64::from(word(8..12))));
        let veno = (flags & FLAG_VENO != 0).then(|| Veno {
            beta: f64::from(word(12..16)) / 1000.0,
            alpha: f64::from(word(16..20)) / 1000.0,
        });
        Some(FlowOptions { rtt_ref, veno })
    }

    /// A receiver configuration with these options and s = `packet_size` (the payload of the
    /// flow's first packet, RFC 5348 §3.1), validated (hostile values are refused).
    pub fn receiver_config(&self, packet_size: u32) -> Option<Config> {
        let config = Config {
            packet_size,
            rtt_ref: self.rtt_ref,
            veno: self.veno,
            ..Config::default()
        };
        config.validate().ok().map(|()| config)
    }
}

/// Session id and nonce: what authenticates a control datagram.
fn put_common(buffer: &mut [u8], kind: u8, session_id: u32, nonce: u32) {
    buffer[0] = wire::VERSION;
    buffer[1] = kind;
    buffer[2..4].fill(0);
    buffer[4..8].copy_from_slice(&session_id.to_be_bytes());
    buffer[8..12].copy_from_slice(&nonce.to_be_bytes());
}

fn read_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_be_bytes(word)
}

fn read_u64(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(word)
}

/// The kind byte of a datagram that looks like one of ours (version 1), if any.
pub fn control_kind(bytes: &[u8]) -> Option<u8> {
    match bytes {
        [version, kind, ..]
            if *version == wire::VERSION && (*kind == KIND_END || *kind == KIND_END_ACK) =>
        {
            Some(*kind)
        }
        _ => None,
    }
}

/// The sender's goodbye, with its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndOfSession {
    /// Session id.
    pub session_id: u32,
    /// Session nonce.
    pub nonce: u32,
    /// Data packets sent.
    pub packets_sent: u64,
    /// Bytes sent, headers included.
    pub bytes_sent: u64,
    /// Time from the first packet to the end, nanoseconds.
    pub duration_nanos: u64,
}

impl EndOfSession {
    /// Writes the datagram; `buffer` must hold [`END_LEN`] bytes. Returns the length.
    pub fn emit(&self, buffer: &mut [u8]) -> usize {
        put_common(buffer, KIND_END, self.session_id, self.nonce);
        buffer[12..20].copy_from_slice(&self.packets_sent.to_be_bytes());
        buffer[20..28].copy_from_slice(&self.bytes_sent.to_be_bytes());
        buffer[28..36].copy_from_slice(&self.duration_nanos.to_be_bytes());
        END_LEN
    }

    /// Parses the datagram; `None` if it is not a well-formed end of session.
    pub fn parse(bytes: &[u8]) -> Option<EndOfSession> {
        if bytes.len() < END_LEN || control_kind(bytes) != Some(KIND_END) {
            return None;
        }
        Some(EndOfSession {
            session_id: read_u32(bytes, 4),
            nonce: read_u32(bytes, 8),
            packets_sent: read_u64(bytes, 12),
            bytes_sent: read_u64(bytes, 20),
            duration_nanos: read_u64(bytes, 28),
        })
    }
}

/// The receiver's answer to an end of session, with its totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndAcknowledgement {
    /// Session id.
    pub session_id: u32,
    /// Session nonce.
    pub nonce: u32,
    /// Data packets received (duplicates excluded).
    pub packets_received: u64,
    /// Bytes received, headers included.
    pub bytes_received: u64,
    /// Packets the receiver declared lost.
    pub packets_lost: u64,
    /// Loss events.
    pub loss_events: u64,
    /// Loss event rate p at the end, as a fraction of 2^32.
    pub loss_event_rate_raw: u32,
    /// Duplicate packets.
    pub duplicates: u64,
}

impl EndAcknowledgement {
    /// Writes the datagram; `buffer` must hold [`END_ACK_LEN`] bytes. Returns the length.
    pub fn emit(&self, buffer: &mut [u8]) -> usize {
        put_common(buffer, KIND_END_ACK, self.session_id, self.nonce);
        buffer[12..20].copy_from_slice(&self.packets_received.to_be_bytes());
        buffer[20..28].copy_from_slice(&self.bytes_received.to_be_bytes());
        buffer[28..36].copy_from_slice(&self.packets_lost.to_be_bytes());
        buffer[36..44].copy_from_slice(&self.loss_events.to_be_bytes());
        buffer[44..48].copy_from_slice(&self.loss_event_rate_raw.to_be_bytes());
        buffer[48..56].copy_from_slice(&self.duplicates.to_be_bytes());
        END_ACK_LEN
    }

    /// Parses the datagram; `None` if it is not a well-formed end acknowledgement.
    pub fn parse(bytes: &[u8]) -> Option<EndAcknowledgement> {
        if bytes.len() < END_ACK_LEN || control_kind(bytes) != Some(KIND_END_ACK) {
            return None;
        }
        Some(EndAcknowledgement {
            session_id: read_u32(bytes, 4),
            nonce: read_u32(bytes, 8),
            packets_received: read_u64(bytes, 12),
            bytes_received: read_u64(bytes, 20),
            packets_lost: read_u64(bytes, 28),
            loss_events: read_u64(bytes, 36),
            loss_event_rate_raw: read_u32(bytes, 44),
            duplicates: read_u64(bytes, 48),
        })
    }

    /// p as a number in [0, 1].
    pub fn loss_event_rate(&self) -> f64 {
        wire::decode_loss_event_rate(self.loss_event_rate_raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_options_round_trip_and_reject_garbage() {
        let options = FlowOptions {
            rtt_ref: Some(Duration::from_millis(100)),
            veno: Some(Veno {
                beta: 1.0,
                alpha: 3.0,
            }),
        };
        let mut buffer = [0xffu8; 64];
        options.emit(&mut buffer);
        assert_eq!(FlowOptions::parse(&buffer), Some(options));
        assert!(options.receiver_config(1000).is_some());
        assert_eq!(FlowOptions::parse(&buffer[..10]), None);
        assert_eq!(FlowOptions::parse(&[0u8; 32]), None);
        // Hostile values parse but give no configuration.
        let hostile = FlowOptions {
            rtt_ref: Some(Duration::ZERO),
            veno: None,
        };
        hostile.emit(&mut buffer);
        let parsed = FlowOptions::parse(&buffer).unwrap();
        assert!(parsed.receiver_config(1000).is_none());
    }

    #[test]
    fn control_datagrams_round_trip() {
        let end = EndOfSession {
            session_id: 7,
            nonce: 9,
            packets_sent: 1234,
            bytes_sent: 1_234_000,
            duration_nanos: 5_000_000_000,
        };
        let mut buffer = [0u8; 64];
        let length = end.emit(&mut buffer);
        assert_eq!(EndOfSession::parse(&buffer[..length]), Some(end));
        assert_eq!(EndOfSession::parse(&buffer[..length - 1]), None);
        assert_eq!(EndAcknowledgement::parse(&buffer[..length]), None);
        let ack = EndAcknowledgement {
            session_id: 7,
            nonce: 9,
            packets_received: 1200,
            bytes_received: 1_200_000,
            packets_lost: 34,
            loss_events: 3,
            loss_event_rate_raw: wire::encode_loss_event_rate(0.01),
            duplicates: 0,
        };
        let length = ack.emit(&mut buffer);
        assert_eq!(EndAcknowledgement::parse(&buffer[..length]), Some(ack));
        assert!((ack.loss_event_rate() - 0.01).abs() < 1e-9);
        assert_eq!(control_kind(&[1, 2, 3]), None);
    }
}
