//! Cost of the protocol core per operation (`cargo bench -p tfrc-proto`; numbers in
//! docs/performance.md): the sender per data packet and per feedback, the receiver per data
//! packet and per feedback, under the RFC 5348 and ns-2 profiles.
//!
//! A sender and a receiver first exchange 60 s of traffic over a path of 25 ms each way that
//! drops every 100th data packet (about 220 packets/s once the rate has settled, a loss event
//! rate near 1 %). Along the way the bench keeps copies of each endpoint taken just before
//! some of its operations (after a 10 s warm-up). Each measured call then runs on a fresh copy
//! of one of them, so every call does the work of a real steady-state operation; copying is not
//! timed (`iter_batched`).

// criterion_group! and criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use core::time::Duration;
use std::collections::VecDeque;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tfrc_proto::{wire, Config, Instant, Receiver, Sender};

/// One-way delay of the path.
const DELAY: Duration = Duration::from_millis(25);
/// Every this many data packets one is dropped.
const DROP_EVERY: u64 = 100;
/// Length of the recorded exchange.
const RUN: Duration = Duration::from_secs(60);
/// Operations before this time are not kept (slow start).
const WARM_UP: Duration = Duration::from_secs(10);
/// Most copies kept per kind of operation.
const KEPT: usize = 256;

/// An endpoint just before one operation, with the operation's time and input.
struct Before<E> {
    endpoint: E,
    at: Instant,
    input: Vec<u8>,
}

/// Copies of both endpoints before their operations of the recorded exchange.
#[derive(Default)]
struct Recording {
    sender_data: Vec<Before<Sender>>,
    sender_feedback: Vec<Before<Sender>>,
    receiver_data: Vec<Before<Receiver>>,
    receiver_feedback: Vec<Before<Receiver>>,
    /// Feedbacks the sender refused (none expected: the bench would measure a refusal).
    rejected_feedbacks: u64,
    /// Data packets sent.
    sent: u64,
    /// The sender's state at the end.
    final_state: Option<tfrc_proto::SenderState>,
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
fn record(config: &Config) -> Recording {
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

/// Measures `operation` on a fresh copy of each kept endpoint in turn.
fn measure<E: Clone>(
    criterion: &mut Criterion,
    name: &str,
    kept: &[Before<E>],
    operation: impl Fn(&mut E, Instant, &[u8], &mut [u8]),
) {
    assert!(!kept.is_empty(), "{name}: the exchange kept no copies");
    let mut group = criterion.benchmark_group(name);
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function("per operation", |bencher| {
        bencher.iter_batched(
            || {
                let before = &kept[next % kept.len()];
                next += 1;
                (
                    before.endpoint.clone(),
                    before.at,
                    before.input.clone(),
                    vec![0u8; 2048],
                )
            },
            |(mut endpoint, at, input, mut buffer)| {
                operation(&mut endpoint, at, &input, &mut buffer);
                endpoint
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

/// Every measured operation, for both profiles.
fn core_operations(criterion: &mut Criterion) {
    for (profile, config) in [("rfc", Config::default()), ("ns2", Config::ns2())] {
        let recording = record(&config);
        let state = recording.final_state.expect("the run ended");
        eprintln!(
            "{profile}: {} data packets in {RUN:?}, {} feedbacks refused; at the end X = {:.0} B/s, p = {:.4}, R = {:?}",
            recording.sent, recording.rejected_feedbacks, state.sending_rate, state.p, state.rtt,
        );
        assert_eq!(
            recording.rejected_feedbacks, 0,
            "{profile}: the sender refused feedback"
        );
        measure(
            criterion,
            &format!("{profile}/sender/data packet"),
            &recording.sender_data,
            |sender: &mut Sender, at, _, buffer| {
                let _ = sender.send_padded(at, buffer);
            },
        );
        measure(
            criterion,
            &format!("{profile}/sender/feedback"),
            &recording.sender_feedback,
            |sender: &mut Sender, at, input, _| {
                let _ = sender.handle_packet(at, input);
            },
        );
        measure(
            criterion,
            &format!("{profile}/receiver/data packet"),
            &recording.receiver_data,
            |receiver: &mut Receiver, at, input, _| {
                let _ = receiver.handle_packet(at, input);
            },
        );
        measure(
            criterion,
            &format!("{profile}/receiver/feedback"),
            &recording.receiver_feedback,
            |receiver: &mut Receiver, at, _, buffer| {
                let _ = receiver.poll_transmit(at, &mut buffer[..wire::MAX_FEEDBACK_LEN]);
            },
        );
    }
}

criterion_group!(benches, core_operations);
criterion_main!(benches);
