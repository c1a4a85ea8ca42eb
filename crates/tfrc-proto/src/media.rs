//! A rate-adaptive media source and its frame accounting, as RFC 8867 (the RMCAT evaluation
//! cases) describes the media of its test cases: frames at a fixed frame rate, each encoded at the
//! rate the congestion control allows within the codec's range, and judged at the receiver by
//! whether they arrive whole before their playout deadline.
//!
//! RFC 8867 §4.3: "Bit rate range: 150 Kbps - 1.5 Mbps", "Frame rate: 10 fps - 30 fps",
//! "Media startup behavior: 150 Kbps", and for audio "Media codec: CBR, Media bit rate:
//! 20 Kbps". RFC 8868 §3 asks for "Packets lost, packets discarded (from the playout or
//! de-jitter buffer)": a frame that misses its deadline is what the playout buffer discards.
//!
//! The source is ETP's unreliable stream with time control (docs/etp.md: "a message not
//! delivered within this time after `send` is dropped (at the sender if bytes of it still
//! wait, at the receiver if it completes later) and counted as late"), without retransmission.
//! Like the rest of this crate it reads no clock: the caller passes the time.
//!
//! Frames are cut into packets as a byte stream, as ETP packs message fragments into its
//! datagrams: a packet carries up to `max_payload` bytes of the stream, the end of one frame
//! and the start of the next if both are waiting, so full packets carry full payloads and
//! TFRC's packet rate (one packet of s bytes per t_ipi) is the media's byte rate. The
//! measurement side ([`FrameLog`]) knows each frame's place in the stream from the sender's log
//! (RFC 8868 §3 computes its metrics from the logs of both ends) and the byte ranges that
//! arrived, and judges each frame when its last byte arrives.

use core::time::Duration;
use std::collections::VecDeque;

use crate::time::Instant;

/// RFC 8698's BETA_V, "Scaling parameter for modulating video encoder target rate": 0.1.
pub const SHAPING_BETA_V: f64 = 0.1;

/// How a media source encodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaConfig {
    /// Frames per second. Frame k is captured k / fps after the start, rounded to the
    /// nanosecond (so 30 frames/s gives exactly 30 frames a second).
    pub fps: f64,
    /// The codec's lowest rate, bytes/s: frames are never encoded below it.
    pub min_rate: f64,
    /// The codec's highest rate, bytes/s.
    pub max_rate: f64,
    /// The rate of the first frame, bytes/s (RFC 8867 §4.3's startup rate).
    pub start_rate: f64,
    /// Playout deadline: a frame not whole at the receiver this long after its capture is
    /// discarded; its packets still waiting at the sender by then are not sent.
    pub deadline: Duration,
    /// A pause `(from, until)`: no frames are captured in between (RFC 8867 §5.8).
    pub pause: Option<(Instant, Instant)>,
}

impl MediaConfig {
    /// Checks the values; the error names the bad one.
    pub fn validate(&self) -> Result<(), MediaError> {
        if !(self.fps.is_finite() && self.fps > 0.0 && self.fps <= 1e6) {
            return Err(MediaError::FrameRate(self.fps));
        }
        for (name, rate) in [
            ("min_rate", self.min_rate),
            ("max_rate", self.max_rate),
            ("start_rate", self.start_rate),
        ] {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(MediaError::Rate { name, rate });
            }
        }
        if self.min_rate > self.max_rate {
            return Err(MediaError::MinAboveMax {
                min_bps: self.min_rate * 8.0,
                max_bps: self.max_rate * 8.0,
            });
        }
        if !(self.min_rate..=self.max_rate).contains(&self.start_rate) {
            return Err(MediaError::StartOutside {
                start_bps: self.start_rate * 8.0,
            });
        }
        if self.deadline.is_zero() {
            return Err(MediaError::Deadline);
        }
        if let Some((from, until)) = self.pause {
            if until <= from {
                return Err(MediaError::Pause);
            }
        }
        Ok(())
    }
}

/// A media source's configuration that cannot be used ([`MediaConfig::validate`],
/// [`MediaSource::new`]); the message names the bad value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MediaError {
    /// `fps` is not a frame rate in (0, 10^6].
    #[error("fps must be a frame rate above 0, got {0}")]
    FrameRate(f64),
    /// A rate (`name`) is not positive and finite.
    #[error("{name} must be a positive rate, got {rate} bytes/s")]
    Rate {
        /// The field.
        name: &'static str,
        /// Its value, bytes/s.
        rate: f64,
    },
    /// `min_rate` above `max_rate`.
    #[error("min_rate ({min_bps} bit/s) is above max_rate ({max_bps} bit/s)")]
    MinAboveMax {
        /// min_rate, bit/s.
        min_bps: f64,
        /// max_rate, bit/s.
        max_bps: f64,
    },
    /// `start_rate` outside [min_rate, max_rate].
    #[error("start_rate ({start_bps} bit/s) is outside [min_rate, max_rate]")]
    StartOutside {
        /// start_rate, bit/s.
        start_bps: f64,
    },
    /// A zero deadline.
    #[error("the deadline must be positive")]
    Deadline,
    /// A pause that ends before it starts.
    #[error("the pause must end after it starts")]
    Pause,
    /// Packets without room for a payload byte.
    #[error("media packets need a payload of at least 1 byte")]
    EmptyPayload,
}

/// Counters of a media source.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MediaSourceStats {
    /// Frames captured.
    pub frames: u64,
    /// Bytes encoded.
    pub bytes_encoded: u64,
    /// Bytes dropped at the sender because their frame's deadline passed before they left.
    pub bytes_expired: u64,
}

/// One frame's place in the media byte stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame {
    /// Offset of its first byte in the stream.
    pub start: u64,
    /// Its size in bytes (at least 1).
    pub length: u64,
    /// When it was captured.
    pub captured: Instant,
}

impl Frame {
    fn end(&self) -> u64 {
        self.start + self.length
    }
}

/// A piece of the media byte stream in one packet: `length` bytes from `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Offset of the first byte in the stream.
    pub offset: u64,
    /// Bytes (at least 1, at most the packet's payload).
    pub length: u32,
}

/// The sending side: captures frames on schedule into a byte stream and hands it out in
/// packets of at most `max_payload` bytes as the congestion control allows.
#[derive(Debug, Clone)]
pub struct MediaSource {
    config: MediaConfig,
    max_payload: usize,
    /// When frame 0 is captured.
    origin: Instant,
    /// The index of the next frame on the schedule (frames skipped by a pause included).
    next_index: u64,
    next_frame: Instant,
    /// Frames with bytes not yet sent, oldest first.
    waiting: VecDeque<Frame>,
    /// The next byte to send.
    next_byte: u64,
    /// Frames captured since the last [`MediaSource::take_captured`].
    captured: Vec<Frame>,
    stats: MediaSourceStats,
    /// The rate the last frame was encoded at, bytes/s.
    encoding_rate: f64,
}

impl MediaSource {
    /// A source whose first frame is captured at `start`, sending packets of at most
    /// `max_payload` bytes (at least 1).
    pub fn new(
        config: MediaConfig,
        max_payload: usize,
        start: Instant,
    ) -> Result<Self, MediaError> {
        config.validate()?;
        if max_payload == 0 {
            return Err(MediaError::EmptyPayload);
        }
        Ok(MediaSource {
            config,
            max_payload,
            origin: start,
            next_index: 0,
            next_frame: start,
            waiting: VecDeque::new(),
            next_byte: 0,
            captured: Vec::new(),
            stats: MediaSourceStats::default(),
            encoding_rate: config.start_rate,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &MediaConfig {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> MediaSourceStats {
        self.stats
    }

    /// The rate the last frame was encoded at (the start rate before the first), bytes/s.
    pub fn encoding_rate(&self) -> f64 {
        self.encoding_rate
    }

    /// When the next frame is captured.
    pub fn next_frame(&self) -> Instant {
        self.next_frame
    }

    /// Captures every frame due by `now`. The first is encoded at the start rate, the others at
    /// the target rate RFC 8698 §5.2.2 derives from `allowed_rate` (bytes/s: what the congestion
    /// control can send now, NADA's r_ref) and the sender's backlog `backlog` (bytes waiting to
    /// be sent, its "rate-shaping buffer"), kept within [min_rate, max_rate]: RFC 8867 §4.3's
    /// adaptive codec. Frames due during the pause are skipped.
    ///
    /// RFC 8698 §5.2.2: "r_diff_v = min(0.05*r_ref, BETA_V*8*buffer_len*FPS)", "r_vin =
    /// max(RMIN, r_ref - r_diff_v)", with BETA_V = 0.1 ("A large rate-shaping buffer nudges
    /// the encoder target rate slightly below ... the reference rate r_ref"). Without it a
    /// codec that encodes exactly what can be sent keeps any backlog (e.g. the per-message
    /// headers of a transport) until the frames' deadlines drop it.
    pub fn capture(&mut self, now: Instant, allowed_rate: f64, backlog: u64) {
        while self.next_frame <= now {
            let at = self.next_frame;
            self.next_index += 1;
            self.next_frame = self.frame_time(self.next_index);
            if let Some((from, until)) = self.config.pause {
                if at >= from && at < until {
                    // Skip to the first frame time at or after the resume.
                    while self.next_frame < until {
                        self.next_index += 1;
                        self.next_frame = self.frame_time(self.next_index);
                    }
                    continue;
                }
            }
            let rate = if self.stats.frames == 0 {
                self.config.start_rate
            } else if allowed_rate.is_finite() {
                // In bytes/s: 8*buffer_len bits is buffer_len bytes.
                let shaping =
                    (0.05 * allowed_rate).min(SHAPING_BETA_V * backlog as f64 * self.config.fps);
                (allowed_rate - shaping).clamp(self.config.min_rate, self.config.max_rate)
            } else {
                self.config.max_rate
            };
            self.encoding_rate = rate;
            let length = ((rate / self.config.fps).round() as u64).max(1);
            let start = self.waiting.back().map_or(self.next_byte, Frame::end);
            let frame = Frame {
                start,
                length,
                captured: at,
            };
            self.waiting.push_back(frame);
            self.captured.push(frame);
            self.stats.frames += 1;
            self.stats.bytes_encoded += length;
        }
    }

    /// When frame `index` of the schedule is captured.
    fn frame_time(&self, index: u64) -> Instant {
        let offset = (index as f64 * 1e9 / self.config.fps).round();
        Instant::from_nanos(self.origin.as_nanos().saturating_add(offset as u64))
    }

    /// Hands every waiting frame over whole to a transport that carries frames as messages
    /// (ETP): the source forgets them, the transport's own time control drops them at their
    /// deadline.
    pub fn hand_over(&mut self) {
        if let Some(last) = self.waiting.back() {
            self.next_byte = last.end();
        }
        self.waiting.clear();
    }

    /// The frames captured since the last call, for the measurement's log.
    pub fn take_captured(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.captured)
    }

    /// Drops the waiting frames whose deadline has passed (their unsent bytes are not sent).
    fn expire(&mut self, now: Instant) {
        let deadline = self.config.deadline;
        while let Some(frame) = self.waiting.front() {
            if frame.captured + deadline > now {
                break;
            }
            self.stats.bytes_expired += frame.end() - self.next_byte.max(frame.start);
            self.next_byte = frame.end();
            self.waiting.pop_front();
        }
    }

    /// True when bytes are waiting at `now` (after dropping expired frames).
    pub fn has_data(&mut self, now: Instant) -> bool {
        self.expire(now);
        !self.waiting.is_empty()
    }

    /// Bytes waiting to be sent (expired ones included until the next
    /// [`MediaSource::has_data`]).
    pub fn queued_bytes(&self) -> u64 {
        self.waiting
            .back()
            .map_or(0, |last| last.end() - self.next_byte)
    }

    /// The next packet's piece of the stream at `now`: up to `max_payload` bytes, across
    /// frames; `None` when nothing is waiting.
    pub fn pop(&mut self, now: Instant) -> Option<Chunk> {
        self.expire(now);
        let last = self.waiting.back()?.end();
        let length = (last - self.next_byte).min(self.max_payload as u64);
        let chunk = Chunk {
            offset: self.next_byte,
            length: length as u32,
        };
        self.next_byte += length;
        while self
            .waiting
            .front()
            .is_some_and(|frame| frame.end() <= self.next_byte)
        {
            self.waiting.pop_front();
        }
        Some(chunk)
    }
}

/// Counters of the measurement side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames whose every byte reached the receiver within the deadline of their capture.
    pub on_time: u64,
    /// Frames that arrived whole, but after their deadline.
    pub late: u64,
}

/// How long after its deadline a frame that has not arrived whole is still awaited (it can
/// only be late by then); older ones are forgotten, which bounds the log.
pub const LATE_HORIZON: Duration = Duration::from_secs(10);

/// A frame being received: bytes still missing.
#[derive(Debug, Clone, Copy)]
struct Receiving {
    frame: Frame,
    missing: u64,
}

/// The measurement side: the sender's log of frames and the byte ranges that reached the
/// receiver; each frame is counted once, when its last byte arrives, as on time or late.
#[derive(Debug, Clone)]
pub struct FrameLog {
    deadline: Duration,
    /// Frames not yet whole and not yet forgotten, by stream offset.
    frames: VecDeque<Receiving>,
    stats: FrameStats,
}

impl FrameLog {
    /// A log judging frames against `deadline`.
    pub fn new(deadline: Duration) -> FrameLog {
        FrameLog {
            deadline,
            frames: VecDeque::new(),
            stats: FrameStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> FrameStats {
        self.stats
    }

    /// Frames the sender captured (in stream order).
    pub fn captured(&mut self, frames: impl IntoIterator<Item = Frame>) {
        self.frames
            .extend(frames.into_iter().map(|frame| Receiving {
                frame,
                missing: frame.length,
            }));
    }

    /// A packet's piece of the stream arrived at `now` (each piece arrives at most once: the
    /// media is not retransmitted).
    pub fn arrived(&mut self, now: Instant, chunk: Chunk) {
        let (from, to) = (chunk.offset, chunk.offset + u64::from(chunk.length));
        let mut index = self.frames.partition_point(|r| r.frame.end() <= from);
        while let Some(receiving) = self.frames.get_mut(index) {
            if receiving.frame.start >= to {
                break;
            }
            let overlap = to.min(receiving.frame.end()) - from.max(receiving.frame.start);
            receiving.missing = receiving.missing.saturating_sub(overlap);
            if receiving.missing > 0 {
                index += 1;
                continue;
            }
            // Whole: counted once, and forgotten.
            if now.saturating_duration_since(receiving.frame.captured) <= self.deadline {
                self.stats.on_time += 1;
            } else {
                self.stats.late += 1;
            }
            self.frames.remove(index);
        }
        // Forget frames too old to matter (they can only be late by now); frames are in
        // capture order, so the old ones are at the front.
        let horizon = self.deadline + LATE_HORIZON;
        while self
            .frames
            .front()
            .is_some_and(|r| r.frame.captured + horizon < now)
        {
            self.frames.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn video() -> MediaConfig {
        // RFC 8867 §4.3: 150 kb/s – 1.5 Mb/s, starting at 150 kb/s; 30 frames/s.
        MediaConfig {
            fps: 30.0,
            min_rate: 150_000.0 / 8.0,
            max_rate: 1_500_000.0 / 8.0,
            start_rate: 150_000.0 / 8.0,
            deadline: Duration::from_millis(300),
            pause: None,
        }
    }

    fn drain(source: &mut MediaSource, now: Instant) -> Vec<Chunk> {
        std::iter::from_fn(|| source.pop(now)).collect()
    }

    #[test]
    fn a_backlog_nudges_the_target_rate_below_the_allowed_rate_by_at_most_five_percent() {
        // RFC 8698 §5.2.2: r_diff_v = min(0.05*r_ref, BETA_V*8*buffer_len*FPS).
        let mut source = MediaSource::new(video(), 1168, Instant::ZERO).unwrap();
        source.capture(Instant::ZERO, 1e9, 0); // the first frame, at the start rate
        let allowed = 100_000.0; // 800 kb/s
                                 // 10 bytes waiting: 0.1 * 10 * 30 = 30 bytes/s below (bits: 0.1 * 8 * 10 * 30).
        source.capture(Instant::from_millis(34), allowed, 10);
        assert!((source.encoding_rate() - (allowed - 30.0)).abs() < 1e-9);
        // A large backlog: bounded by 5 % of r_ref.
        source.capture(Instant::from_millis(67), allowed, 1_000_000);
        assert!((source.encoding_rate() - 0.95 * allowed).abs() < 1e-9);
        // No backlog: the allowed rate itself.
        source.capture(Instant::from_millis(100), allowed, 0);
        assert_eq!(source.encoding_rate(), allowed);
    }

    #[test]
    fn frames_follow_the_allowed_rate_within_the_codec_range() {
        let mut source = MediaSource::new(video(), 1168, Instant::ZERO).unwrap();
        // The first frame at the start rate: 150 kb/s / 30 = 625 bytes.
        source.capture(Instant::ZERO, 1e9, 0);
        assert_eq!(source.take_captured()[0].length, 625);
        // Then the allowed rate, capped at 1.5 Mb/s: 6250 bytes.
        source.capture(Instant::from_millis(34), 1e9, 0);
        assert_eq!(source.take_captured()[0].length, 6250);
        // Below the floor: still 150 kb/s.
        source.capture(Instant::from_millis(67), 1000.0, 0);
        assert_eq!(source.encoding_rate(), 150_000.0 / 8.0);
        assert_eq!(source.stats().frames, 3);
        assert_eq!(source.stats().bytes_encoded, 625 + 6250 + 625);
    }

    #[test]
    fn packets_are_full_and_cross_frame_boundaries() {
        let mut source = MediaSource::new(video(), 1000, Instant::ZERO).unwrap();
        source.capture(Instant::ZERO, 0.0, 0); // 625 bytes
        source.capture(Instant::from_millis(34), 0.0, 0); // 625 more
        let chunks = drain(&mut source, Instant::from_millis(34));
        // 1250 bytes in a full packet and the rest: the first packet holds frame 0 and the
        // start of frame 1.
        assert_eq!(
            chunks,
            [
                Chunk {
                    offset: 0,
                    length: 1000
                },
                Chunk {
                    offset: 1000,
                    length: 250
                }
            ]
        );
        assert_eq!(source.queued_bytes(), 0);
    }

    #[test]
    fn bytes_past_their_deadline_are_not_sent() {
        let mut source = MediaSource::new(video(), 200, Instant::ZERO).unwrap();
        source.capture(Instant::ZERO, 0.0, 0);
        assert_eq!(source.queued_bytes(), 625);
        // One packet leaves; at 300 ms the rest of frame 0 is stale.
        assert_eq!(source.pop(Instant::from_millis(10)).unwrap().length, 200);
        assert!(source.has_data(Instant::from_millis(299)));
        assert!(!source.has_data(Instant::from_millis(300)));
        assert_eq!(source.stats().bytes_expired, 425);
        // The next frame starts after the dropped bytes.
        source.capture(Instant::from_millis(300), 0.0, 0);
        let chunk = source.pop(Instant::from_millis(300)).unwrap();
        assert_eq!(chunk.offset, 625);
    }

    #[test]
    fn a_pause_skips_the_frames_in_it() {
        let mut config = video();
        config.fps = 10.0;
        config.pause = Some((Instant::from_millis(250), Instant::from_millis(520)));
        let mut source = MediaSource::new(config, 1168, Instant::ZERO).unwrap();
        source.capture(Instant::from_secs(1), 0.0, 0);
        // Frames at 0, 100, 200, then 600 … 1000 (300, 400, 500 fall in the pause).
        let captured: Vec<u64> = source
            .take_captured()
            .iter()
            .map(|frame| frame.captured.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(captured, [0, 100, 200, 600, 700, 800, 900, 1000]);
    }

    #[test]
    fn the_log_counts_whole_frames_on_time_or_late() {
        let ms = Instant::from_millis;
        let mut log = FrameLog::new(Duration::from_millis(300));
        let frame = |start, length, captured| Frame {
            start,
            length,
            captured: ms(captured),
        };
        // Frames of 100, 50, 100 and 100 bytes captured at 0, 33, 66 and 99 ms.
        log.captured([
            frame(0, 100, 0),
            frame(100, 50, 33),
            frame(150, 100, 66),
            frame(250, 100, 99),
        ]);
        let chunk = |offset, length| Chunk { offset, length };
        // Frame 0 whole at 250 ms (on time), frame 1 whole at 400 ms (late: 367 ms after).
        log.arrived(ms(100), chunk(0, 60));
        log.arrived(ms(250), chunk(60, 60));
        assert_eq!(
            log.stats(),
            FrameStats {
                on_time: 1,
                late: 0
            }
        );
        log.arrived(ms(400), chunk(120, 60)); // frame 1's end, frame 2's start
        assert_eq!(
            log.stats(),
            FrameStats {
                on_time: 1,
                late: 1
            }
        );
        // Frame 2 never completes (bytes 180..250 lost); frame 3 arrives whole on time.
        log.arrived(ms(390), chunk(250, 100));
        assert_eq!(
            log.stats(),
            FrameStats {
                on_time: 2,
                late: 1
            }
        );
        // Long after, frame 2 is forgotten.
        log.arrived(ms(20_000), chunk(350, 0));
        assert!(log.frames.is_empty());
    }

    #[test]
    fn bad_configurations_are_refused_by_name() {
        let mut config = video();
        config.min_rate = config.max_rate * 2.0;
        assert!(config
            .validate()
            .unwrap_err()
            .to_string()
            .contains("min_rate"));
        let mut config = video();
        config.start_rate = config.max_rate * 2.0;
        assert!(config
            .validate()
            .unwrap_err()
            .to_string()
            .contains("start_rate"));
        let mut config = video();
        config.fps = 0.0;
        assert!(config.validate().unwrap_err().to_string().contains("fps"));
        assert!(MediaSource::new(video(), 0, Instant::ZERO).is_err());
    }
}
