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
    let senders = start_senders(args, to, &tfrc_config(args))?;
    let names: Vec<FlowName> = senders.iter().map(FlowName::of).collect();
    let config = senders[0].config().clone();
    let start = SendStart::new(
        args,
        to,
        &names,
        &config,
        &senders[0].calibration(),
        senders[0].send_offload(),
    );
    if !args.json {
        print_start_text(args, to, &names, &start.timer);
    }
    let (intervals, results) = run_flows(senders, &names, &stop, args.json);
    let mut reports = Vec::new();
    for result in results {
        match result {
            Ok(report) => reports.push(report),
            Err(error) => {
                if args.json {
                    print_failed_document(to_value(&start), intervals, &error)?;
                }
                return Err(error);
            }
        }
    }
    let failure = failure_of_flows(&reports, &names, to);
    if args.json {
        print_send_document(&start, intervals, &reports, &names, failure.as_deref())?;
    } else {
        print_send_end_text(&reports, &names);
    }
    if let Some(failure) = failure {
        bail!(failure);
    }
    Ok(())
}

/// The TFRC core's configuration the flags ask for.
fn tfrc_config(args: &SendArgs) -> Config {
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
    config
}

/// One sender per flow of `-P`, each with its own socket (and its own log file).
fn start_senders(args: &SendArgs, to: SocketAddr, config: &Config) -> Result<Vec<UdpSender>> {
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
    Ok(senders)
}

/// The text report's header: each flow's connection, the timer calibration, the column titles.
fn print_start_text(args: &SendArgs, to: SocketAddr, names: &[FlowName], timer: &TimerStart) {
    for name in names {
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
        timer.sleep_late_p50_us,
        timer.sleep_late_p90_us,
        timer.spin_margin_us,
        timer.timer_granularity_us
    );
    say!(
        "[      ID] Interval          Transfer      Bitrate         X (rate)        p           RTT"
    );
}

/// Why the run failed, if a flow did (named by its session when there are several).
fn failure_of_flows(
    reports: &[SenderReport],
    names: &[FlowName],
    to: SocketAddr,
) -> Option<String> {
    let failures: Vec<String> = reports
        .iter()
        .zip(names)
        .filter_map(|(report, name)| {
            let failure = flow_failure(report, to)?;
            Some(if reports.len() > 1 {
                format!("flow {}: {failure}", name.session)
            } else {
                failure
            })
        })
        .collect();
    (!failures.is_empty()).then(|| failures.join("; "))
}

/// The whole JSON document of a finished run: `start`, `intervals`, `end` and, when a flow
/// failed, `error`.
fn print_send_document(
    start: &SendStart,
    intervals: Vec<Value>,
    reports: &[SenderReport],
    names: &[FlowName],
    failure: Option<&str>,
) -> Result<()> {
    let sum_sent = Iperf3Sum::sent(reports);
    let sum_received = Iperf3Sum::received(reports);
    let end = if reports.len() == 1 {
        SendEnd::Single {
            flow: Box::new(FlowEnd::new(&reports[0])),
            sum_sent,
            sum_received,
        }
    } else {
        SendEnd::Several {
            streams: reports
                .iter()
                .zip(names)
                .map(|(report, name)| FlowEnd {
                    session_id: Some(name.session.clone()),
                    flow_id: Some(name.flow_id.clone()),
                    ..FlowEnd::new(report)
                })
                .collect(),
            cpu_utilization_percent: &reports[0].cpu_utilization_percent,
            sum_sent,
            sum_received,
        }
    };
    let mut document = json!({
        "start": to_value(start),
        "intervals": intervals,
        "end": to_value(&end),
    });
    if let Some(failure) = failure {
        document["error"] = json!(failure);
    }
    say!("{}", json_text(&document)?);
    Ok(())
}

/// The text report's end: each flow's summary and, with several, their sums.
fn print_send_end_text(reports: &[SenderReport], names: &[FlowName]) {
    say!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    for (report, name) in reports.iter().zip(names) {
        print_flow_end(&name.session, report);
    }
    if reports.len() <= 1 {
        return;
    }
    let sent = Iperf3Sum::sent(reports);
    say!(
        "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  sender",
        0.0,
        sent.seconds,
        format_bytes(sent.bytes as f64),
        format_bits_per_second(sent.bits_per_second.0),
    );
    if let Some(received) = Iperf3Sum::received(reports) {
        say!(
            "[     SUM] {:6.2}-{:<6.2} s  {:>12}  {:>14}  receiver  lost {}/{} ({:.3}%)",
            0.0,
            received.seconds,
            format_bytes(received.bytes as f64),
            format_bits_per_second(received.bits_per_second.0),
            received.lost_packets.unwrap_or_default(),
            received.packets.unwrap_or_default(),
            received.lost_percent.map_or(0.0, |percent| percent.0),
        );
    }
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
                intervals.push(to_value(&IntervalReport::new(&groups[printed], names)));
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
            intervals.push(to_value(&IntervalReport::new(group, names)));
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
    let mut datagram = [0; tfrc_udp::control::REVERSE_LEN];
    request.emit(&mut datagram);
    let mut options = ReceiverOptions::new(listen);
    options.max_flows = 1;
    options.once = true;
    options.report_interval = Some(args.interval);
    options.log = args.log.clone().map(|path| (path, args.log_interval));
    options.announce = Some(Announce {
        to,
        datagram: datagram.to_vec(),
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
