//! The protocol core allocates nothing per packet once a session has settled: every buffer it
//! keeps (the sent ledger, the arrival window, the loss history, the receiver's ledgers) is a
//! ring that reaches its steady length and stays there.
//!
//! dhat's allocator counts the allocations made inside the endpoints' calls (send, receive,
//! feedback, timers) of a 120 s exchange over a 25 ms path that drops every 100th data packet
//! and, every 1000th, three in a row; the first 20 s (slow start, the rings growing to their
//! steady length) are not counted.

use std::collections::VecDeque;

use core::time::Duration;
use tfrc_proto::{Config, Instant, Receiver, Sender};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Runs `call`, adding the heap blocks it allocated to `allocations` when `count`.
fn counted<T>(count: bool, allocations: &mut u64, call: impl FnOnce() -> T) -> T {
    let before = dhat::HeapStats::get().total_blocks;
    let result = call();
    if count {
        *allocations += dhat::HeapStats::get().total_blocks - before;
    }
    result
}

/// Operations and allocations inside the endpoints after the warm-up.
fn steady_state_allocations(config: Config) -> (u64, u64) {
    const DELAY: Duration = Duration::from_millis(25);
    let warm_up = Instant::from_secs(20);
    let end = Instant::from_secs(120);
    let mut sender = Sender::new(config.clone(), 7, 0x5eed, Instant::ZERO).expect("valid config");
    let mut receiver = Receiver::new(config).expect("valid config");
    let mut to_receiver: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut to_sender: VecDeque<(Instant, Vec<u8>)> = VecDeque::new();
    let mut buffer = vec![0u8; 2048];
    let (mut sent, mut operations) = (0u64, 0u64);
    let mut allocations = 0u64;
    loop {
        let next_timer = [sender.poll_timeout(), receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let now = [
            Some(sender.next_send_time()),
            next_timer,
            to_receiver.front().map(|(at, _)| *at),
            to_sender.front().map(|(at, _)| *at),
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("the sender always has a next send time");
        if now >= end {
            return (operations, allocations);
        }
        let count = now >= warm_up;
        operations += u64::from(count);
        if to_sender.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_sender.pop_front().expect("front exists");
            let _ = counted(count, &mut allocations, || {
                sender.handle_packet(now, &bytes)
            });
        } else if to_receiver.front().is_some_and(|(at, _)| *at == now) {
            let (_, bytes) = to_receiver.pop_front().expect("front exists");
            counted(count, &mut allocations, || {
                receiver.handle_packet(now, &bytes)
            })
            .expect("a data packet");
        } else if now >= sender.next_send_time() {
            let length = counted(count, &mut allocations, || {
                sender.send_padded(now, &mut buffer)
            })
            .expect("buffer large enough");
            sent += 1;
            let dropped = sent % 100 == 0 || (sent % 1000) < 3;
            if !dropped {
                to_receiver.push_back((now + DELAY, buffer[..length].to_vec()));
            }
        } else {
            counted(count, &mut allocations, || {
                sender.handle_timeout(now);
                receiver.handle_timeout(now);
            });
        }
        if let Some(length) = counted(count, &mut allocations, || {
            receiver.poll_transmit(now, &mut buffer)
        }) {
            to_sender.push_back((now + DELAY, buffer[..length].to_vec()));
        }
    }
}

#[test]
fn settled_endpoints_allocate_nothing_per_packet() {
    let _profiler = dhat::Profiler::builder().testing().build();
    for (profile, config) in [("rfc", Config::default()), ("ns2", Config::ns2())] {
        let (operations, allocations) = steady_state_allocations(config);
        println!("{profile}: {allocations} allocations in {operations} operations after 20 s");
        assert!(
            operations > 20_000,
            "{profile}: only {operations} operations"
        );
        assert_eq!(
            allocations, 0,
            "{profile}: {allocations} allocations in {operations} operations"
        );
    }
}
