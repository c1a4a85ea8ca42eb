//! A TFRC flow's sender side: one turn of its sender, as the download and ETP flows have theirs
//! in their own modules ([`super::downloads`], [`super::etp_media`]).

use tfrc_proto::wire::DATA_HEADER_LEN;
use tfrc_proto::Instant;

use super::{Body, MediaFlow};

/// One turn of an active TFRC flow's sender at `now`: its timers, the media codec's capture
/// of the frames due (a media flow), then every packet the sender may send now, handed to
/// `send` with its wire length; stops early, data-limited (RFC 5348 §4.3), when the
/// application or the media source has nothing to send. Returns when it next wants to run:
/// its own timer, or the application's next data or the next frame, whichever is first.
pub(super) fn poll(
    sender: &mut tfrc_proto::Sender,
    now: Instant,
    (application, media): (
        &mut Option<tfrc_proto::CappedApplication>,
        &mut Option<Box<MediaFlow>>,
    ),
    (media_payload, data_buffer): (&[u8], &mut Vec<u8>),
    send: &mut impl FnMut(u32, Body),
) -> Option<Instant> {
    sender.handle_timeout(now);
    if let Some(media) = media.as_deref_mut() {
        // The codec encodes each frame due at the rate the sender can send
        // now: a full payload per t_ipi (X, G = max(g, X) under gTFRC, at most
        // one packet per 10 ms under TFRC-SP), less RFC 8698's nudge for the
        // bytes still waiting.
        let sendable =
            sender.max_payload() as f64 / sender.inter_packet_interval().as_secs_f64().max(1e-9);
        let backlog = media.source.queued_bytes();
        media.source.capture(now, sendable, backlog);
        media.frames.captured(media.source.take_captured());
    }
    while sender.can_send(now) {
        let mut chunk = None;
        let mut header = [0u8; DATA_HEADER_LEN];
        let sent = if let Some(media) = media.as_deref_mut() {
            let Some(piece) = media.source.pop(now) else {
                // No frame data waiting: data-limited (RFC 5348 §4.3) until
                // the next frame.
                sender.note_data_limited(now);
                break;
            };
            chunk = Some(piece);
            let payload = &media_payload[..piece.length as usize];
            let sent = sender.send_packet(now, payload, data_buffer);
            header.copy_from_slice(&data_buffer[..DATA_HEADER_LEN]);
            sent
        } else if application.is_some_and(|app| !app.has_data(now)) {
            // The core could send, the application has no data: data-limited
            // (RFC 5348 §4.3) until the application's next packet.
            sender.note_data_limited(now);
            break;
        } else {
            // Packets carry their header only (`Body::TfrcData`): no padding to write.
            sender.send_padded_header(now, &mut header)
        };
        let Ok(length) = sent else {
            break;
        };
        if let Some(app) = application.as_mut() {
            app.consume(now, core::time::Duration::ZERO);
        }
        send(length as u32, Body::TfrcData(header, chunk));
    }
    let data_due = application
        .filter(|app| !app.has_data(now))
        .map(|app| app.next_data())
        .or_else(|| media.as_ref().map(|media| media.source.next_frame()));
    [sender.poll_timeout(), data_due]
        .into_iter()
        .flatten()
        .min()
}
