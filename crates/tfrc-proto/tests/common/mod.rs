//! A pair harness: one sender and one receiver joined by a simple link (rate, delay, DropTail
//! queue, Bernoulli loss on the data direction), driven event by event.

#![allow(dead_code)]

use core::time::Duration;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tfrc_proto::wire::{self, DataRepr, FeedbackRepr};
use tfrc_proto::{Config, FeedbackError, Instant, Receiver, Sender};

/// The link between sender and receiver.
#[derive(Debug, Clone)]
pub struct LinkSpec {
    /// Data-direction capacity, bits/s.
    pub rate_bps: f64,
    /// One-way propagation delay (both directions).
    pub one_way_delay: Duration,
    /// DropTail limit in packets (data direction).
    pub queue_limit: usize,
    /// Bernoulli loss probability per data packet.
    pub loss: f64,
    /// RNG seed of the loss model.
    pub seed: u64,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    SenderTimer,
    ReceiverTimer,
    DataArrival(usize),
    FeedbackArrival(usize),
}

/// What one run measured.
#[derive(Debug, Default, Clone)]
pub struct Trace {
    /// (time, sending rate bytes/s, p at sender, rtt seconds) at each feedback.
    pub sender_samples: Vec<(Instant, f64, f64, f64)>,
    /// Send times of every data packet.
    pub send_times: Vec<Instant>,
    /// Send times of the packets the link dropped (queue or loss model).
    pub dropped_send_times: Vec<Instant>,
    /// Arrival times and lengths at the receiver.
    pub arrivals: Vec<(Instant, usize)>,
    /// Times at which the receiver emitted feedback.
    pub feedback_times: Vec<Instant>,
    /// (time, X_recv the feedback carried, X after it, p) at each feedback the sender took, bytes/s.
    pub feedback_samples: Vec<(Instant, f64, f64, f64)>,
    /// Largest queue occupancy seen, packets.
    pub max_queue: usize,
    /// Queue occupancy sampled at every data packet arrival to the queue.
    pub queue_samples: Vec<usize>,
}

/// Rewrites a feedback datagram in place ([`Pair::tamper`]).
pub type Tamper = Box<dyn FnMut(&mut [u8])>;

/// Sender + receiver + link.
pub struct Pair {
    pub sender: Sender,
    pub receiver: Receiver,
    pub link: LinkSpec,
    pub now: Instant,
    pub trace: Trace,
    events: BinaryHeap<Reverse<(Instant, u64, Event)>>,
    sequence: u64,
    packets: Vec<Vec<u8>>,
    departures: VecDeque<Instant>,
    link_free_at: Instant,
    rng: ChaCha8Rng,
    pending_sender_timer: Option<Instant>,
    pending_receiver_timer: Option<Instant>,
    /// Rewrites each feedback on its way to the sender (a lying receiver or a path that
    /// alters it); `None` delivers it as sent.
    pub tamper: Option<Tamper>,
    /// Each data packet is held this much longer with this probability (reordering).
    pub reorder: Option<(f64, Duration)>,
    /// Whether a feedback the sender refuses fails the run (default) or is recorded in
    /// `refused`.
    pub strict: bool,
    /// Feedback the sender refused, when not `strict`.
    pub refused: Vec<FeedbackError>,
    /// The last feedback delivered to the sender, as delivered.
    pub last_feedback: Vec<u8>,
    /// Whether data packets still reach the receiver (false: a receiver gone away).
    pub receiver_alive: bool,
    /// Whether each feedback is also given to a copy of the sender without its interval memo
    /// ([`Sender::forget_interval_memo`]), failing the run if the copy's outcome, state or
    /// counters differ.
    pub shadow_without_memo: bool,
    /// Feedbacks checked that way.
    pub shadowed: u64,
}

impl Pair {
    pub fn new(config: Config, link: LinkSpec) -> Pair {
        let now = Instant::ZERO;
        Pair {
            sender: Sender::new(config.clone(), 0x5e55_1011, 0x00c0_ffee, now).unwrap(),
            receiver: Receiver::new(config).unwrap(),
            rng: ChaCha8Rng::seed_from_u64(link.seed),
            link,
            now,
            trace: Trace::default(),
            events: BinaryHeap::new(),
            sequence: 0,
            packets: Vec::new(),
            departures: VecDeque::new(),
            link_free_at: now,
            pending_sender_timer: None,
            pending_receiver_timer: None,
            tamper: None,
            reorder: None,
            strict: true,
            refused: Vec::new(),
            last_feedback: Vec::new(),
            receiver_alive: true,
            shadow_without_memo: false,
            shadowed: 0,
        }
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.sequence += 1;
        self.events.push(Reverse((at, self.sequence, event)));
    }

    fn arm_timers(&mut self) {
        if let Some(at) = self.sender.poll_timeout() {
            if self.pending_sender_timer != Some(at) {
                self.pending_sender_timer = Some(at);
                self.schedule(at.max(self.now), Event::SenderTimer);
            }
        }
        if let Some(at) = self.receiver.poll_timeout() {
            if self.pending_receiver_timer != Some(at) {
                self.pending_receiver_timer = Some(at);
                self.schedule(at.max(self.now), Event::ReceiverTimer);
            }
        }
    }

    fn send_allowed(&mut self) {
        let mut buffer = vec![0u8; 65_536];
        while self.sender.can_send(self.now) {
            let length = self.sender.send_padded(self.now, &mut buffer).unwrap();
            self.trace.send_times.push(self.now);
            self.enqueue(buffer[..length].to_vec());
        }
    }

    fn enqueue(&mut self, packet: Vec<u8>) {
        while self.departures.front().is_some_and(|&d| d <= self.now) {
            self.departures.pop_front();
        }
        let occupancy = self.departures.len();
        self.trace.queue_samples.push(occupancy);
        let lost = self.link.loss > 0.0 && self.rng.gen::<f64>() < self.link.loss;
        if occupancy >= self.link.queue_limit || lost {
            self.trace.dropped_send_times.push(self.now);
            return;
        }
        let serialization =
            Duration::from_nanos((packet.len() as f64 * 8.0 / self.link.rate_bps * 1e9) as u64);
        let departure = self.now.max(self.link_free_at) + serialization;
        self.link_free_at = departure;
        self.departures.push_back(departure);
        self.trace.max_queue = self.trace.max_queue.max(self.departures.len());
        let index = self.packets.len();
        self.packets.push(packet);
        let held = match self.reorder {
            Some((probability, extra)) if self.rng.gen::<f64>() < probability => extra,
            _ => Duration::ZERO,
        };
        self.schedule(
            departure + self.link.one_way_delay + held,
            Event::DataArrival(index),
        );
    }

    fn flush_feedback(&mut self) {
        let mut buffer = [0u8; wire::MAX_FEEDBACK_LEN];
        while let Some(length) = self.receiver.poll_transmit(self.now, &mut buffer) {
            self.trace.feedback_times.push(self.now);
            let index = self.packets.len();
            self.packets.push(buffer[..length].to_vec());
            let at = self.now + self.link.one_way_delay;
            self.schedule(at, Event::FeedbackArrival(index));
        }
    }

    /// Runs until `end`; panics if more than `max_events` events are needed (a stall or a storm).
    pub fn run_until(&mut self, end: Instant, max_events: u64) {
        let mut handled = 0u64;
        self.send_allowed();
        self.arm_timers();
        while let Some(Reverse((at, _, _))) = self.events.peek() {
            if *at > end {
                break;
            }
            let Reverse((at, _, event)) = self.events.pop().unwrap();
            self.now = at;
            handled += 1;
            assert!(
                handled <= max_events,
                "more than {max_events} events: stall or storm"
            );
            match event {
                Event::SenderTimer => {
                    if self.pending_sender_timer == Some(at)
                        || self.sender.poll_timeout().is_some_and(|t| t <= at)
                    {
                        self.pending_sender_timer = None;
                        self.sender.handle_timeout(at);
                    }
                }
                Event::ReceiverTimer => {
                    if self.pending_receiver_timer == Some(at) {
                        self.pending_receiver_timer = None;
                    }
                    self.receiver.handle_timeout(at);
                }
                Event::DataArrival(index) => {
                    let packet = std::mem::take(&mut self.packets[index]);
                    if self.receiver_alive {
                        self.trace.arrivals.push((at, packet.len()));
                        self.receiver.handle_packet(at, &packet).unwrap();
                    }
                }
                Event::FeedbackArrival(index) => {
                    let mut packet = std::mem::take(&mut self.packets[index]);
                    if let Some(tamper) = &mut self.tamper {
                        tamper(&mut packet);
                    }
                    let shadow = self.shadow_without_memo.then(|| {
                        let mut copy = self.sender.clone();
                        copy.forget_interval_memo();
                        let outcome = copy.handle_packet(at, &packet);
                        (copy, outcome)
                    });
                    let outcome = self.sender.handle_packet(at, &packet);
                    if let Some((copy, copy_outcome)) = shadow {
                        assert_eq!(outcome, copy_outcome, "outcome at {at:?}");
                        assert_eq!(self.sender.state(), copy.state(), "state at {at:?}");
                        assert_eq!(self.sender.stats(), copy.stats(), "counters at {at:?}");
                        self.shadowed += 1;
                    }
                    match outcome {
                        Ok(()) => {}
                        Err(error) if !self.strict => self.refused.push(error),
                        Err(error) => panic!("feedback refused at {at:?}: {error}"),
                    }
                    self.last_feedback = packet;
                    let state = self.sender.state();
                    self.trace
                        .feedback_samples
                        .push((at, state.x_recv, state.x, state.p));
                    self.trace.sender_samples.push((
                        at,
                        state.sending_rate,
                        state.p,
                        state.rtt.map_or(0.0, |r| r.as_secs_f64()),
                    ));
                }
            }
            self.flush_feedback();
            self.send_allowed();
            self.arm_timers();
        }
        self.now = end;
    }

    /// Bytes sent per second in [from, to).
    pub fn send_rate(&self, from: Instant, to: Instant) -> f64 {
        let size = f64::from(self.sender.config().packet_size);
        let count = self
            .trace
            .send_times
            .iter()
            .filter(|&&t| t >= from && t < to)
            .count();
        count as f64 * size / (to - from).as_secs_f64()
    }

    /// Bytes received per second in [from, to).
    pub fn receive_rate(&self, from: Instant, to: Instant) -> f64 {
        let bytes: usize = self
            .trace
            .arrivals
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, length)| length)
            .sum();
        bytes as f64 / (to - from).as_secs_f64()
    }
}

/// Loss event rate computed independently from the link's drops: a drop starts a new loss event
/// when it was sent more than `rtt` after the first drop of the current event; p = events /
/// packets sent, over packets sent in [from, to).
pub fn loss_event_rate_from_drops(trace: &Trace, rtt: Duration, from: Instant, to: Instant) -> f64 {
    let mut events = 0u64;
    let mut event_start: Option<Instant> = None;
    for &t in trace
        .dropped_send_times
        .iter()
        .filter(|&&t| t >= from && t < to)
    {
        if event_start.is_none_or(|start| t > start + rtt) {
            events += 1;
            event_start = Some(t);
        }
    }
    let sent = trace
        .send_times
        .iter()
        .filter(|&&t| t >= from && t < to)
        .count();
    events as f64 / sent.max(1) as f64
}

/// The loss intervals of a receiver that got every packet from 0 to `end` of the sender with
/// key `key`: one open interval, all of it a proven data part. The mark sums are kept per key
/// (a test sends thousands of packets, each answered).
pub fn all_received_intervals(key: u64, end: u32) -> wire::LossIntervals {
    thread_local! {
        static SUMS: std::cell::RefCell<std::collections::HashMap<u64, Vec<u16>>> =
            Default::default();
    }
    let sum = SUMS.with(|sums| {
        let mut sums = sums.borrow_mut();
        let running = sums.entry(key).or_default();
        while running.len() <= end as usize {
            let sequence = running.len() as u32;
            let before = running.last().copied().unwrap_or(0);
            running.push(before.wrapping_add(wire::packet_mark(key, sequence)));
        }
        running[end as usize]
    });
    let mut intervals = wire::LossIntervals::default();
    intervals.entries[0] = wire::LossInterval {
        lossy: 0,
        data: end + 1,
        sum,
        flags: 0,
    };
    intervals
}

/// The feedback an honest receiver that got every packet up to `data` sends, with its receipt
/// proof for the sender's `nonce`: X_recv `x_recv` bytes/s, loss event rate `p`, no delay.
/// Its loss intervals show no loss ([`all_received_intervals`]): a p > 0 reports more loss
/// than proven, which a sender takes.
pub fn honest_feedback(data: &DataRepr, nonce: u64, x_recv: f64, p: f64) -> Vec<u8> {
    let proof = wire::ReceiptProof::of_all(nonce, data.sequence);
    let repr = FeedbackRepr {
        session_id: data.session_id,
        echo_sequence: data.sequence,
        echo_timestamp: data.timestamp,
        elapsed_micros: 0,
        x_recv: x_recv as u64,
        loss_event_rate_raw: wire::encode_loss_event_rate(p),
        echo_nonce: proof.echo_nonce(wire::session_token(nonce)),
        proof_flags: proof.flags(),
        intervals: all_received_intervals(nonce, data.sequence),
    };
    let mut buffer = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buffer).unwrap();
    buffer
}
