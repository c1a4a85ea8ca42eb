//! Instructions per operation of the protocol core, counted by callgrind: the same operations on
//! the same recorded endpoints as `core.rs` (`common/recording.rs`), but a count that does not
//! move with the machine's load. bench/core-instructions/run.sh runs this target under
//! `valgrind --tool=callgrind` and divides each `measured_*` function's inclusive count by the
//! number of calls it made.
//!
//! Run alone (`cargo bench -p tfrc-proto --bench core_instructions`) it performs the calls once
//! and prints how many each function made.

// The harness is our own `main`.
#![allow(missing_docs)]

use std::hint::black_box;

use tfrc_proto::{wire, Config, Instant, Receiver, Sender};

#[path = "common/recording.rs"]
mod recording;
use recording::{record, Before};

/// Calls per operation: every kept copy, this many times over (fresh copies each time).
const ROUNDS: usize = 4;

/// Fresh copies of every kept endpoint, `ROUNDS` times over, made before anything is counted.
fn copies<E: Clone>(kept: &[Before<E>]) -> Vec<(E, Instant, Vec<u8>)> {
    (0..ROUNDS)
        .flat_map(|_| kept.iter())
        .map(|before| (before.endpoint.clone(), before.at, before.input.clone()))
        .collect()
}

#[inline(never)]
fn measured_sender_data(calls: &mut [(Sender, Instant, Vec<u8>)], buffer: &mut [u8]) {
    for (sender, at, _) in calls {
        let _ = black_box(sender.send_padded(*at, buffer));
    }
}

#[inline(never)]
fn measured_sender_feedback(calls: &mut [(Sender, Instant, Vec<u8>)]) {
    for (sender, at, input) in calls {
        let _ = black_box(sender.handle_packet(*at, input));
    }
}

#[inline(never)]
fn measured_receiver_data(calls: &mut [(Receiver, Instant, Vec<u8>)]) {
    for (receiver, at, input) in calls {
        let _ = black_box(receiver.handle_packet(*at, input));
    }
}

#[inline(never)]
fn measured_receiver_feedback(calls: &mut [(Receiver, Instant, Vec<u8>)], buffer: &mut [u8]) {
    for (receiver, at, _) in calls {
        let _ = black_box(receiver.poll_transmit(*at, &mut buffer[..wire::MAX_FEEDBACK_LEN]));
    }
}

/// Records one profile's exchange, then makes every call of each operation on fresh copies.
fn run_profile(name: &str, config: &Config) {
    let recording = record(config);
    assert_eq!(
        recording.rejected_feedbacks, 0,
        "{name}: the sender refused feedback"
    );
    let mut buffer = vec![0u8; 2048];
    let mut sender_data = copies(&recording.sender_data);
    let mut sender_feedback = copies(&recording.sender_feedback);
    let mut receiver_data = copies(&recording.receiver_data);
    let mut receiver_feedback = copies(&recording.receiver_feedback);
    measured_sender_data(&mut sender_data, &mut buffer);
    measured_sender_feedback(&mut sender_feedback);
    measured_receiver_data(&mut receiver_data);
    measured_receiver_feedback(&mut receiver_feedback, &mut buffer);
    println!(
        "calls {name}/sender/data packet {}\ncalls {name}/sender/feedback {}\ncalls {name}/receiver/data packet {}\ncalls {name}/receiver/feedback {}",
        sender_data.len(),
        sender_feedback.len(),
        receiver_data.len(),
        receiver_feedback.len()
    );
}

/// `rfc` or `ns2` runs that profile alone (callgrind then counts one profile per run); no
/// profile named (as `cargo bench` runs it, with `--bench`) runs both.
fn main() {
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    for (name, config) in [("rfc", Config::default()), ("ns2", Config::ns2())] {
        if named.is_empty() || named.iter().any(|n| n == name) {
            run_profile(name, &config);
        }
    }
}
