//! The recorded exchange both core benchmarks measure on (`core.rs`, criterion times, and
//! `core_instructions.rs`, instruction counts under callgrind).
//!
//! A sender and a receiver first exchange 60 s of traffic over a path of 25 ms each way that
//! drops every 100th data packet (about 220 packets/s once the rate has settled, a loss event
//! rate near 1 %). Along the way the recording keeps copies of each endpoint taken just before
//! some of its operations (after a 10 s warm-up), so that a measured call on a fresh copy does
//! the work of a real steady-state operation.

use core::time::Duration;
use std::collections::VecDeque;

use tfrc_proto::{Config, Instant, Receiver, Sender};

/// One-way delay of the path.
const DELAY: Duration = Duration::from_millis(25);
/// Every this many data packets one is dropped.
const DROP_EVERY: u64 = 100;
/// Length of the recorded exchange.
pub const RUN: Duration = Duration::from_secs(60);
/// Operations before this time are not kept (slow start).
const WARM_UP: Duration = Duration::from_secs(10);
/// Most copies kept per kind of operation.
const KEPT: usize = 256;

/// An endpoint just before one operation, with the operation's time and input.
pub struct Before<E> {
    pub endpoint: E,
    pub at: Instant,
    pub input: Vec<u8>,
}

/// Copies of both endpoints before their operations of the recorded exchange.
#[derive(Default)]
pub struct Recording {
    pub sender_data: Vec<Before<Sender>>,
    pub sender_feedback: Vec<Before<Sender>>,
    pub receiver_data: Vec<Before<Receiver>>,
    pub receiver_feedback: Vec<Before<Receiver>>,
    /// Feedbacks the sender refused (none expected: the bench would measure a refusal).
    pub rejected_feedbacks: u64,
    /// Data packets sent.
    pub sent: u64,
    /// The sender's state at the end.
    pub final_state: Option<tfrc_proto::SenderState>,
}

/// Keeps a copy when `kept` is not full and the run is past the warm-up, every `stride`-th time.
fn keep<E: Clone>(
    kept: &mut Vec<Before<E>>,
    count: &mut u64,
    stride: u64,
    endpoint: &E,
    at: Instant,
    input: &[u8],
) {
    *count += 1;
    if at >= Instant::ZERO + WARM_UP && kept.len() < KEPT && count.is_multiple_of(stride) {
        kept.push(Before {
            endpoint: endpoint.clone(),
            at,
            input: input.to_vec(),
        });
    }
}

/// Runs the exchange and keeps the copies.
pub fn record(config: &Config) -> Recording {
    let mut sender = Sender::new(config.clone(), 7, 0x5eed, Instant::ZERO).expect("valid config");
    let mut receiver = Receiver::new(config.clone()).expect("valid config");
    let mut to_receiver: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_sender: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buffer = vec![0u8; 2048];
    let mut recording = Recording::default();
    let (mut sent, mut feedbacks, mut arrivals) = (0u64, 0u64, 0u64);
    let end = Instant::ZERO + RUN;
    loop {
        let next_send = sender.next_send_time();
        let next_timer = [sender.poll_timeout(), receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let now = [
            Some(next_send),
            next_timer,
            to_receiver.front().map(|(at, _)| *at),
            to_sender.front().map(|(at, _)| *at),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("the sender always has a next send time");
        if now >= end {
            recording.sent = sent;
            recording.final_state = Some(sender.state());
            return recording;
        }
        if to_sender.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_sender.pop_front().expect("front exists");
            keep(
                &mut recording.sender_feedback,
                &mut feedbacks,
                1,
                &sender,
                now,
                &bytes,
            );
            if sender.handle_packet(now, &bytes).is_err() {
                recording.rejected_feedbacks += 1;
            }
        } else if to_receiver.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_receiver.pop_front().expect("front exists");
            keep(
                &mut recording.receiver_data,
                &mut arrivals,
                16,
                &receiver,
                now,
                &bytes,
            );
            receiver
                .handle_packet(now, &bytes)
                .expect("a well-formed data packet");
        } else if now >= next_send {
            keep(&mut recording.sender_data, &mut sent, 16, &sender, now, &[]);
            let length = sender
                .send_padded(now, &mut buffer)
                .expect("buffer large enough");
            if !sent.is_multiple_of(DROP_EVERY) {
                to_receiver.push_back((now + DELAY, buffer[..length].to_vec()));
            }
        } else {
            sender.handle_timeout(now);
            receiver.handle_timeout(now);
        }
        // A copy only while copies are still wanted: most polls send nothing.
        let wanted = recording.receiver_feedback.len() < KEPT && now >= Instant::ZERO + WARM_UP;
        let before_poll = wanted.then(|| receiver.clone());
        if let Some(length) = receiver.poll_transmit(now, &mut buffer) {
            if let Some(endpoint) = before_poll {
                recording.receiver_feedback.push(Before {
                    endpoint,
                    at: now,
                    input: Vec::new(),
                });
            }
            to_sender.push_back((now + DELAY, buffer[..length].to_vec()));
        }
    }
}
