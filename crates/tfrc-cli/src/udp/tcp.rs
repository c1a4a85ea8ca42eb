//! `tfrc send --tcp` and the TCP side of `tfrc recv`: kernel TCP bulk flows with the same
//! report as the TFRC runs.

#[allow(unused_imports)]
use super::*;

/// `tfrc send --tcp`: one kernel TCP bulk flow with the chosen congestion control, reported
/// per interval from `TCP_INFO` and summed as iperf3 does.
pub(super) fn run_send_tcp(args: &SendArgs, to: SocketAddr, stop: &AtomicBool) -> Result<()> {
    let mut options = TcpSenderOptions::new(to);
    options.duration = args.time;
    options.congestion = args.congestion.clone();
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    let sender = TcpSender::connect(options)?;
    let local = sender
        .local_addr()
        .map(|address| address.to_string())
        .unwrap_or_default();
    let congestion = sender.congestion().to_string();
    let start = json!({
        "version": version(),
        "protocol": "tcp",
        "role": "sender",
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": local,
        "flow_id": sender.flow_id(),
        "congestion": congestion,
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "log": args.log.as_ref().map(|path| path.display().to_string()),
        },
    });
    if !args.json {
        say!(
            "Connecting to {} from {local}, TCP {congestion}, {} s",
            to,
            args.time.as_secs_f64()
        );
        say!("[ID] Interval          Transfer      Bitrate          cwnd    ssthresh  RTT         retr");
    }
    let mut intervals = Vec::new();
    let json_mode = args.json;
    let summary = sender.run(stop, &mut |interval| {
        if json_mode {
            intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
        } else if let Some(stream) = interval.streams.first() {
            say!(
                "[tcp] {:6.2}-{:<6.2} s  {:>12}  {:>14}  {:>6}  {:>8}  {:>9.3} ms  {}",
                interval.start,
                interval.end,
                format_bytes(stream.bytes as f64),
                format_bits_per_second(stream.bits_per_second),
                stream.cwnd,
                ssthresh_text(stream.ssthresh),
                stream.rtt_s * 1e3,
                stream.retransmits,
            );
        }
    })?;
    if args.json {
        print_tcp_send_document(start, intervals, &summary)
    } else {
        print_tcp_send_end_text(&summary);
        Ok(())
    }
}

/// The JSON document of a finished `tfrc send --tcp`. A TCP sender knows what it wrote and
/// what the receiver acknowledged: iperf3's `sum_sent` and `sum_received`.
fn print_tcp_send_document(
    start: Value,
    intervals: Vec<Value>,
    summary: &tfrc_udp::tcp::TcpFlowSummary,
) -> Result<()> {
    let acked = summary.bytes_acked.unwrap_or(summary.bytes);
    let acked_bps = if summary.seconds > 0.0 {
        acked as f64 * 8.0 / summary.seconds
    } else {
        0.0
    };
    let sum_sent = Iperf3Sum::new(
        summary.seconds,
        summary.bytes,
        summary.bits_per_second,
        None,
    );
    let document = json!({
        "start": start,
        "intervals": intervals,
        "end": {
            "sum_sent": to_value(&sum_sent),
            "sum_received": to_value(&Iperf3Sum::new(summary.seconds, acked, acked_bps, None)),
            "streams": [summary],
        },
    });
    say!("{}", json_text(&document)?);
    Ok(())
}

/// The text summary of a finished `tfrc send --tcp`.
fn print_tcp_send_end_text(summary: &tfrc_udp::tcp::TcpFlowSummary) {
    say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    say!(
        "[tcp] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender, {} retransmissions, RTT mean {}; CPU {:.1}%",
        0.0,
        summary.seconds,
        format_bytes(summary.bytes as f64),
        format_bits_per_second(summary.bits_per_second),
        summary.total_retrans,
        optional_millis(summary.rtt.mean_s),
        summary.cpu_utilization_percent.host_total,
    );
}

/// ssthresh as the text report shows it.
pub(super) fn ssthresh_text(ssthresh: u32) -> String {
    // The kernel reports "infinite" (never set) as a huge number.
    if ssthresh >= 0x7fff_ffff {
        "-".to_string()
    } else {
        ssthresh.to_string()
    }
}

/// Prints where the receiver listens: on stdout in text mode, on stderr with `--json` (whose
/// stdout is the JSON document only), so scripts can learn a port chosen by the system.
pub(super) fn announce_listening(json: bool, protocol: &str, address: SocketAddr) {
    let line = format!("Server listening on {address} ({protocol})");
    if json {
        eprintln!("{line}");
    } else {
        say!("{line}");
    }
}

pub(super) fn run_recv_tcp(args: &RecvArgs, stop: &AtomicBool) -> Result<()> {
    if args.max_flows == 0 {
        bail!("--max-flows must be at least 1");
    }
    let mut options = TcpReceiverOptions::new(args.listen_address());
    options.max_flows = args.max_flows as usize;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.once = args.once;
    let receiver = TcpReceiver::bind(options)?;
    let local = receiver
        .local_addr()
        .context("cannot read the listening address")?;
    announce_listening(args.json, "TCP", local);
    let start = json!({
        "version": version(),
        "protocol": "tcp",
        "role": "receiver",
        "timestamp": {"unix_s": unix_time_seconds()},
        "listening": local.to_string(),
        "log": args.log.as_ref().map(|path| path.display().to_string()),
    });
    let json_mode = args.json;
    let mut intervals = Vec::new();
    let summaries = receiver.run(stop, &mut |event| match event {
        TcpReceiverEvent::FlowStarted {
            flow_id,
            peer,
            congestion,
        } => {
            if !json_mode {
                say!("[{flow_id}] connection from {peer} ({congestion})");
            }
        }
        TcpReceiverEvent::Interval(interval) => {
            if json_mode {
                intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
            } else {
                for stream in &interval.streams {
                    say!(
                        "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}",
                        stream.flow_id,
                        interval.start,
                        interval.end,
                        format_bytes(stream.bytes as f64),
                        format_bits_per_second(stream.bits_per_second),
                    );
                }
            }
        }
        TcpReceiverEvent::FlowEnded(summary) => {
            if !json_mode {
                say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver",
                    summary.flow_id,
                    0.0,
                    summary.seconds,
                    format_bytes(summary.bytes as f64),
                    format_bits_per_second(summary.bits_per_second),
                );
            }
        }
    })?;
    if args.json {
        let document =
            json!({"start": start, "intervals": intervals, "end": {"streams": summaries}});
        say!("{}", json_text(&document)?);
    }
    Ok(())
}
