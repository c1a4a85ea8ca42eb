//! Data packet parser: any bytes give a packet or an error, never a panic; a parsed packet
//! re-emits to the same header bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use tfrc_proto::wire::{DataRepr, Packet, DATA_HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(packet) = Packet::new_checked(data) {
        if let Ok(repr) = DataRepr::parse(&packet) {
            let mut buffer = [0u8; DATA_HEADER_LEN];
            repr.emit(&mut buffer).unwrap();
            assert_eq!(&buffer[..4], &[1, 1, 0, 0]);
            assert_eq!(&buffer[4..], &data[4..DATA_HEADER_LEN]);
            let _ = packet.payload();
        }
    }
});
