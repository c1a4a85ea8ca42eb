//! The one-call logger: file names, one file per flow, rows on disk while running.

use core::time::Duration;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tfrc_udp::csvlog::{RECEIVER_COLUMNS, SENDER_COLUMNS, TCP_COLUMNS};
use tfrc_udp::logger::{self, LoggerConfig};
use tfrc_udp::port_set::PortSet;
use tfrc_udp::receiver::{ReceiverOptions, UdpReceiver};
use tfrc_udp::sender::{SenderOptions, UdpSender};

fn loopback() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Reads a CSV file: its header and rows.
fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header = lines
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect();
    let rows = lines
        .map(|line| line.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

fn column(header: &[String], name: &str) -> usize {
    header.iter().position(|column| column == name).unwrap()
}

/// Checks `<proto>_<flow-id>_<unix-timestamp>.csv` and returns the file of `flow_id`.
fn find_file(directory: &Path, protocol: &str, flow_id: &str) -> std::path::PathBuf {
    let prefix = format!("{protocol}_{flow_id}_");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for entry in std::fs::read_dir(directory).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(rest) = name.strip_prefix(&prefix) {
            let timestamp: u64 = rest.strip_suffix(".csv").unwrap().parse().unwrap();
            assert!(
                now - timestamp < 600,
                "timestamp {timestamp} is not now ({now})"
            );
            return directory.join(name);
        }
    }
    let names: Vec<_> = std::fs::read_dir(directory)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    panic!("no file {prefix}*.csv among {names:?}");
}

#[test]
fn logs_every_matching_tfrc_and_tcp_flow_into_its_own_file() {
    let directory = tempfile::tempdir().unwrap();

    // A TFRC receiver and sender of this process, and a TCP connection.
    let receiver = UdpReceiver::bind(ReceiverOptions {
        report_interval: None,
        ..ReceiverOptions::new(loopback())
    })
    .unwrap();
    let receiver_port = receiver.local_addr().unwrap().port();
    let mut options = SenderOptions::new(receiver.local_addr().unwrap());
    options.bind = Some(loopback());
    options.duration = Duration::from_millis(1500);
    options.max_rate = Some(1_000_000.0 / 8.0);
    options.report_interval = None;
    let sender = UdpSender::new(options).unwrap();
    let session = format!("{:08x}", sender.session_id());
    let listener = TcpListener::bind(loopback()).unwrap();
    let tcp_port = listener.local_addr().unwrap().port();

    // Logs the receiver's port and the TCP listener's port (a list), not the sender's.
    let mut config = LoggerConfig::new(
        PortSet::parse(&format!("{receiver_port},{tcp_port}")).unwrap(),
        Duration::from_millis(50),
    );
    config.directory = directory.path().to_path_buf();
    let flow_logger = logger::start_with(config).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let receiver_thread = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || receiver.run(&stop, &mut |_| {}).unwrap())
    };
    let sender_thread =
        std::thread::spawn(move || sender.run(&AtomicBool::new(false), &mut |_| {}).unwrap());
    let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut server, peer) = listener.accept().unwrap();
    let reader = std::thread::spawn(move || {
        let mut sink = Vec::new();
        server.read_to_end(&mut sink).unwrap();
        sink.len()
    });
    let tcp_flow_id = format!("{tcp_port}-127.0.0.1-{}", peer.port());
    for _ in 0..20 {
        client.write_all(&[0u8; 64 * 1024]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }

    // Rows are on disk while the logger runs (a kill would leave them).
    let tfrc_file = find_file(directory.path(), "tfrc", &format!("{session}-receiver"));
    let (_, rows_so_far) = read_csv(&tfrc_file);
    assert!(!rows_so_far.is_empty(), "rows are written as they come");

    let sender_report = sender_thread.join().unwrap();
    drop(client);
    assert_eq!(reader.join().unwrap(), 20 * 64 * 1024);
    stop.store(true, Ordering::Relaxed);
    receiver_thread.join().unwrap();
    let summary = flow_logger.stop();

    // The TFRC receiver flow: its own file, full rows, counters that only grow.
    let (header, rows) = read_csv(&tfrc_file);
    assert_eq!(header, RECEIVER_COLUMNS);
    assert!(rows.len() >= 5, "{} rows", rows.len());
    let packets = column(&header, "packets");
    let mut previous = 0u64;
    for row in &rows {
        assert_eq!(row.len(), RECEIVER_COLUMNS.len());
        assert_eq!(
            row[column(&header, "flow_id")],
            format!("{session}-receiver")
        );
        let count: u64 = row[packets].parse().unwrap();
        assert!(count >= previous);
        previous = count;
    }
    // The last row holds the flow's final count.
    let total = sender_report.receiver.expect("acknowledged").packets;
    assert_eq!(previous, total);

    // The TCP connection, found through the kernel (or, if sock_diag is unavailable, not at all:
    // it was not opened through this crate).
    if summary.kernel_tcp_visible {
        let tcp_file = find_file(directory.path(), "tcp", &tcp_flow_id);
        let (header, rows) = read_csv(&tcp_file);
        assert_eq!(header, TCP_COLUMNS);
        assert!(rows.len() >= 3, "{} rows", rows.len());
        let cwnd = column(&header, "cwnd_segments");
        assert!(rows
            .iter()
            .all(|row| row[cwnd].parse::<u32>().unwrap() >= 1));
    } else {
        eprintln!("sock_diag unavailable: the kernel TCP part of this test is skipped");
    }

    // The sender's port was not in the token: no sender file.
    let names: Vec<String> = std::fs::read_dir(directory.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names.iter().any(|name| name.contains("-sender_")),
        "{names:?}"
    );
    // The summary lists what was written.
    assert!(summary
        .files
        .iter()
        .any(|file| file.path == tfrc_file && file.rows == rows_len(&tfrc_file)));
}

fn rows_len(path: &Path) -> u64 {
    read_csv(path).1.len() as u64
}

#[test]
fn a_port_range_token_logs_the_sender_too() {
    let directory = tempfile::tempdir().unwrap();
    let receiver = UdpReceiver::bind(ReceiverOptions {
        report_interval: None,
        once: true,
        ..ReceiverOptions::new(loopback())
    })
    .unwrap();
    let mut options = SenderOptions::new(receiver.local_addr().unwrap());
    options.bind = Some(loopback());
    options.duration = Duration::from_millis(800);
    options.max_rate = Some(1_000_000.0 / 8.0);
    options.report_interval = None;
    let sender = UdpSender::new(options).unwrap();
    let port = sender.local_addr().unwrap().port();
    let session = format!("{:08x}", sender.session_id());
    let mut config = LoggerConfig::new(
        PortSet::parse(&format!("{port}-{port}")).unwrap(),
        Duration::from_millis(50),
    );
    config.directory = directory.path().to_path_buf();
    config.tcp = false;
    let flow_logger = logger::start_with(config).unwrap();
    let receiver_thread =
        std::thread::spawn(move || receiver.run(&AtomicBool::new(false), &mut |_| {}).unwrap());
    let report = sender.run(&AtomicBool::new(false), &mut |_| {}).unwrap();
    receiver_thread.join().unwrap();
    // Give the logger one interval to see the finished flow.
    std::thread::sleep(Duration::from_millis(200));
    let summary = flow_logger.stop();
    let file = find_file(directory.path(), "tfrc", &format!("{session}-sender"));
    let (header, rows) = read_csv(&file);
    assert_eq!(header, SENDER_COLUMNS);
    assert!(rows.len() >= 5, "{} rows", rows.len());
    let sent = column(&header, "packets_sent");
    let last: u64 = rows.last().unwrap()[sent].parse().unwrap();
    assert_eq!(last, report.packets, "the last row is the final state");
    assert_eq!(summary.files.len(), 1, "{:?}", summary.files);
}

#[test]
fn bad_tokens_and_directories_are_refused_with_the_input_named() {
    let error = logger::start("5000-", Duration::from_millis(100)).unwrap_err();
    assert!(error.to_string().contains("5000-"), "{error}");
    let mut config = LoggerConfig::new(PortSet::single(5000), Duration::from_millis(100));
    config.directory = "/nonexistent/directory".into();
    let error = logger::start_with(config).unwrap_err();
    assert!(
        error.to_string().contains("/nonexistent/directory"),
        "{error}"
    );
}
