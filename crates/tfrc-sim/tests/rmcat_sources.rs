//! The sources of the RMCAT cases: media flows (a TFRC flow with a `media` table, RFC 8867
//! §4.3's adaptive codec judged frame by frame against a playout deadline, carried by an ETP
//! connection or, with `transport = "tfrc"`, by the bare TFRC core) and short TCP transfers (a
//! TCP flow with `downloads`, RFC 8868 §5.1).

use tfrc_output::FlowSummary;
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::{EtpFlowStats, Simulation};

/// One video media flow (1200-byte packets, 150 kb/s – 1.5 Mb/s at 30 frames/s) alone on a
/// link of `rate` with a 50 ms one-way delay and a `limit`-packet DropTail queue, for `seconds`;
/// `media` adds keys to its media table. Returns the flow's summary and, for an ETP flow, its
/// connection counters.
fn run_video(
    rate: &str,
    limit: u32,
    seconds: u32,
    media: &str,
) -> (FlowSummary, Vec<EtpFlowStats>) {
    let text = format!(
        "name = \"media\"\nduration = \"{seconds}s\"\n\n[[link]]\nbetween = [\"s\", \"r\"]\n\
         rate = \"{rate}\"\ndelay = \"50ms\"\nqueue = {{ kind = \"droptail\", limit = {limit} }}\n\n\
         [[flow]]\nname = \"video\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\npacket_size = 1200\n\
         max_rate = \"1.5Mbps\"\nmedia = {{ fps = 30{media} }}\n"
    );
    let scenario = Scenario::from_str_named(&text, "media.toml").expect("valid scenario");
    let mut simulation = Simulation::new(&scenario, None).expect("builds");
    simulation.run_until(simulation.end()).expect("runs");
    let etp = simulation.etp_flow_stats();
    let summary = simulation.finish().expect("finishes");
    (summary.flows[0].clone(), etp)
}

fn video_alone(rate: &str, limit: u32, seconds: u32, media: &str) -> FlowSummary {
    run_video(rate, limit, seconds, media).0
}

/// Both transports: ETP (the default) and the bare TFRC core.
const TRANSPORTS: [&str; 2] = ["", ", transport = \"tfrc\""];

#[test]
fn an_unconstrained_video_reaches_its_top_rate_and_every_frame_is_on_time() {
    for transport in TRANSPORTS {
        // 10 Mb/s is far above 1.5 Mb/s: after TFRC's start-up the codec runs at its top rate.
        let flow = video_alone("10Mbps", 100, 30, transport);
        // 30 frames/s for 30 s.
        assert_eq!(flow.frames, Some(900), "{transport}");
        let on_time = flow.frames_on_time.unwrap();
        assert!(
            on_time >= 895,
            "{transport}: {on_time} of 900 frames on time"
        );
        assert_eq!(flow.frames_late, Some(0), "{transport}");
        // Goodput: 1.5 Mb/s of frames less the start-up (the first frame at 150 kb/s, then
        // TFRC's increase), so between 1.3 and 1.5 Mb/s over the run, never above the codec's
        // top.
        let goodput = flow.goodput_bps.unwrap();
        assert!(
            (1.3e6..=1.5e6).contains(&goodput),
            "{transport}: {goodput:.0} b/s"
        );
        // Nothing queues: one-way delay is the propagation delay plus serialization.
        assert!(flow.delay_p95_s.unwrap() < 0.06, "{:?}", flow.delay_p95_s);
    }
}

#[test]
fn an_etp_media_flow_is_one_connection_with_a_handshake_and_acknowledgements() {
    let (flow, etp) = run_video("10Mbps", 100, 10, "");
    assert_eq!(etp.len(), 1);
    assert_eq!(etp[0].flow, "video");
    // One connection, never stuck at an instant.
    assert_eq!((etp[0].connections, etp[0].stalls), (1, 0));
    // Its datagrams carry the ETP and TFRC headers on top of the frames: more bytes on the wire
    // than frame bytes delivered (goodput counts the frames the application received whole).
    assert!(flow.sent_bytes > flow.goodput_bytes, "{flow:?}");
    // The bare core sends no ETP headers: per frame byte, fewer bytes on the wire.
    let bare = video_alone("10Mbps", 100, 10, TRANSPORTS[1]);
    let overhead = |flow: &FlowSummary| flow.sent_bytes as f64 / flow.goodput_bytes as f64;
    assert!(overhead(&flow) > overhead(&bare), "{flow:?} {bare:?}");
}

#[test]
fn a_narrow_link_makes_frames_miss_their_deadline() {
    for transport in TRANSPORTS {
        // 400 kb/s with a 300 ms queue (12.5 packets: 13): TFRC fills the queue, so frames
        // queue at the sender and in the network and many miss the 300 ms deadline, but the
        // rate follows the link.
        let flow = video_alone("400kbps", 13, 60, transport);
        let received = flow.recv_rate_bps.unwrap();
        assert!(
            (300e3..=400e3).contains(&received),
            "{transport}: {received:.0} b/s"
        );
        let missed = flow.frames.unwrap() - flow.frames_on_time.unwrap();
        assert!(missed > 100, "{transport}: {missed} frames missed");
        // A 2 s deadline forgives the queueing: fewer frames miss.
        let patient = video_alone(
            "400kbps",
            13,
            60,
            &format!("{transport}, deadline = \"2s\""),
        );
        let patient_missed = patient.frames.unwrap() - patient.frames_on_time.unwrap();
        assert!(
            patient_missed < missed,
            "{transport}: {patient_missed} vs {missed}"
        );
    }
}

#[test]
fn a_pause_captures_no_frames() {
    for transport in TRANSPORTS {
        // Paused from 10 s to 20 s of a 30 s run: 20 s of frames at 30 frames/s (an ETP
        // connection stays up through the pause on its keep-alives).
        let (flow, etp) = run_video(
            "10Mbps",
            100,
            30,
            &format!("{transport}, pause = \"10s\", resume = \"20s\""),
        );
        assert_eq!(flow.frames, Some(600), "{transport}");
        assert!(
            flow.frames_on_time.unwrap() >= 590,
            "{transport}: {:?}",
            flow.frames_on_time
        );
        assert!(etp.iter().all(|stats| stats.connections == 1), "{etp:?}");
    }
}

#[test]
fn a_failed_connection_is_opened_again() {
    // Every packet is lost for the first 8 s (a 100 % loss period): the five INITs, one a
    // second, go unanswered and the connection fails after 5 s; the application connects again
    // and the frames flow once the path works.
    let text = "name = \"outage\"\nduration = \"20s\"\n\n[[link]]\nbetween = [\"s\", \"r\"]\n\
                rate = \"10Mbps\"\ndelay = \"20ms\"\nloss = { kind = \"bernoulli\", rate = 1.0, stop = \"8s\" }\n\n\
                [[flow]]\nname = \"video\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\n\
                packet_size = 1200\nmax_rate = \"1.5Mbps\"\nmedia = { fps = 30 }\n";
    let scenario = Scenario::from_str_named(text, "outage.toml").expect("valid scenario");
    let mut simulation = Simulation::new(&scenario, None).expect("builds");
    simulation.run_until(simulation.end()).expect("runs");
    let etp = simulation.etp_flow_stats();
    let flow = simulation.finish().expect("finishes").flows[0].clone();
    assert!(etp[0].connections >= 2, "{etp:?}");
    assert_eq!(etp[0].stalls, 0);
    // After the outage, most of the last 10 s of frames (300) are on time.
    assert!(flow.frames_on_time.unwrap() >= 250, "{flow:?}");
}

#[test]
fn other_flows_have_no_frame_counts() {
    let text = "name = \"plain\"\nduration = \"2s\"\n\n[[link]]\nbetween = [\"s\", \"r\"]\n\
                rate = \"1Mbps\"\ndelay = \"10ms\"\n\n[[flow]]\nname = \"a\"\nkind = \"tfrc\"\n\
                from = \"s\"\nto = \"r\"\n";
    let scenario = Scenario::from_str_named(text, "plain.toml").unwrap();
    let summary = Simulation::run(&scenario, None).unwrap();
    assert_eq!(summary.flows[0].frames, None);
    assert_eq!(summary.flows[0].frames_on_time, None);
}

/// A short-TCP flow (`downloads`): groups of whole transfers separated by idle periods.
fn downloads_alone(downloads: &str, seconds: u32) -> FlowSummary {
    let text = format!(
        "name = \"web\"\nduration = \"{seconds}s\"\nseed = 3\n\n[[link]]\nbetween = [\"s\", \"r\"]\n\
         rate = \"10Mbps\"\ndelay = \"10ms\"\nqueue = {{ kind = \"droptail\", limit = 200 }}\n\n\
         [[flow]]\nname = \"web\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\npacket_size = 1500\n\
         downloads = {{ {downloads} }}\n"
    );
    let scenario = Scenario::from_str_named(&text, "web.toml").expect("valid scenario");
    Simulation::run(&scenario, None).expect("runs").flows[0].clone()
}

#[test]
fn short_tcp_transfers_deliver_whole_files_in_groups() {
    // One group of 30 transfers of exactly 30 000 bytes (21 segments of 1460 bytes), then a
    // 100 s mean idle time: in 20 s the group (and almost surely nothing else) completes.
    let flow = downloads_alone(
        "connections = 30, min_size = 30000, max_size = 30000, idle = \"100s\"",
        20,
    );
    let per_transfer = 21 * 1460;
    assert_eq!(
        flow.goodput_bytes % per_transfer,
        0,
        "{}",
        flow.goodput_bytes
    );
    assert!(
        flow.goodput_bytes >= 30 * per_transfer,
        "{}",
        flow.goodput_bytes
    );
    // Starting "off", the source first waits an idle time: with a 1000 s mean and seed 3 it
    // sends nothing in 20 s (the draw is below 20 s with probability 2 %).
    let off = downloads_alone("idle = \"1000s\", first = \"off\"", 20);
    assert_eq!(off.sent_packets, 0);
    // With the RFC 8868 defaults (30 transfers of 30-50 kB, 10 s mean idle) groups repeat.
    let default = downloads_alone("", 120);
    assert!(
        default.goodput_bytes > 2 * 30 * 30_000,
        "{}",
        default.goodput_bytes
    );
}
