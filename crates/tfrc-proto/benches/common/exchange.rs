//! One sender and one receiver exchanging traffic over a fixed-delay path that drops chosen data
//! packets: the exchange the core benchmarks record (`recording.rs`) and the allocation test
//! (`tests/allocation.rs`) counts, driven in one place. An [`Observer`] sees each endpoint just
//! before each of its calls and runs the calls.

use core::time::Duration;
use std::collections::VecDeque;

use tfrc_proto::{Config, Instant, Receiver, Sender};

/// One endpoint call of the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// The sender builds a data packet (`send_padded`).
    SenderData,
    /// The sender takes a feedback packet (`handle_packet`).
    SenderFeedback(&'a [u8]),
    /// The receiver takes a data packet (`handle_packet`).
    ReceiverData(&'a [u8]),
    /// Both endpoints' timers (`handle_timeout`).
    Timers,
    /// The receiver is asked for a feedback packet (`poll_transmit`), which it may not have.
    ReceiverFeedback,
}

/// What sees the exchange: each step before it is taken, and the step's calls themselves.
pub trait Observer {
    /// The endpoints just before `step` at `now`.
    fn before(&mut self, _step: Step<'_>, _now: Instant, _sender: &Sender, _receiver: &Receiver) {}

    /// Runs `call` (one step's endpoint calls) at `now`.
    fn around<T>(&mut self, _now: Instant, call: impl FnOnce() -> T) -> T {
        call()
    }

    /// What `step` gave: whether the sender took the feedback, whether the receiver had one.
    fn after(&mut self, _step: Step<'_>, _now: Instant, _outcome: bool) {}
}

/// The path and the length of the exchange.
#[derive(Debug, Clone, Copy)]
pub struct Path {
    /// One-way delay, both directions.
    pub delay: Duration,
    /// Whether the n-th data packet sent (from 1) is dropped.
    pub dropped: fn(u64) -> bool,
    /// When the exchange ends.
    pub end: Instant,
}

/// Runs the exchange; returns the sender at the end and the data packets it sent.
pub fn exchange(config: &Config, path: &Path, observer: &mut impl Observer) -> (Sender, u64) {
    let mut sender = Sender::new(config.clone(), 7, 0x5eed, Instant::ZERO).expect("valid config");
    let mut receiver = Receiver::new(config.clone()).expect("valid config");
    let mut to_receiver: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_sender: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buffer = vec![0u8; 2048];
    let mut sent = 0u64;
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
        if now >= path.end {
            return (sender, sent);
        }
        if to_sender.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_sender.pop_front().expect("front exists");
            let step = Step::SenderFeedback(&bytes);
            observer.before(step, now, &sender, &receiver);
            let taken = observer.around(now, || sender.handle_packet(now, &bytes).is_ok());
            observer.after(step, now, taken);
        } else if to_receiver.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_receiver.pop_front().expect("front exists");
            let step = Step::ReceiverData(&bytes);
            observer.before(step, now, &sender, &receiver);
            observer
                .around(now, || receiver.handle_packet(now, &bytes))
                .expect("a well-formed data packet");
            observer.after(step, now, true);
        } else if now >= next_send {
            observer.before(Step::SenderData, now, &sender, &receiver);
            let length = observer
                .around(now, || sender.send_padded(now, &mut buffer))
                .expect("buffer large enough");
            observer.after(Step::SenderData, now, true);
            sent += 1;
            if !(path.dropped)(sent) {
                to_receiver.push_back((now + path.delay, buffer[..length].to_vec()));
            }
        } else {
            observer.before(Step::Timers, now, &sender, &receiver);
            observer.around(now, || {
                sender.handle_timeout(now);
                receiver.handle_timeout(now);
            });
            observer.after(Step::Timers, now, true);
        }
        observer.before(Step::ReceiverFeedback, now, &sender, &receiver);
        let feedback = observer.around(now, || receiver.poll_transmit(now, &mut buffer));
        observer.after(Step::ReceiverFeedback, now, feedback.is_some());
        if let Some(length) = feedback {
            to_sender.push_back((now + path.delay, buffer[..length].to_vec()));
        }
    }
}
