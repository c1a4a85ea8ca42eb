//! `tfrc send`: TFRC flows to a receiver (one or `-P N` in parallel), or `-R`, the receiver
//! sending back; the iperf3-style report of the sending side.

#[allow(unused_imports)]
use super::*;

/// Runs `tfrc send`: one TFRC flow, or `-P N` flows in parallel (each its own socket, session
/// and core, as iperf3's `-P` opens N streams), reported per flow and summed.
pub fn run_send(args: &SendArgs) -> Result<()> {
    let stop = stop_on_signals()?;
    let to = args.destination()?;
    if args.tcp {
        return run_send_tcp(args, to, &stop);
    }
    if args.reverse {
        return run_send_reverse(args, to, &stop);
    }
    if args.parallel > 1 && args.bind.is_some_and(|bind| bind.port() != 0) {
        bail!(
            "--bind {}: {} parallel flows cannot share one port; give port 0",
            args.bind.unwrap_or(to),
            args.parallel
        );
    }
    let mut config = Config {
        packet_size: args.packet_size,
        target_rate: args.target_rate.map(|bits| bits / 8.0),
        rtt_ref: args.rtt_ref,
        history_discounting: args.history_discounting,
        oscillation_damping: args.oscillation_damping,
        timer_granularity: args
            .timer_granularity
            .unwrap_or(Config::default().timer_granularity),
        small_packets: args.small_packets.then(|| SmallPackets {
            header_size: args.header_size,
            ..SmallPackets::default()
        }),
        ..Config::default()
    };
    if let Some(beta) = args.veno_beta {
        config.veno = Some(Veno {
            beta,
            alpha: args.veno_alpha.unwrap_or(Veno::default().alpha),
        });
    }
    let mut senders = Vec::new();
    for index in 0..args.parallel as usize {
        let mut options = SenderOptions::new(to);
        options.bind = args.bind;
        options.duration = args.time;
        options.connect_timeout = args.connect_timeout;
        options.config = config.clone();
        options.keep_timer_granularity = args.timer_granularity.is_some();
        options.max_rate = args.max_rate.map(|bits| bits / 8.0);
        options.report_interval = Some(args.interval);
        options.log = args
            .log
            .as_ref()
            .map(|path| (flow_log_path(path, index, args.parallel), args.log_interval));
        options.realtime_priority = args.realtime.then_some(10);
        options.ecn = args.ecn;
        senders.push(UdpSender::new(options).context("cannot start the TFRC sender")?);
    }
    let names: Vec<FlowName> = senders
        .iter()
        .map(|sender| FlowName {
            session: format!("{:08x}", sender.session_id()),
            flow_id: sender.flow_id(),
            local: sender
                .local_addr()
                .map(|address| address.to_string())
                .unwrap_or_default(),
        })
        .collect();
    let calibration = senders[0].calibration();
    let config = senders[0].config().clone();
    let first = &names[0];
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "sender",
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": first.local,
        "session_id": first.session,
        "flow_id": first.flow_id,
        // iperf3's list of streams, with our session and flow ids.
        "connected": names.iter().map(|name| json!({
            "local": name.local,
            "session_id": name.session,
            "flow_id": name.flow_id,
        })).collect::<Vec<_>>(),
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "packet_size": args.packet_size,
            "num_streams": args.parallel,
            "target_rate_bps": args.target_rate,
            "max_rate_bps": args.max_rate,
            "rtt_ref_s": args.rtt_ref.map(|rtt| rtt.as_secs_f64()),
            "veno": config.veno.map(|veno| json!({"beta": veno.beta, "alpha": veno.alpha})),
            "history_discounting": config.history_discounting,
            "oscillation_damping": config.oscillation_damping,
            "small_packets": config.small_packets.map(|small| json!({
                "nominal_segment_size": small.nominal_segment_size,
                "header_size": small.header_size,
            })),
            "ecn": args.ecn,
            "log": args.log.as_ref().map(|path| path.display().to_string()),
            "realtime": args.realtime,
        },
        // Many datagrams per system call (UDP GSO), or one ("none") where the kernel has no GSO.
        "offload": {"send": senders[0].send_offload()},
        "timer": {
            "sleep_late_p50_us": calibration.sleep_late_p50_us,
            "sleep_late_p90_us": calibration.sleep_late_p90_us,
            "spin_margin_us": calibration.spin_margin_us,
            "timer_granularity_us": config.timer_granularity.as_secs_f64() * 1e6,
        },
    });
    if !args.json {
        for name in &names {
            say!(
                "Connecting to {} from {}, TFRC session {}, s = {} bytes, {} s",
                to,
                name.local,
                name.session,
                args.packet_size,
                args.time.as_secs_f64()
            );
        }
        say!(
            "Timer: kernel sleep late by {:.0} µs (p50) / {:.0} µs (p90); spinning the last {:.0} µs; granularity {:.1} µs",
            calibration.sleep_late_p50_us,
            calibration.sleep_late_p90_us,
            calibration.spin_margin_us,
            config.timer_granularity.as_secs_f64() * 1e6
        );
        say!(
            "[      ID] Interval          Transfer      Bitrate         X (rate)        p           RTT"
        );
    }
    let (intervals, results) = run_flows(senders, &names, &stop, args.json);
    let mut reports = Vec::new();
    for result in results {
        match result {
            Ok(report) => reports.push(report),
            Err(error) => {
                if args.json {
                    print_failed_document(start, intervals, &error)?;
                }
                return Err(error);
            }
        }
    }
    let failures: Vec<String> = reports
        .iter()
        .zip(&names)
        .filter_map(|(report, name)| {
            let failure = flow_failure(report, to)?;
            Some(if reports.len() > 1 {
                format!("flow {}: {failure}", name.session)
            } else {
                failure
            })
        })
        .collect();
    let failure = (!failures.is_empty()).then(|| failures.join("; "));
    if args.json {
        // One flow: its end at the top, as before -P; several: each in `streams`.
        let mut end = if reports.len() == 1 {
            flow_end(&reports[0])
        } else {
            json!({
                "streams": reports.iter().zip(&names).map(|(report, name)| {
                    let mut stream = flow_end(report);
                    stream["session_id"] = json!(name.session);
                    stream["flow_id"] = json!(name.flow_id);
                    stream
                }).collect::<Vec<_>>(),
                "cpu_utilization_percent": reports[0].cpu_utilization_percent,
            })
        };
        end["sum_sent"] = sum_sent(&reports);
        end["sum_received"] = sum_received(&reports);
        let mut document = json!({
            "start": start,
            "intervals": intervals,
            "end": end,
        });
        if let Some(failure) = &failure {
            document["error"] = json!(failure);
        }
        say!("{}", json_text(&document)?);
    } else {
        say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
        for (report, name) in reports.iter().zip(&names) {
            print_flow_end(&name.session, report);
        }
        if reports.len() > 1 {
            let sent = sum_sent(&reports);
            say!(
                "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender",
                0.0,
                sent["seconds"].as_f64().unwrap_or_default(),
                format_bytes(sent["bytes"].as_f64().unwrap_or_default()),
                format_bits_per_second(sent["bits_per_second"].as_f64().unwrap_or_default()),
            );
            let received = sum_received(&reports);
            if received.is_object() {
                say!(
                    "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver  lost {}/{} ({:.3}%)",
                    0.0,
                    received["seconds"].as_f64().unwrap_or_default(),
                    format_bytes(received["bytes"].as_f64().unwrap_or_default()),
                    format_bits_per_second(
                        received["bits_per_second"].as_f64().unwrap_or_default()
                    ),
                    received["lost_packets"],
                    received["packets"],
                    received["lost_percent"].as_f64().unwrap_or_default(),
                );
            }
        }
    }
    if let Some(failure) = failure {
        bail!(failure);
    }
    Ok(())
}

/// As iperf3 -J: a run that fails still prints its document, with an empty `end` and what
/// went wrong in `error`.
pub(super) fn print_failed_document(
    start: Value,
    intervals: Vec<Value>,
    error: &anyhow::Error,
) -> Result<()> {
    let document = json!({
        "start": start,
        "intervals": intervals,
        "end": {},
        "error": format!("{error:#}"),
    });
    say!("{}", json_text(&document)?);
    Ok(())
}

/// Runs every sender on its own thread and reports their intervals as they come: a text line
/// per flow and interval (and a `[SUM]` line once every flow has given that interval), or, in
/// JSON mode, iperf3's `intervals[]` (`streams` of every flow, and their `sum`). Returns the
/// JSON intervals and each flow's result, in flow order.
pub(super) fn run_flows(
    senders: Vec<UdpSender>,
    names: &[FlowName],
    stop: &AtomicBool,
    json_mode: bool,
) -> (Vec<Value>, Vec<Result<SenderReport>>) {
    let count = senders.len();
    let (sender_side, receiver_side) = std::sync::mpsc::channel::<(usize, SenderInterval)>();
    std::thread::scope(|scope| {
        let handles: Vec<_> = senders
            .into_iter()
            .enumerate()
            .map(|(index, sender)| {
                let channel = sender_side.clone();
                scope.spawn(move || {
                    sender.run(stop, &mut |interval| {
                        let _ = channel.send((index, *interval));
                    })
                })
            })
            .collect();
        drop(sender_side);
        // Interval k of every flow, filled as they come; a flow's k-th report is its k-th
        // message on the channel.
        let mut groups: Vec<Vec<Option<SenderInterval>>> = Vec::new();
        let mut given = vec![0usize; count];
        let mut printed = 0;
        let mut intervals = Vec::new();
        for (index, interval) in receiver_side {
            let number = given[index];
            given[index] += 1;
            if groups.len() <= number {
                groups.resize(number + 1, vec![None; count]);
            }
            groups[number][index] = Some(interval);
            if !json_mode {
                say!(
                    "[{}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  {:>14}  {:<10.6}  {}",
                    names[index].session,
                    interval.start,
                    interval.end,
                    format_bytes(interval.bytes as f64),
                    format_bits_per_second(interval.bits_per_second),
                    format_bits_per_second(interval.sending_rate_bps),
                    interval.p,
                    optional_millis(interval.rtt_s),
                );
            }
            while printed < groups.len() && groups[printed].iter().all(Option::is_some) {
                intervals.push(interval_json(&groups[printed], names));
                if !json_mode && count > 1 {
                    let sum = &intervals[printed]["sum"];
                    say!(
                        "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}",
                        sum["start"].as_f64().unwrap_or_default(),
                        sum["end"].as_f64().unwrap_or_default(),
                        format_bytes(sum["bytes"].as_f64().unwrap_or_default()),
                        format_bits_per_second(sum["bits_per_second"].as_f64().unwrap_or_default()),
                    );
                }
                printed += 1;
            }
        }
        // Intervals that not every flow reached (a flow ended early) are reported with the
        // flows that did.
        for group in &groups[printed..] {
            intervals.push(interval_json(group, names));
        }
        let results = handles
            .into_iter()
            .map(|handle| match handle.join() {
                Ok(result) => result.map_err(anyhow::Error::from),
                Err(_) => Err(anyhow::anyhow!("a sending thread panicked")),
            })
            .collect();
        (intervals, results)
    })
}

/// One of iperf3's `intervals[]` entries: the reports of one interval of the flows that gave
/// it (`group[k]`: flow k's, if any) and their sum.
pub(super) fn interval_json(group: &[Option<SenderInterval>], names: &[FlowName]) -> Value {
    let given: Vec<(&FlowName, &SenderInterval)> = names
        .iter()
        .zip(group)
        .filter_map(|(name, interval)| Some((name, interval.as_ref()?)))
        .collect();
    let streams: Vec<Value> = given
        .iter()
        .map(|(name, interval)| {
            let mut stream = serde_json::to_value(interval).unwrap_or(Value::Null);
            stream["flow_id"] = json!(name.flow_id);
            stream
        })
        .collect();
    let start = given
        .iter()
        .map(|(_, i)| i.start)
        .fold(f64::INFINITY, f64::min);
    let end = given
        .iter()
        .map(|(_, i)| i.end)
        .fold(f64::NEG_INFINITY, f64::max);
    json!({
        "streams": streams,
        "sum": {
            "start": start,
            "end": end,
            "seconds": end - start,
            "bytes": given.iter().map(|(_, i)| i.bytes).sum::<u64>(),
            "packets": given.iter().map(|(_, i)| i.packets).sum::<u64>(),
            "bits_per_second": given.iter().map(|(_, i)| i.bits_per_second).sum::<f64>(),
        },
    })
}

/// Why a flow counts as failed: nothing it heard was usable, or it heard nothing at all.
pub(super) fn flow_failure(report: &SenderReport, to: SocketAddr) -> Option<String> {
    let stats = &report.stats;
    let refused = stats.malformed
        + stats.foreign
        + stats.invalid_echo
        + stats.unproven
        + stats.hidden_loss
        + stats.unconfirmed
        + stats.replayed
        + stats.false_intervals
        + stats.under_reported;
    if stats.feedbacks == 0 && refused > 0 {
        // Something answered, but nothing it said could be used (a lying or foreign peer).
        Some(format!(
            "no feedback from {} was accepted in {:.1} s: {refused} refused ({} unproven, {} hiding loss, {} false loss intervals, {} under-reporting p, {} unconfirmed, {} replayed, {} foreign, {} invalid echo, {} malformed)",
            to,
            report.seconds,
            stats.unproven,
            stats.hidden_loss,
            stats.false_intervals,
            stats.under_reported,
            stats.unconfirmed,
            stats.replayed,
            stats.foreign,
            stats.invalid_echo,
            stats.malformed
        ))
    } else if stats.feedbacks == 0 {
        // iperf3 fails when it cannot reach its server; a TFRC sender that never heard from its
        // receiver has measured nothing either.
        Some(format!(
            "no feedback arrived from {} in {:.1} s: is `tfrc recv` listening there?",
            to, report.seconds
        ))
    } else {
        None
    }
}

/// iperf3's `sum_sent` over the flows: bytes and rates add up, over the longest flow's time.
pub(super) fn sum_sent(reports: &[SenderReport]) -> Value {
    let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
    iperf3_sum(
        seconds,
        reports.iter().map(|r| r.bytes).sum(),
        reports.iter().map(|r| r.bits_per_second).sum(),
        None,
    )
}

/// iperf3's `sum_received` over the flows (null when a receiver did not acknowledge its end of
/// session): bytes, rates, lost and sent packets add up; `jitter_ms` is the flows' mean, as
/// iperf3's sum of UDP streams.
pub(super) fn sum_received(reports: &[SenderReport]) -> Value {
    let Some(receivers) = reports
        .iter()
        .map(|report| report.receiver)
        .collect::<Option<Vec<_>>>()
    else {
        return Value::Null;
    };
    let sent: u64 = reports.iter().map(|r| r.packets).sum();
    let received: u64 = receivers.iter().map(|r| r.packets).sum();
    let seconds = reports.iter().map(|r| r.seconds).fold(0.0, f64::max);
    let mut sum = iperf3_sum(
        seconds,
        receivers.iter().map(|r| r.bytes).sum(),
        receivers.iter().map(|r| r.bits_per_second).sum(),
        Some((sent.saturating_sub(received), sent)),
    );
    sum["jitter_ms"] =
        json!(receivers.iter().map(|r| r.jitter_ms).sum::<f64>() / receivers.len() as f64);
    sum
}

/// The `end` of one flow: what it sent, what its receiver acknowledged, and its TFRC state.
pub(super) fn flow_end(report: &SenderReport) -> Value {
    let stats = &report.stats;
    let state = &report.final_state;
    json!({
        "reason": report.reason,
        "sender": {
            "seconds": report.seconds,
            "packets": report.packets,
            "bytes": report.bytes,
            "payload_bytes": report.payload_bytes,
            "bits_per_second": report.bits_per_second,
        },
        "receiver": report.receiver,
        "mean_p": report.mean_p,
        "rtt": report.rtt,
        "pacing": report.pacing,
        "timer_granularity_max_us": report.timer_granularity_max_us,
        "counters": {
            "feedbacks": stats.feedbacks,
            "malformed": stats.malformed,
            "foreign": stats.foreign,
            "invalid_echo": stats.invalid_echo,
            "unproven": stats.unproven,
            "hidden_loss": stats.hidden_loss,
            "unconfirmed": stats.unconfirmed,
            "replayed": stats.replayed,
            "false_intervals": stats.false_intervals,
            "under_reported": stats.under_reported,
            "lies": stats.lies,
            "p_raised": stats.p_raised,
            "x_recv_capped": stats.x_recv_capped,
            "no_feedback_expiries": stats.no_feedback_expiries,
            "send_errors": report.send_errors,
            "icmp_errors": report.icmp_errors,
        },
        "final_state": {
            "x_bps": finite(state.x * 8.0),
            "sending_rate_bps": finite(state.sending_rate * 8.0),
            "x_calc_bps": finite(state.x_calc * 8.0),
            "x_recv_bps": finite(state.x_recv * 8.0),
            "p": state.p,
            "rtt_s": state.rtt.map(|rtt| rtt.as_secs_f64()),
            "rto_s": state.rto.as_secs_f64(),
            "slow_start": state.slow_start,
        },
        "cpu_utilization_percent": report.cpu_utilization_percent,
    })
}

/// The text summary of one flow.
pub(super) fn print_flow_end(session: &str, report: &SenderReport) {
    let stats = &report.stats;
    say!(
        "[{session}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender    {} packets",
        0.0,
        report.seconds,
        format_bytes(report.bytes as f64),
        format_bits_per_second(report.bits_per_second),
        report.packets
    );
    match report.receiver {
        Some(receiver) => say!(
            "[{session}] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver  lost {}/{} ({:.3}%), {} loss events",
            0.0,
            report.seconds,
            format_bytes(receiver.bytes as f64),
            format_bits_per_second(receiver.bits_per_second),
            report.packets.saturating_sub(receiver.packets),
            report.packets,
            receiver.loss_ratio * 100.0,
            receiver.loss_events,
        ),
        None => say!("[{session}] receiver did not acknowledge the end of the session"),
    }
    say!(
        "mean p {:.6}; RTT mean {} (min {}, max {}); pacing error p50 {:.1} µs, p99 {:.1} µs; CPU {:.1}%",
        report.mean_p,
        optional_millis(report.rtt.mean_s),
        optional_millis(report.rtt.min_s),
        optional_millis(report.rtt.max_s),
        report.pacing.p50_us,
        report.pacing.p99_us,
        report.cpu_utilization_percent.host_total,
    );
    say!(
        "feedback: {} accepted, {} malformed, {} foreign, {} invalid echo, {} unproven, {} hiding loss, {} false loss intervals, {} under-reporting p, {} replayed; {} send errors, {} ICMP errors{}",
        stats.feedbacks,
        stats.malformed,
        stats.foreign,
        stats.invalid_echo,
        stats.unproven,
        stats.hidden_loss,
        stats.false_intervals,
        stats.under_reported,
        stats.replayed,
        report.send_errors,
        report.icmp_errors,
        if report.reason == tfrc_udp::sender::EndReason::Interrupted {
            " (interrupted)"
        } else {
            ""
        }
    );
}

/// An iperf3 `sum_sent` / `sum_received` object: the whole run from 0 to `seconds`, and for
/// datagrams `(lost, sent)` packets as iperf3's `lost_packets`, `packets`, `lost_percent`.
pub(super) fn iperf3_sum(
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    lost_of: Option<(u64, u64)>,
) -> Value {
    let mut sum = json!({
        "start": 0.0,
        "end": seconds,
        "seconds": seconds,
        "bytes": bytes,
        "bits_per_second": finite(bits_per_second),
    });
    if let Some((lost, sent)) = lost_of {
        sum["lost_packets"] = json!(lost);
        sum["packets"] = json!(sent);
        sum["lost_percent"] = finite(if sent > 0 {
            lost as f64 * 100.0 / sent as f64
        } else {
            0.0
        });
    }
    sum
}

/// `tfrc send -R` (iperf3's reverse mode): asks the `tfrc recv` at `to` to send a TFRC flow
/// with this command's parameters to this socket, receives it, and reports as the receiver
/// does (JSON: iperf3's `sum_sent` from the sender's end of session and `sum_received`). Fails
/// when no flow comes within the connect timeout.
pub(super) fn run_send_reverse(args: &SendArgs, to: SocketAddr, stop: &AtomicBool) -> Result<()> {
    let listen = args.bind.unwrap_or_else(|| {
        let any: std::net::IpAddr = if to.is_ipv4() {
            std::net::Ipv4Addr::UNSPECIFIED.into()
        } else {
            std::net::Ipv6Addr::UNSPECIFIED.into()
        };
        SocketAddr::new(any, 0)
    });
    let request = ReverseRequest {
        request_id: rand::random(),
        packet_size: args.packet_size,
        duration: args.time,
        max_rate: args.max_rate.map(|bits| bits / 8.0),
        target_rate: args.target_rate.map(|bits| bits / 8.0),
    };
    let mut datagram = vec![0; tfrc_udp::control::REVERSE_LEN];
    request.emit(&mut datagram);
    let mut options = ReceiverOptions::new(listen);
    options.max_flows = 1;
    options.once = true;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.announce = Some(Announce {
        to,
        datagram,
        every: Duration::from_millis(250),
        give_up_after: args.connect_timeout,
    });
    let receiver = UdpReceiver::bind(options).context("cannot start the TFRC receiver")?;
    let local = receiver
        .local_addr()
        .context("cannot read the local address")?;
    let start = json!({
        "version": version(),
        "protocol": "tfrc",
        "role": "receiver",
        "reverse": true,
        "timestamp": {"unix_s": unix_time_seconds()},
        "connecting_to": {"host": to.ip().to_string(), "port": to.port()},
        "local": local.to_string(),
        "test_start": {
            "duration_s": args.time.as_secs_f64(),
            "packet_size": args.packet_size,
            "reverse": 1,
            "target_rate_bps": args.target_rate,
            "max_rate_bps": args.max_rate,
        },
    });
    if !args.json {
        say!(
            "Asking {to} to send a TFRC flow to {local} (reverse mode), {} s",
            args.time.as_secs_f64()
        );
    }
    let served = serve(receiver, stop, args.json, &mut |_, _| {});
    let served = match served {
        Ok(served) => served,
        Err(error) if args.json => {
            print_failed_document(start, Vec::new(), &error)?;
            return Err(error);
        }
        Err(error) => return Err(error),
    };
    print_receiver_end(args.json, start, served, Vec::new())
}
