//! The recorded exchange both core benchmarks measure on (`core.rs`, criterion times, and
//! `core_instructions.rs`, instruction counts under callgrind).
//!
//! A sender and a receiver first exchange 60 s of traffic over a path of 25 ms each way that
//! drops every 100th data packet (about 220 packets/s once the rate has settled, a loss event
//! rate near 1 %). Along the way the recording keeps copies of each endpoint taken just before
//! some of its operations (after a 10 s warm-up), so that a measured call on a fresh copy does
//! the work of a real steady-state operation.

use core::time::Duration;

use tfrc_proto::{Config, Instant, Receiver, Sender};

#[path = "exchange.rs"]
mod exchange;
use exchange::{exchange, Observer, Path, Step};

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
    /// Operations seen: sender data, sender feedback, receiver data, receiver feedback polls
    /// (past the warm-up, copies are kept every `stride`-th).
    counts: [u64; 4],
    /// The receiver before the current poll, kept if the poll sends a feedback.
    pending_poll: Option<Before<Receiver>>,
}

impl Observer for Recording {
    fn before(&mut self, step: Step<'_>, now: Instant, sender: &Sender, receiver: &Receiver) {
        let (count, stride) = match step {
            Step::SenderData => (&mut self.counts[0], 16),
            Step::SenderFeedback(_) => (&mut self.counts[1], 1),
            Step::ReceiverData(_) => (&mut self.counts[2], 16),
            Step::ReceiverFeedback => (&mut self.counts[3], 1),
            Step::Timers => return,
        };
        *count += 1;
        if now < Instant::ZERO + WARM_UP {
            return;
        }
        let due = count.is_multiple_of(stride);
        fn before<E>(endpoint: E, at: Instant, step: Step<'_>) -> Before<E> {
            let input = match step {
                Step::SenderFeedback(bytes) | Step::ReceiverData(bytes) => bytes.to_vec(),
                _ => Vec::new(),
            };
            Before {
                endpoint,
                at,
                input,
            }
        }
        match step {
            Step::SenderData if due && self.sender_data.len() < KEPT => {
                self.sender_data.push(before(sender.clone(), now, step));
            }
            Step::SenderFeedback(_) if due && self.sender_feedback.len() < KEPT => {
                self.sender_feedback.push(before(sender.clone(), now, step));
            }
            Step::ReceiverData(_) if due && self.receiver_data.len() < KEPT => {
                self.receiver_data.push(before(receiver.clone(), now, step));
            }
            // Most polls send nothing: the copy is kept only if this one sends a feedback.
            Step::ReceiverFeedback if self.receiver_feedback.len() < KEPT => {
                self.pending_poll = Some(before(receiver.clone(), now, step));
            }
            _ => {}
        }
    }

    fn after(&mut self, step: Step<'_>, _now: Instant, outcome: bool) {
        match step {
            Step::SenderFeedback(_) if !outcome => self.rejected_feedbacks += 1,
            Step::ReceiverFeedback => {
                if let Some(before) = self.pending_poll.take().filter(|_| outcome) {
                    self.receiver_feedback.push(before);
                }
            }
            _ => {}
        }
    }
}

/// Runs the exchange and keeps the copies.
pub fn record(config: &Config) -> Recording {
    let path = Path {
        delay: DELAY,
        dropped: |sent| sent.is_multiple_of(DROP_EVERY),
        end: Instant::ZERO + RUN,
    };
    let mut recording = Recording::default();
    let (sender, sent) = exchange(config, &path, &mut recording);
    recording.sent = sent;
    recording.final_state = Some(sender.state());
    recording
}
