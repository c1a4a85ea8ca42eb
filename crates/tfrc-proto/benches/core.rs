//! Cost of the protocol core per operation (`cargo bench -p tfrc-proto`; numbers in
//! docs/performance.md): the sender per data packet and per feedback, the receiver per data
//! packet and per feedback, under the RFC 5348 and ns-2 profiles.
//!
//! The endpoints' copies come from one recorded exchange (`common/recording.rs`). Each measured
//! call runs on a fresh copy of one of them, so every call does the work of a real steady-state
//! operation; copying is not timed (`iter_batched`). `core_instructions.rs` counts the
//! instructions of the same calls under callgrind (bench/core-instructions/run.sh).

// criterion_group! and criterion_main! generate undocumented functions.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tfrc_proto::{wire, Config, Instant, Receiver, Sender};

#[path = "common/recording.rs"]
mod recording;
use recording::{record, Before, RUN};

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
