//! `tfrc recv`: a receiver of TFRC flows (several at once, by session), or the sending side
//! of a `tfrc send -R` run; the iperf3-style report of the receiving side.

#[allow(unused_imports)]
use super::*;

/// Runs `tfrc recv`: serves TFRC flows, and sends a flow to each `tfrc send -R` that asks
/// (unless `--no-reverse`).
pub fn run_recv(args: &RecvArgs) -> Result<()> {
    let stop = stop_on_signals()?;
    if args.tcp {
        return run_recv_tcp(args, &stop);
    }
    let mut options = ReceiverOptions::new(args.listen_address());
    options.max_flows = args.max_flows as usize;
    options.idle_timeout = args.idle_timeout;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.once = args.once;
    options.accept_reverse = !args.no_reverse;
    options.lies = args.lie.clone().map(|lies| lies.0).unwrap_or_default();
    let receiver = UdpReceiver::bind(options.clone()).context("cannot start the TFRC receiver")?;
    let local = receiver
        .local_addr()
        .context("cannot read the listening address")?;
    announce_listening(args.json, "TFRC", local);
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "receiver",
        "timestamp": {"unix_s": unix_time_seconds()},
        "listening": local.to_string(),
        "limits": {
            "max_flows": options.max_flows,
            "idle_timeout_s": options.idle_timeout.as_secs_f64(),
            "linger_s": options.linger.as_secs_f64(),
        },
        "log": args.log.as_ref().map(|path| path.display().to_string()),
        "reverse": !args.no_reverse,
    });
    // Reverse flows run on their own threads, which the scope joins before the report.
    let reverse_ends = std::sync::Mutex::new(Vec::new());
    let active = std::sync::atomic::AtomicUsize::new(0);
    let json_mode = args.json;
    let report = std::thread::scope(|scope| {
        let mut on_reverse = |peer: SocketAddr, request: ReverseRequest| {
            if active.load(Ordering::Relaxed) >= options.max_flows {
                if !json_mode {
                    say!(
                        "[reverse] {peer}: refused, {} flows already",
                        options.max_flows
                    );
                }
                return;
            }
            active.fetch_add(1, Ordering::Relaxed);
            let (stop, reverse_ends, active) = (&stop, &reverse_ends, &active);
            scope.spawn(move || {
                let end = send_reverse_flow((local, peer), request, stop, json_mode);
                if let Ok(mut ends) = reverse_ends.lock() {
                    ends.push(end);
                }
                active.fetch_sub(1, Ordering::Relaxed);
            });
        };
        serve(receiver, &stop, json_mode, &mut on_reverse)
    })?;
    // The scope has joined the reverse flows (the stop flag ends them early on Ctrl-C).
    let reverse = reverse_ends.into_inner().unwrap_or_default();
    print_receiver_end(json_mode, start, report, reverse)
}

/// Sends the flow a `tfrc send -R` asked for, from the listening port `local` (a second socket
/// sharing it) to `peer`; its HELLO must be answered from there before any data leaves.
/// Returns its end report (as in `tfrc send -J`'s `end`), with `peer`, or `error` when it
/// failed.
pub(super) fn send_reverse_flow(
    (local, peer): (SocketAddr, SocketAddr),
    request: ReverseRequest,
    stop: &AtomicBool,
    json_mode: bool,
) -> Value {
    let mut options = SenderOptions::new(peer);
    // From the port the request came to: a relay or NAT on the way lets the flow back.
    options.bind = Some(local);
    options.share_port = true;
    options.duration = request.duration;
    options.config = Config {
        packet_size: request.packet_size,
        target_rate: request.target_rate,
        ..Config::default()
    };
    options.max_rate = request.max_rate;
    options.report_interval = None;
    let result = UdpSender::new(options)
        .map_err(anyhow::Error::from)
        .and_then(|sender| {
            let session = format!("{:08x}", sender.session_id());
            if !json_mode {
                say!("[{session}] reverse flow to {peer}: {:?}", request.duration);
            }
            let report = sender.run(stop, &mut |_| {})?;
            Ok((session, report))
        });
    match result {
        Ok((session, report)) => {
            if !json_mode {
                print_flow_end(&session, &report);
            }
            let mut end = to_value(&FlowEnd::new(&report));
            end["session_id"] = json!(session);
            end["peer"] = json!(peer.to_string());
            end
        }
        Err(error) => {
            if !json_mode {
                say!("[reverse] flow to {peer} failed: {error:#}");
            }
            json!({"peer": peer.to_string(), "error": format!("{error:#}")})
        }
    }
}

/// Serves TFRC flows until `stop` (or, with `once`, the first flow's end): a text line per
/// flow and interval, or iperf3's `intervals[]` in JSON mode (returned with the report).
/// Reverse requests go to `on_reverse`.
pub(super) fn serve(
    receiver: UdpReceiver,
    stop: &AtomicBool,
    json_mode: bool,
    on_reverse: &mut dyn FnMut(SocketAddr, ReverseRequest),
) -> Result<(Vec<Value>, tfrc_udp::receiver::ReceiverReport)> {
    let mut intervals = Vec::new();
    let report = receiver.run(stop, &mut |event| match event {
        ReceiverEvent::FlowStarted { flow_id, peer } => {
            if !json_mode {
                say!("[{flow_id}] flow from {peer}");
            }
        }
        ReceiverEvent::ReverseRequested { peer, request } => on_reverse(peer, request),
        ReceiverEvent::Interval(interval) => {
            if json_mode {
                intervals.push(serde_json::to_value(interval).unwrap_or(Value::Null));
            } else {
                for stream in &interval.streams {
                    say!(
                        "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  lost {:<6}  p {:<10.6}  R_m {}",
                        &stream.flow_id[..8.min(stream.flow_id.len())],
                        interval.start,
                        interval.end,
                        format_bytes(stream.bytes as f64),
                        format_bits_per_second(stream.bits_per_second),
                        stream.lost,
                        stream.p,
                        optional_millis(stream.rtt_s),
                    );
                }
                if interval.streams.len() > 1 {
                    say!(
                        "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  lost {}",
                        interval.start,
                        interval.end,
                        format_bytes(interval.sum.bytes as f64),
                        format_bits_per_second(interval.sum.bits_per_second),
                        interval.sum.lost,
                    );
                }
            }
        }
        ReceiverEvent::FlowEnded(summary) => {
            if !json_mode {
                say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver ({:?}) goodput {}",
                    summary.session_id,
                    0.0,
                    summary.seconds,
                    format_bytes(summary.bytes as f64),
                    format_bits_per_second(summary.bits_per_second),
                    summary.reason,
                    format_bits_per_second(summary.goodput_bps),
                );
                say!(
                    "[{}] received {} packets, lost {} ({:.3}%), {} loss events; mean p {:.6}, final p {:.6}; R_m mean {}",
                    summary.session_id,
                    summary.packets,
                    summary
                        .sender_packets
                        .map_or(summary.lost, |sent| sent.saturating_sub(summary.packets)),
                    summary.loss_ratio * 100.0,
                    summary.loss_events,
                    summary.mean_p,
                    summary.final_p,
                    optional_millis(summary.rtt.mean_s),
                );
            }
        }
    })?;
    Ok((intervals, report))
}

/// The receiver's end: the JSON document (`start`, `intervals`, `end` with iperf3's
/// `sum_sent` — from the senders' ends of session — and `sum_received`, the flows, the
/// counters, and the reverse flows sent) or a text line of counters.
pub(super) fn print_receiver_end(
    json_mode: bool,
    start: Value,
    (intervals, report): (Vec<Value>, tfrc_udp::receiver::ReceiverReport),
    reverse: Vec<Value>,
) -> Result<()> {
    let counters = report.counters;
    if json_mode {
        let streams = &report.streams;
        let seconds = streams
            .iter()
            .map(|s| s.start + s.seconds)
            .fold(0.0, f64::max);
        let packets: u64 = streams.iter().map(|stream| stream.packets).sum();
        let bytes: u64 = streams.iter().map(|stream| stream.bytes).sum();
        let lost: u64 = streams.iter().map(|stream| stream.lost).sum();
        let sent_packets: Option<u64> = streams.iter().map(|s| s.sender_packets).sum();
        let sent_bytes: Option<u64> = streams.iter().map(|s| s.sender_bytes).sum();
        let rate = |bytes: u64| {
            if seconds > 0.0 {
                bytes as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        let sum_sent = sent_bytes.map(|sent| Iperf3Sum::new(seconds, sent, rate(sent), None));
        let mut sum_received = Iperf3Sum::new(
            seconds,
            bytes,
            rate(bytes),
            sent_packets.map(|sent| (sent.saturating_sub(packets), sent)),
        );
        if !streams.is_empty() {
            sum_received.jitter_ms =
                Some(streams.iter().map(|s| s.jitter_ms).sum::<f64>() / streams.len() as f64);
        }
        let document = json!({
            "start": start,
            "intervals": intervals,
            "end": {
                "streams": report.streams,
                "sum": {"packets": packets, "bytes": bytes, "lost": lost},
                "sum_sent": to_value(&sum_sent),
                "sum_received": to_value(&sum_received),
                "reverse_flows": reverse,
                "counters": counters,
                "cpu_utilization_percent": report.cpu_utilization_percent,
            },
        });
        say!("{}", json_text(&document)?);
    } else {
        say!(
            "receiver: {} flows ({} completed, {} idle), {} datagrams, {} malformed, {} spoofed, {} stray, {} rejected, {} unverified, {} reverse flows sent; CPU {:.1}%",
            counters.flows_opened,
            counters.flows_completed,
            counters.flows_expired,
            counters.datagrams,
            counters.malformed,
            counters.spoofed,
            counters.stray,
            counters.rejected_flows,
            counters.unverified,
            reverse.len(),
            report.cpu_utilization_percent.host_total,
        );
    }
    Ok(())
}
