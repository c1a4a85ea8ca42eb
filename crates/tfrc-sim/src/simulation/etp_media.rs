//! A media flow carried by an ETP connection (`media.transport = "etp"`, the default): the
//! very `etp::Connection` of `tfrc stream` and of the UDP driver, driven by the simulator's
//! clock instead of a socket.
//!
//! The sender's end connects at the flow's start (INIT, INIT_ACK, COOKIE_ECHO, COOKIE_ACK
//! cross the simulated path like any datagram) and sends each frame of the codec
//! ([`tfrc_proto::MediaSource`], RFC 8867 §4.3) as one message on an unreliable, unordered
//! stream whose deadline is the playout deadline: ETP's time control drops a frame's bytes
//! still waiting at the sender when it passes ("a message not delivered within this time
//! after `send` is dropped (at the sender if not yet sent, at the receiver if it completes
//! later)", docs/etp.md). The codec encodes each frame at the rate the connection can send
//! ([`etp::Connection::sendable_rate`]). The receiver's end is a listener and the connection it
//! accepts; every message it delivers is judged by the same [`tfrc_proto::FrameLog`] as a bare
//! TFRC media flow's frames (RFC 8868 §3 computes metrics from both ends' logs): each message
//! starts with its frame's place in the media stream, so the log knows which frame arrived.
//!
//! The descriptor: `rate_control` from the flow (`tfrc`; `gtfrc` with the flow's
//! `target_rate`; `tfrc-sp` with `variant = "sp"`), `packet_size` the flow's `packet_size`
//! (the datagram; TFRC's s is what is left after the ETP and TFRC headers), one stream with
//! `reliability = "none"`, `ordering = "none"` and the deadline, the defaults otherwise
//! (keep-alive every 1 s, idle timeout 10 s).

use core::time::Duration;
use std::net::SocketAddr;

use etp::descriptor::{
    DurationValue, OrderingKind, RateControlKind, RateValue, ReliabilityKind, StreamDescriptor,
};
use etp::harness::StallGuard;
use etp::{Connection, Descriptor, ListenerConfig, ListeningEnd, MessageOptions};
use tfrc_proto::{Chunk, FrameLog, Instant, MediaConfig, MediaSource};

/// Bytes at the start of each frame's message: the frame's offset in the media stream (8) and
/// its length (4), big-endian.
const FRAME_HEADER: usize = 12;

/// Largest frame an ETP media flow carries (max_rate / fps): the messages are built in memory.
pub(super) const MAX_FRAME: u64 = 16 << 20;

/// The stream the frames go on.
const STREAM: u16 = 0;

/// Room for the largest datagram.
const DATAGRAM_ROOM: usize = 65_536;

/// Both ends of one ETP media flow and its frame accounting.
pub(super) struct EtpMedia {
    descriptor: Descriptor,
    /// The client's connection id and seed.
    connection_id: u32,
    seed: u64,
    client: Option<Connection>,
    server: ListeningEnd,
    /// Datagrams the listener answered with, waiting to be sent back.
    replies: Vec<Vec<u8>>,
    source: MediaSource,
    frames: FrameLog,
    buffer: Vec<u8>,
    client_guard: StallGuard,
    server_guard: StallGuard,
    /// Connections opened so far.
    connections: u32,
}

/// What the receiver's end measured about the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameCounts {
    /// Frames captured by the codec.
    pub(super) frames: u64,
    /// Frames delivered whole within their deadline.
    pub(super) on_time: u64,
    /// Frames that completed after their deadline (ETP drops them at the receiver).
    pub(super) late: u64,
}

/// The sender's TFRC state, for `state.csv`.
pub(super) struct SenderState {
    pub(super) x: Option<f64>,
    pub(super) p: f64,
    pub(super) rtt: Option<Duration>,
}

impl EtpMedia {
    /// The flow's two ends; the connection starts at [`EtpMedia::start`]. `packet_size` is the
    /// flow's datagram size, `target_rate` gTFRC's g in bytes/s.
    pub(super) fn new(
        media: MediaConfig,
        rate_control: RateControlKind,
        target_rate: Option<f64>,
        packet_size: u32,
        (connection_id, seed): (u32, u64),
        start: Instant,
    ) -> Result<EtpMedia, String> {
        let largest_frame = (media.max_rate / media.fps).ceil() as u64;
        if largest_frame > MAX_FRAME {
            return Err(format!(
                "frames of up to {largest_frame} bytes (max_rate / fps); an ETP media flow \
                 carries frames of at most {MAX_FRAME} bytes"
            ));
        }
        let mut descriptor = Descriptor::single_stream(rate_control);
        descriptor.target_rate = target_rate.map(|rate| RateValue::BitsPerSecond(rate * 8.0));
        descriptor.packet_size = packet_size;
        descriptor.max_message_size = (largest_frame as u32).max(FRAME_HEADER as u32 + 1);
        descriptor.send_buffer = descriptor
            .send_buffer
            .max(4 * u64::from(descriptor.max_message_size));
        let mut stream = StreamDescriptor::new(STREAM);
        stream.name = Some("media".into());
        stream.reliability = ReliabilityKind::None;
        stream.ordering = OrderingKind::None;
        stream.deadline = Some(DurationValue::Seconds(media.deadline.as_secs_f64()));
        descriptor.streams = vec![stream];
        descriptor
            .validate()
            .map_err(|error| format!("the ETP descriptor of this flow: {error}"))?;
        // Frames are whole messages: the source hands them over as they are captured.
        let source =
            MediaSource::new(media, usize::MAX, start).map_err(|error| error.to_string())?;
        let mut secret = [0u8; 16];
        secret[..8].copy_from_slice(&seed.to_be_bytes());
        secret[8..].copy_from_slice(&(!seed).to_be_bytes());
        Ok(EtpMedia {
            descriptor,
            connection_id,
            seed,
            client: None,
            server: ListeningEnd::new(
                ListenerConfig::new(secret),
                SocketAddr::from(([192, 0, 2, 1], 4000)),
            ),
            replies: Vec::new(),
            frames: FrameLog::new(media.deadline),
            source,
            buffer: vec![0; DATAGRAM_ROOM],
            client_guard: StallGuard::default(),
            server_guard: StallGuard::default(),
            connections: 0,
        })
    }

    /// The flow starts at `now`: the client connects (its INIT leaves at the next poll).
    pub(super) fn start(&mut self, now: Instant) -> Result<(), String> {
        self.connect(now)
    }

    /// A new connection, with an id and seed of its own for each attempt.
    fn connect(&mut self, now: Instant) -> Result<(), String> {
        let attempt = self.connections;
        let client = Connection::connect(
            now,
            self.descriptor.clone(),
            self.connection_id.wrapping_add(attempt << 16),
            self.seed.wrapping_add(u64::from(attempt)),
        )
        .map_err(|error| error.to_string())?;
        self.client = Some(client);
        self.connections += 1;
        Ok(())
    }

    /// Connections opened so far (more than one when a connection failed and the application
    /// reconnected).
    pub(super) fn connections(&self) -> u32 {
        self.connections
    }

    /// The flow stops at `now`: no frames after this, and the connection closes.
    pub(super) fn stop(&mut self, now: Instant) {
        if let Some(client) = &mut self.client {
            client.close(now);
        }
    }

    /// The sender's end at `now`: fires its timers, captures the frames due (while `active`)
    /// and queues them as messages, and hands every datagram it may send to `send`. Returns
    /// when to be woken next.
    pub(super) fn poll_client(
        &mut self,
        now: Instant,
        active: bool,
        send: &mut impl FnMut(&[u8]),
    ) -> Option<Instant> {
        let failed = self.client.as_ref().is_some_and(|client| {
            matches!(client.close_reason(), Some(etp::CloseReason::Error(_)))
        });
        if failed && active {
            // The connection failed (no answer to its INITs, or the peer went silent): the
            // application connects again, as a call would be re-established. Frames captured
            // in between are missed.
            if self.connect(now).is_err() {
                return None;
            }
        }
        let client = self.client.as_mut()?;
        if client.poll_timeout().is_some_and(|at| at <= now) {
            client.handle_timeout(now);
        }
        if active {
            self.source.capture(
                now,
                client.sendable_rate().unwrap_or(f64::INFINITY),
                client.unsent_bytes(),
            );
            let captured = self.source.take_captured();
            self.source.hand_over();
            for frame in &captured {
                let length = (frame.length as usize).max(FRAME_HEADER);
                let mut message = vec![0u8; length];
                message[..8].copy_from_slice(&frame.start.to_be_bytes());
                message[8..FRAME_HEADER]
                    .copy_from_slice(&(frame.length.min(u64::from(u32::MAX)) as u32).to_be_bytes());
                // A frame the connection refuses (its send buffer full) is never sent: the
                // log counts it missed.
                let _ = client.send(now, STREAM, message, MessageOptions::default());
            }
            self.frames.captured(captured);
        }
        while let Some(length) = client.poll_transmit(now, &mut self.buffer) {
            send(&self.buffer[..length]);
        }
        // While the flow is active the next frame wakes the sender, even if its connection
        // has just failed: the reconnection above happens then.
        let next_frame = active.then(|| self.source.next_frame());
        let want = [client.poll_timeout(), next_frame]
            .into_iter()
            .flatten()
            .min();
        want.map(|want| self.client_guard.check(now, want))
    }

    /// A datagram from the receiver's end reached the sender's.
    pub(super) fn client_datagram(&mut self, now: Instant, bytes: &[u8]) {
        if let Some(client) = &mut self.client {
            client.handle_datagram(now, bytes);
        }
    }

    /// A datagram from the sender's end reached the receiver's; returns the frame bytes it
    /// delivered (goodput). A listener's answer waits for [`EtpMedia::poll_server`].
    pub(super) fn server_datagram(&mut self, now: Instant, bytes: &[u8]) -> u64 {
        if let Some(length) = self.server.handle_datagram(now, bytes, &mut self.buffer) {
            self.replies.push(self.buffer[..length].to_vec());
        }
        self.deliver()
    }

    /// Takes the messages the receiver's end completed and judges their frames.
    fn deliver(&mut self) -> u64 {
        let Some(server) = self.server.connection_mut() else {
            return 0;
        };
        let mut delivered = 0;
        while let Some(message) = server.recv() {
            delivered += message.data.len() as u64;
            let Some(header) = message.data.get(..FRAME_HEADER) else {
                continue;
            };
            let mut offset = [0u8; 8];
            offset.copy_from_slice(&header[..8]);
            let mut length = [0u8; 4];
            length.copy_from_slice(&header[8..]);
            self.frames.arrived(
                message.completed_at,
                Chunk {
                    offset: u64::from_be_bytes(offset),
                    length: u32::from_be_bytes(length),
                },
            );
        }
        delivered
    }

    /// The receiver's end at `now`: fires its timers and hands every datagram it has to send
    /// back to `send`. Returns the frame bytes delivered by its timers, and when to be woken.
    pub(super) fn poll_server(
        &mut self,
        now: Instant,
        send: &mut impl FnMut(&[u8]),
    ) -> (u64, Option<Instant>) {
        for reply in self.replies.drain(..) {
            send(&reply);
        }
        let Some(server) = self.server.connection_mut() else {
            return (0, None);
        };
        if server.poll_timeout().is_some_and(|at| at <= now) {
            server.handle_timeout(now);
        }
        while let Some(length) = server.poll_transmit(now, &mut self.buffer) {
            send(&self.buffer[..length]);
        }
        let want = server.poll_timeout();
        let want = want.map(|want| self.server_guard.check(now, want));
        (self.deliver(), want)
    }

    /// The frames captured, on time and late.
    pub(super) fn frame_counts(&self) -> FrameCounts {
        let late_at_receiver = self
            .server
            .connection()
            .map_or(0, |server| server.stats().total().messages_late_at_receiver);
        let stats = self.frames.stats();
        FrameCounts {
            frames: self.source.stats().frames,
            on_time: stats.on_time,
            late: stats.late + late_at_receiver,
        }
    }

    /// Times an end asked to act at the instant it had just acted at, without end, and was
    /// moved on (0 unless ETP has a bug; tests check it).
    pub(super) fn stalls(&self) -> u64 {
        self.client_guard.stalls() + self.server_guard.stalls()
    }

    /// The sender's rate control state, once connected.
    pub(super) fn sender_state(&self) -> Option<SenderState> {
        let stats = self.client.as_ref()?.stats();
        Some(SenderState {
            x: stats.sending_rate,
            p: stats.loss_event_rate,
            rtt: stats.rtt,
        })
    }
}
