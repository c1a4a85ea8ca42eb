//! The machine's own wake-up lateness, in the conditions of a pacing run: bench/udp/run.sh runs
//! it right before each `tfrc send --max-rate` run, with the same interval between packets,
//! load and priority, and reports the sender's pacing error as a ratio to it.
//!
//!   wakeup_probe INTERVAL_US SECONDS [--realtime]
//!
//! Prints one JSON object: the calibration (as `tfrc send` calibrates) and the lateness
//! distribution of sleep-then-spin waits (what the sender does) and of kernel sleeps alone.

use core::time::Duration;

use tfrc_udp::clock::Clock;
use tfrc_udp::pacing::{probe_wakeups, set_realtime_priority, ProbeWait, Waiter};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: wakeup_probe INTERVAL_US SECONDS [--realtime]";
    let number = |index: usize, name: &str| -> f64 {
        let Some(text) = args.get(index) else {
            eprintln!("{usage}");
            std::process::exit(2);
        };
        match text.parse::<f64>() {
            Ok(value) if value.is_finite() && value > 0.0 => value,
            _ => {
                eprintln!("wakeup_probe: {name} must be a positive number, got '{text}'\n{usage}");
                std::process::exit(2);
            }
        }
    };
    let interval = Duration::from_secs_f64(number(0, "INTERVAL_US") / 1e6);
    let seconds = Duration::from_secs_f64(number(1, "SECONDS"));
    let realtime = args.iter().any(|arg| arg == "--realtime");
    if realtime {
        if let Err(error) = set_realtime_priority(10) {
            eprintln!("wakeup_probe: --realtime: {error}");
            std::process::exit(1);
        }
    }
    let (waiter, calibration) = Waiter::calibrate(Clock::new());
    let spin = probe_wakeups(&waiter, ProbeWait::SleepThenSpin, interval, seconds / 2);
    let sleep = probe_wakeups(&waiter, ProbeWait::Sleep, interval, seconds / 2);
    let report = serde_json::json!({
        "interval_us": interval.as_secs_f64() * 1e6,
        "realtime": realtime,
        "calibration": calibration,
        "sleep_then_spin": spin,
        "sleep": sleep,
    });
    println!("{report}");
}
