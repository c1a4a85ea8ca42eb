//! `tfrc send` and `tfrc recv`: argument definitions and the runs behind them, kept here so that
//! the `tfrc` binary only dispatches.
//!
//! Output follows iperf3: a line per interval while running and a summary at the end, or with
//! `--json` one JSON document with `start`, `intervals` and `end` (schema in `docs/udp-tools.md`).
//! SIGINT or SIGTERM ends a run cleanly with its summary and logs; a second one exits at once.

use core::time::Duration;

/// `println!` for the report on standard output: when the reader has gone (`tfrc send --json |
/// head -c 1`), the run ends quietly with the status a shell gives a process killed by SIGPIPE
/// (141), as iperf3 and other Unix tools do, instead of panicking.
macro_rules! say {
    ($($argument:tt)*) => {
        $crate::udp::write_stdout(format_args!($($argument)*))
    };
}

/// Writes one line to standard output; see [`say!`].
pub(crate) fn write_stdout(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(line)
        .and_then(|()| stdout.write_all(b"\n"));
    if let Err(error) = written.and_then(|()| stdout.flush()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("tfrc: cannot write to standard output: {error}");
        std::process::exit(1);
    }
}

mod args;
mod recv;
mod report;
mod send;
mod tcp;

pub use args::{Lies, RecvArgs, SendArgs};
pub use recv::run_recv;
pub use send::run_send;
#[allow(unused_imports)]
use {args::*, recv::*, report::*, send::*, tcp::*};

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};
use tfrc_proto::{Config, SmallPackets, Veno};

use tfrc_udp::clock::unix_time_seconds;
use tfrc_udp::control::{ReverseRequest, FLOW_OPTIONS_LEN};
use tfrc_udp::receiver::{Announce, ReceiverEvent, ReceiverOptions, UdpReceiver};
use tfrc_udp::sender::{SenderInterval, SenderOptions, SenderReport, UdpSender};
use tfrc_udp::tcp::{
    TcpReceiver, TcpReceiverEvent, TcpReceiverOptions, TcpSender, TcpSenderOptions,
};
use tfrc_units::{format_bits_per_second, format_bytes};

/// A stop flag set by SIGINT or SIGTERM; a second signal exits at once (status 130).
fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&stop))
            .context("cannot install the signal handler")?;
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot install the signal handler")?;
    }
    Ok(stop)
}

/// A time in seconds as people read an RTT: `12.345 ms`, or `-` when unknown.
fn optional_millis(seconds: Option<f64>) -> String {
    seconds.map_or_else(
        || "-".to_string(),
        |seconds| format!("{:.3} ms", seconds * 1e3),
    )
}

fn version() -> String {
    format!("tfrc {}", env!("CARGO_PKG_VERSION"))
}

/// One flow of `tfrc send` as the start of the report names it.
struct FlowName {
    session: String,
    flow_id: String,
    local: String,
}

impl FlowName {
    /// The names of `sender`'s flow (its local address empty if the socket cannot tell).
    fn of(sender: &UdpSender) -> FlowName {
        FlowName {
            session: format!("{:08x}", sender.session_id()),
            flow_id: sender.flow_id(),
            local: sender
                .local_addr()
                .map(|address| address.to_string())
                .unwrap_or_default(),
        }
    }
}

/// `--log FILE` for flow `index` of `count`: the file itself for one flow, `STEM-K.EXT`
/// (K = 1…N) for each of several.
fn flow_log_path(path: &std::path::Path, index: usize, count: u32) -> PathBuf {
    if count <= 1 {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |stem| stem.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(extension) => format!("{stem}-{}.{}", index + 1, extension.to_string_lossy()),
        None => format!("{stem}-{}", index + 1),
    };
    path.with_file_name(name)
}

/// The document as printed: pretty, with every non-integer number cut to 12 significant digits,
/// so that sums of binary fractions read as the decimals they stand for (`0.596343`, not
/// `0.5963430000000001`); 12 digits keep microseconds over a day (86400.000001 s) and a
/// 10 Gb/s rate to 0.01 b/s.
fn json_text(document: &Value) -> serde_json::Result<String> {
    fn tidy(value: &mut Value) {
        match value {
            Value::Number(number) if number.is_f64() => {
                if let Some(x) = number.as_f64() {
                    let rounded: f64 = format!("{x:.11e}").parse().unwrap_or(x);
                    if let Some(tidied) = serde_json::Number::from_f64(rounded) {
                        *number = tidied;
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(tidy),
            Value::Object(map) => map.values_mut().for_each(tidy),
            _ => {}
        }
    }
    let mut document = document.clone();
    tidy(&mut document);
    serde_json::to_string_pretty(&document)
}

/// A typed document part as JSON (for [`json_text`]); serializing these plain structs cannot
/// fail, and a failure would show as `null` rather than end the run.
fn to_value(part: &impl serde::Serialize) -> Value {
    serde_json::to_value(part).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_numbers_lose_their_binary_noise_only() {
        let document = json!({
            "a": 0.5963430000000001,
            "b": [0.19940719999999995, 3],
            "c": {"d": 1999911.0039603238, "e": 1e-9},
        });
        let text = json_text(&document).unwrap();
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["a"], json!(0.596343));
        assert_eq!(back["b"][0], json!(0.1994072));
        assert_eq!(back["b"][1], json!(3));
        assert_eq!(back["c"]["d"], json!(1999911.00396));
        assert_eq!(back["c"]["e"], json!(1e-9));
    }
}
