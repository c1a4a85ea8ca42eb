//! ETP parser and connection on arbitrary datagrams: parsing must never panic, a parsed packet
//! must re-emit to the same bytes' meaning, and a connection fed the bytes must stay sane.
#![no_main]

use etp::descriptor::{Descriptor, RateControlKind};
use etp::wire::{Frames, Repr};
use etp::Connection;
use libfuzzer_sys::fuzz_target;
use tfrc_proto::Instant;

fuzz_target!(|data: &[u8]| {
    if let Ok(repr) = Repr::parse(data) {
        let mut buffer = vec![0u8; repr.buffer_len()];
        let length = repr.emit(&mut buffer).expect("a parsed packet re-emits");
        let again = Repr::parse(&buffer[..length]).expect("re-emitted bytes parse");
        assert_eq!(again, repr);
        if let Repr::Data { tfrc, .. } = repr {
            let _ = Frames::new(&tfrc[tfrc_proto::wire::DATA_HEADER_LEN.min(tfrc.len())..]).count();
        }
    }
    let _ = Frames::new(data).count();
    // A connection given the datagram (with the fuzzer's connection id) never panics.
    let id = if data.len() >= 8 { u32::from_be_bytes([data[4], data[5], data[6], data[7]]) } else { 0 };
    let mut connection =
        Connection::connect(Instant::ZERO, Descriptor::single_stream(RateControlKind::Tfrc), id, 1)
            .expect("valid descriptor");
    let mut out = [0u8; 2048];
    while connection.poll_transmit(Instant::ZERO, &mut out).is_some() {}
    connection.handle_datagram(Instant::from_millis(10), data);
    connection.handle_timeout(Instant::from_millis(20));
    while connection.poll_transmit(Instant::from_millis(20), &mut out).is_some() {}
});
