//! The protocol core allocates nothing per packet once a session has settled: every buffer it
//! keeps (the sent ledger, the arrival window, the loss history, the receiver's ledgers) is a
//! ring that reaches its steady length and stays there.
//!
//! dhat's allocator counts the allocations made inside the endpoints' calls (send, receive,
//! feedback, timers) of a 120 s exchange over a 25 ms path that drops every 100th data packet
//! and, every 1000th, three in a row; the first 20 s (slow start, the rings growing to their
//! steady length) are not counted.

use core::time::Duration;
use tfrc_proto::{Config, Instant};

#[path = "../benches/common/exchange.rs"]
mod exchange;
use exchange::{exchange, Observer, Path};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Counts the heap blocks allocated inside the endpoints' calls from `from` on.
struct Allocations {
    from: Instant,
    calls: u64,
    blocks: u64,
}

impl Observer for Allocations {
    fn around<T>(&mut self, now: Instant, call: impl FnOnce() -> T) -> T {
        let before = dhat::HeapStats::get().total_blocks;
        let result = call();
        if now >= self.from {
            self.calls += 1;
            self.blocks += dhat::HeapStats::get().total_blocks - before;
        }
        result
    }
}

/// Calls and allocations inside the endpoints after the warm-up.
fn steady_state_allocations(config: Config) -> (u64, u64) {
    let path = Path {
        delay: Duration::from_millis(25),
        dropped: |sent| sent % 100 == 0 || sent % 1000 < 3,
        end: Instant::from_secs(120),
    };
    let mut counted = Allocations {
        from: Instant::from_secs(20),
        calls: 0,
        blocks: 0,
    };
    exchange(&config, &path, &mut counted);
    (counted.calls, counted.blocks)
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
