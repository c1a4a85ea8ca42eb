//! `Simulation::capture_to` (`tfrc sim --pcap`): one pcap per flow holding every packet that
//! reached its destination and one per link direction holding what left it, as IPv4 with
//! synthetic UDP/TCP headers; the TFRC headers inside parse with the core's own wire code and
//! agree with the run's counters.

use std::fs::File;

use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;
use tfrc_proto::wire::{DataRepr, FeedbackRepr, Packet, PacketKind};
use tfrc_scenario::Scenario;
use tfrc_sim::simulation::{Simulation, TFRC_PORT};
use tfrc_test_support::{flow, DUMBBELL_1MBPS_50MS};

#[test]
fn each_flow_gets_a_pcap_of_what_reached_its_ends() {
    let text = format!(
        "name = \"capture\"\nduration = \"5s\"\n{DUMBBELL_1MBPS_50MS}{}{}",
        flow("video", "tfrc", &[]),
        flow("bulk", "tcp", &[])
    );
    let scenario = Scenario::from_str_named(&text, "capture.toml").unwrap();
    let directory = tempfile::tempdir().unwrap();
    let mut simulation = Simulation::new(&scenario, None).unwrap();
    simulation.capture_to(directory.path()).unwrap();
    let senders = {
        let end = simulation.end();
        simulation.run_until(end).unwrap();
        simulation.tfrc_sender_stats()
    };
    let summary = simulation.finish().unwrap();

    // TFRC: UDP to and from port 5201, data headers then feedback, in time order.
    let mut reader =
        PcapReader::new(File::open(directory.path().join("video.pcap")).unwrap()).unwrap();
    assert_eq!(reader.header().datalink, DataLink::RAW);
    let (mut data, mut feedback, mut last) = (0u64, 0u64, core::time::Duration::ZERO);
    let mut last_sequence = None;
    while let Some(packet) = reader.next_packet() {
        let packet = packet.unwrap();
        assert!(packet.timestamp >= last, "time order");
        last = packet.timestamp;
        let bytes = &packet.data;
        assert_eq!(bytes[0], 0x45);
        assert_eq!(bytes[9], 17, "UDP");
        let source_port = u16::from_be_bytes([bytes[20], bytes[21]]);
        let destination_port = u16::from_be_bytes([bytes[22], bytes[23]]);
        let tfrc = Packet::new_checked(&bytes[28..]).expect("a TFRC header");
        match tfrc.kind() {
            PacketKind::Data => {
                assert_eq!(destination_port, TFRC_PORT);
                let repr = DataRepr::parse(&tfrc).unwrap();
                assert!(last_sequence < Some(repr.sequence) || last_sequence.is_none());
                last_sequence = Some(repr.sequence);
                // IPv4 + UDP + the scenario's packet_size (the TFRC packet on the wire).
                assert_eq!(packet.orig_len, 28 + 1000);
                data += 1;
            }
            PacketKind::Feedback => {
                assert_eq!(source_port, TFRC_PORT);
                FeedbackRepr::parse(&tfrc).unwrap();
                feedback += 1;
            }
        }
    }
    let video = summary
        .flows
        .iter()
        .find(|flow| flow.name == "video")
        .unwrap();
    let (_, stats) = senders.iter().find(|(name, _)| name == "video").unwrap();
    println!("video: {data} data and {feedback} feedback packets captured; summary {video:?}");
    assert!(data > 100);
    assert_eq!(
        data, video.recv_packets,
        "every data packet that reached the receiver"
    );
    assert_eq!(
        feedback, stats.feedbacks,
        "every feedback that reached the sender"
    );

    // Link directions: what left the access link and what left the bottleneck; the
    // difference is what the bottleneck dropped (TFRC data on UDP port 5201).
    let tfrc_data_in = |name: &str| {
        let mut reader = PcapReader::new(File::open(directory.path().join(name)).unwrap()).unwrap();
        let mut count = 0u64;
        while let Some(packet) = reader.next_packet() {
            let bytes = packet.unwrap().data;
            let to_tfrc = bytes[9] == 17 && u16::from_be_bytes([bytes[22], bytes[23]]) == TFRC_PORT;
            count += u64::from(to_tfrc);
        }
        count
    };
    let access = tfrc_data_in("link-sender-router.pcap");
    let bottleneck = tfrc_data_in("link-router-receiver.pcap");
    println!("TFRC data leaving the access link {access}, the bottleneck {bottleneck}");
    assert!(
        (data..=data + 5).contains(&bottleneck),
        "{bottleneck} vs {data} received"
    );
    assert!(
        access > bottleneck,
        "the bottleneck dropped some: {access} > {bottleneck}"
    );
    assert!(directory.path().join("link-receiver-router.pcap").exists());

    // TCP: segments and ACKs with TCP headers.
    let mut reader =
        PcapReader::new(File::open(directory.path().join("bulk.pcap")).unwrap()).unwrap();
    let (mut segments, mut acks) = (0, 0);
    while let Some(packet) = reader.next_packet() {
        let bytes = packet.unwrap().data;
        assert_eq!(bytes[9], 6, "TCP");
        match bytes[33] {
            0x18 => segments += 1,
            0x10 => acks += 1,
            other => panic!("flags {other:#x}"),
        }
    }
    assert!(
        segments > 100 && acks > 100,
        "{segments} segments, {acks} ACKs"
    );
}
