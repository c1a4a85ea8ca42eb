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
//! Each packet's payload starts with a [`FrameHeader`] (16 bytes) saying which frame it
//! belongs to, so the receiver can tell when a frame is complete.

use core::time::Duration;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::time::Instant;

/// Bytes of the frame header at the start of every media packet's payload.
pub const FRAME_HEADER_LEN: usize = 16;

/// What a media packet says about its frame: the frame's number, how many packets carry it,
/// which one this is, and when the frame was captured (sender clock, nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Frame number, from 0.
    pub frame: u32,
    /// This packet's index within the frame, from 0.
    pub index: u16,
    /// Packets of the frame.
    pub count: u16,
    /// When the frame was captured (encoded).
    pub captured: Instant,
}

impl FrameHeader {
    /// Writes the header into the first [`FRAME_HEADER_LEN`] bytes of `buffer`; false if it is
    /// shorter.
    pub fn emit(&self, buffer: &mut [u8]) -> bool {
        let Some(out) = buffer.get_mut(..FRAME_HEADER_LEN) else {
            return false;
        };
        out[0..4].copy_from_slice(&self.frame.to_be_bytes());
        out[4..6].copy_from_slice(&self.index.to_be_bytes());
        out[6..8].copy_from_slice(&self.count.to_be_bytes());
        out[8..16].copy_from_slice(&self.captured.as_nanos().to_be_bytes());
        true
    }

    /// Reads a header from the start of a payload; `None` if it is too short or
    /// inconsistent (no packets, or an index beyond the count).
    pub fn parse(payload: &[u8]) -> Option<FrameHeader> {
        let bytes = payload.get(..FRAME_HEADER_LEN)?;
        let header = FrameHeader {
            frame: u32::from_be_bytes(bytes[0..4].try_into().ok()?),
            index: u16::from_be_bytes(bytes[4..6].try_into().ok()?),
            count: u16::from_be_bytes(bytes[6..8].try_into().ok()?),
            captured: Instant::from_nanos(u64::from_be_bytes(bytes[8..16].try_into().ok()?)),
        };
        (header.count > 0 && header.index < header.count).then_some(header)
    }
}

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
    /// Checks the values; the message names the bad one.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.fps.is_finite() && self.fps > 0.0 && self.fps <= 1e6) {
            return Err(format!(
                "fps must be a frame rate above 0, got {}",
                self.fps
            ));
        }
        for (name, rate) in [
            ("min_rate", self.min_rate),
            ("max_rate", self.max_rate),
            ("start_rate", self.start_rate),
        ] {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(format!(
                    "{name} must be a positive rate, got {rate} bytes/s"
                ));
            }
        }
        if self.min_rate > self.max_rate {
            return Err(format!(
                "min_rate ({} bit/s) is above max_rate ({} bit/s)",
                self.min_rate * 8.0,
                self.max_rate * 8.0
            ));
        }
        if !(self.min_rate..=self.max_rate).contains(&self.start_rate) {
            return Err(format!(
                "start_rate ({} bit/s) is outside [min_rate, max_rate]",
                self.start_rate * 8.0
            ));
        }
        if self.deadline.is_zero() {
            return Err("the deadline must be positive".into());
        }
        if let Some((from, until)) = self.pause {
            if until <= from {
                return Err("the pause must end after it starts".into());
            }
        }
        Ok(())
    }
}

/// Counters of a media source.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MediaSourceStats {
    /// Frames captured.
    pub frames: u64,
    /// Bytes encoded (payload, frame headers included).
    pub bytes_encoded: u64,
    /// Packets dropped at the sender because their frame's deadline passed before they left.
    pub packets_expired: u64,
}

/// One packet waiting at the sender.
#[derive(Debug, Clone, Copy)]
struct QueuedPacket {
    header: FrameHeader,
    payload: usize,
}

/// The sending side: captures frames on schedule, cuts them into packets of at most
/// `max_payload` bytes and hands them out in order as the congestion control allows.
#[derive(Debug, Clone)]
pub struct MediaSource {
    config: MediaConfig,
    max_payload: usize,
    /// When frame 0 is captured.
    origin: Instant,
    /// The index of the next frame on the schedule (frames skipped by a pause included).
    next_index: u64,
    next_frame: Instant,
    next_number: u32,
    queue: VecDeque<QueuedPacket>,
    stats: MediaSourceStats,
    /// The rate the last frame was encoded at, bytes/s.
    encoding_rate: f64,
}

impl MediaSource {
    /// A source whose first frame is captured at `start`, with packets of at most
    /// `max_payload` payload bytes (at least [`FRAME_HEADER_LEN`] + 1).
    pub fn new(config: MediaConfig, max_payload: usize, start: Instant) -> Result<Self, String> {
        config.validate()?;
        if max_payload <= FRAME_HEADER_LEN {
            return Err(format!(
                "media packets need more than {FRAME_HEADER_LEN} bytes of payload (the frame \
                 header), got {max_payload}"
            ));
        }
        Ok(MediaSource {
            config,
            max_payload,
            origin: start,
            next_index: 0,
            next_frame: start,
            next_number: 0,
            queue: VecDeque::new(),
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
    /// `allowed_rate` (bytes/s, what the congestion control allows now) kept within
    /// [min_rate, max_rate]: RFC 8867 §4.3's adaptive codec, which follows the rate it is asked
    /// for. Frames due during the pause are skipped.
    pub fn capture(&mut self, now: Instant, allowed_rate: f64) {
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
                allowed_rate.clamp(self.config.min_rate, self.config.max_rate)
            } else {
                self.config.max_rate
            };
            self.encoding_rate = rate;
            let bytes = (rate / self.config.fps).round() as usize;
            self.push_frame(at, bytes.max(FRAME_HEADER_LEN + 1));
        }
    }

    /// When frame `index` of the schedule is captured.
    fn frame_time(&self, index: u64) -> Instant {
        let offset = (index as f64 * 1e9 / self.config.fps).round();
        Instant::from_nanos(self.origin.as_nanos().saturating_add(offset as u64))
    }

    fn push_frame(&mut self, captured: Instant, bytes: usize) {
        let count = bytes.div_ceil(self.max_payload).min(usize::from(u16::MAX));
        let bytes = bytes.min(count * self.max_payload);
        let number = self.next_number;
        self.next_number = self.next_number.wrapping_add(1);
        self.stats.frames += 1;
        self.stats.bytes_encoded += bytes as u64;
        // Full packets, the remainder in the last one (at least a header and one byte).
        for index in 0..count {
            let rest = bytes - index * self.max_payload;
            let payload = rest.min(self.max_payload).max(FRAME_HEADER_LEN + 1);
            self.queue.push_back(QueuedPacket {
                header: FrameHeader {
                    frame: number,
                    index: index as u16,
                    count: count as u16,
                    captured,
                },
                payload,
            });
        }
    }

    /// Drops the waiting packets whose frame's deadline has passed.
    fn expire(&mut self, now: Instant) {
        let deadline = self.config.deadline;
        while self
            .queue
            .front()
            .is_some_and(|packet| packet.header.captured + deadline <= now)
        {
            self.queue.pop_front();
            self.stats.packets_expired += 1;
        }
    }

    /// True when a packet is waiting at `now` (after dropping expired ones).
    pub fn has_data(&mut self, now: Instant) -> bool {
        self.expire(now);
        !self.queue.is_empty()
    }

    /// Packets waiting (expired ones included until the next [`MediaSource::has_data`]).
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }

    /// The next packet to send at `now`: its frame header and its payload length in bytes
    /// (header included); `None` when nothing is waiting.
    pub fn pop(&mut self, now: Instant) -> Option<(FrameHeader, usize)> {
        self.expire(now);
        self.queue
            .pop_front()
            .map(|packet| (packet.header, packet.payload))
    }
}

/// Counters of the receiving side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameStats {
    /// Frames whose every packet arrived within the deadline of their capture.
    pub on_time: u64,
    /// Frames that arrived whole, but after their deadline.
    pub late: u64,
}

/// Most partial frames remembered; older ones are forgotten first (they can only be late).
const MAX_PARTIAL_FRAMES: usize = 4096;

/// The receiving side: counts each frame once, when its last packet arrives, as on time or
/// late.
#[derive(Debug, Clone)]
pub struct FrameReceiver {
    deadline: Duration,
    /// Frames with some packets in: frame number → (the packet indices seen, the frame's
    /// packet count, its capture time).
    partial: BTreeMap<u32, (BTreeSet<u16>, u16, Instant)>,
    /// Frames already counted (the latest ones), whose late duplicates are ignored.
    completed: BTreeSet<u32>,
    stats: FrameStats,
}

impl FrameReceiver {
    /// A receiver judging frames against `deadline`.
    pub fn new(deadline: Duration) -> FrameReceiver {
        FrameReceiver {
            deadline,
            partial: BTreeMap::new(),
            completed: BTreeSet::new(),
            stats: FrameStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> FrameStats {
        self.stats
    }

    /// A media packet's payload arrived at `now`. Malformed payloads and duplicates are
    /// ignored.
    pub fn on_packet(&mut self, now: Instant, payload: &[u8]) {
        let Some(header) = FrameHeader::parse(payload) else {
            return;
        };
        if self.completed.contains(&header.frame) {
            return;
        }
        let entry = self
            .partial
            .entry(header.frame)
            .or_insert_with(|| (BTreeSet::new(), header.count, header.captured));
        if entry.1 != header.count {
            return;
        }
        entry.0.insert(header.index);
        if entry.0.len() == usize::from(entry.1) {
            let captured = entry.2;
            self.partial.remove(&header.frame);
            self.completed.insert(header.frame);
            if now.saturating_duration_since(captured) <= self.deadline {
                self.stats.on_time += 1;
            } else {
                self.stats.late += 1;
            }
        }
        // Bounded memory: forget the oldest partial frames and completions.
        while self.partial.len() > MAX_PARTIAL_FRAMES {
            self.partial.pop_first();
        }
        while self.completed.len() > MAX_PARTIAL_FRAMES {
            self.completed.pop_first();
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

    #[test]
    fn frames_follow_the_allowed_rate_within_the_codec_range() {
        let mut source = MediaSource::new(video(), 1168, Instant::ZERO).unwrap();
        // The first frame at the start rate: 150 kb/s / 30 = 625 bytes, one packet.
        source.capture(Instant::ZERO, 1e9);
        assert_eq!(source.stats().frames, 1);
        assert_eq!(source.pop(Instant::ZERO).unwrap().1, 625);
        // Then the allowed rate, capped at 1.5 Mb/s: 6250 bytes = 5 full packets + 410.
        source.capture(Instant::from_millis(34), 1e9);
        let sizes: Vec<usize> = std::iter::from_fn(|| source.pop(Instant::from_millis(34)))
            .map(|(_, size)| size)
            .collect();
        assert_eq!(sizes, [1168, 1168, 1168, 1168, 1168, 410]);
        // Below the floor: still 150 kb/s.
        source.capture(Instant::from_millis(67), 1000.0);
        assert_eq!(source.encoding_rate(), 150_000.0 / 8.0);
        let (header, size) = source.pop(Instant::from_millis(67)).unwrap();
        assert_eq!((header.frame, header.count, size), (2, 1, 625));
    }

    #[test]
    fn packets_past_their_deadline_are_not_sent() {
        let mut source = MediaSource::new(video(), 200, Instant::ZERO).unwrap();
        source.capture(Instant::ZERO, 0.0);
        assert_eq!(source.queued_packets(), 4); // 625 bytes in 200-byte packets
        assert!(source.has_data(Instant::from_millis(299)));
        // Nothing captured since; at 300 ms the first frame's packets are stale.
        assert!(!source.has_data(Instant::from_millis(300)));
        assert_eq!(source.stats().packets_expired, 4);
    }

    #[test]
    fn a_pause_skips_the_frames_in_it() {
        let mut config = video();
        config.fps = 10.0;
        config.pause = Some((Instant::from_millis(250), Instant::from_millis(520)));
        let mut source = MediaSource::new(config, 1168, Instant::ZERO).unwrap();
        source.capture(Instant::from_secs(1), 0.0);
        // Frames at 0, 100, 200, then 600 … 1000 (300, 400, 500 fall in the pause).
        assert_eq!(source.stats().frames, 8);
        // (each frame is 1875 bytes at the 150 kb/s floor: two packets)
        let captured: Vec<u64> = std::iter::from_fn(|| source.pop(Instant::ZERO))
            .filter(|(header, _)| header.index == 0)
            .map(|(header, _)| header.captured.as_nanos() / 1_000_000)
            .collect();
        assert_eq!(captured, [0, 100, 200, 600, 700, 800, 900, 1000]);
    }

    #[test]
    fn the_receiver_counts_whole_frames_on_time_or_late() {
        let mut receiver = FrameReceiver::new(Duration::from_millis(300));
        let mut payload = [0u8; 40];
        let packet = |frame, index, count, captured_ms| FrameHeader {
            frame,
            index,
            count,
            captured: Instant::from_millis(captured_ms),
        };
        // Frame 0: two packets, the second at 250 ms — on time (and a duplicate ignored).
        for (index, at) in [(0, 100), (0, 120), (1, 250)] {
            packet(0, index, 2, 0).emit(&mut payload);
            receiver.on_packet(Instant::from_millis(at), &payload);
        }
        // Frame 1: whole at 400 ms after a 33 ms capture — late.
        packet(1, 0, 1, 33).emit(&mut payload);
        receiver.on_packet(Instant::from_millis(400), &payload);
        // Frame 2: one of two packets — never counted.
        packet(2, 0, 2, 66).emit(&mut payload);
        receiver.on_packet(Instant::from_millis(100), &payload);
        // A short payload and an index beyond the count are ignored.
        receiver.on_packet(Instant::from_millis(100), &payload[..10]);
        packet(3, 2, 2, 99).emit(&mut payload);
        receiver.on_packet(Instant::from_millis(100), &payload);
        assert_eq!(
            receiver.stats(),
            FrameStats {
                on_time: 1,
                late: 1
            }
        );
    }

    #[test]
    fn bad_configurations_are_refused_by_name() {
        let mut config = video();
        config.min_rate = config.max_rate * 2.0;
        assert!(config.validate().unwrap_err().contains("min_rate"));
        let mut config = video();
        config.start_rate = config.max_rate * 2.0;
        assert!(config.validate().unwrap_err().contains("start_rate"));
        assert!(MediaSource::new(video(), 16, Instant::ZERO).is_err());
        let mut config = video();
        config.fps = 0.0;
        assert!(config.validate().unwrap_err().contains("fps"));
    }
}
