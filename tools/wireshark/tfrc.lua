-- Wireshark dissector for the TFRC packets of this toolkit (crates/tfrc-proto/src/wire.rs) and
-- the UDP driver's control datagrams (crates/tfrc-udp/src/control.rs).
--
-- Use:  wireshark -X lua_script:tools/wireshark/tfrc.lua capture.pcap
--       tshark -r capture.pcap -X lua_script:tools/wireshark/tfrc.lua -V
-- or copy it to ~/.local/lib/wireshark/plugins/. It decodes UDP port 5201 (`tfrc send`'s
-- default and the port of `tfrc sim --pcap` captures); use "Decode As… TFRC" for others.
--
-- Layout (big-endian): common header 0 version (1), 1 kind, 2..4 flags, 4..8 session id.
-- Data (kind 1, 32-byte header): 8 sequence, 12 send timestamp (ns), 20 sender RTT (µs),
-- 24 Veno backlog (1/1000 packet), 28 nonce (session token, packet mark).
-- Feedback (kind 2, 40 bytes): 8 echoed sequence, 12 echoed timestamp (ns), 20 t_delay (µs),
-- 24 X_recv (bytes/s, 64 bits), 32 p (fraction of 2^32), 36 session token and receipt-proof sum;
-- the flags carry the proof's run (bits 13..16 offset, bits 0..13 length).
-- Control: 0x10 END, 0x11 END-ACK, 0x12 HELLO, 0x13 COOKIE.

local tfrc = Proto("tfrc", "TCP-Friendly Rate Control (RFC 5348, tfrc toolkit)")

local kinds = {
    [1] = "data", [2] = "feedback",
    [0x10] = "end of session", [0x11] = "end acknowledgement",
    [0x12] = "hello", [0x13] = "cookie",
}

local f = tfrc.fields
f.version = ProtoField.uint8("tfrc.version", "Version")
f.kind = ProtoField.uint8("tfrc.kind", "Kind", base.HEX, kinds)
f.flags = ProtoField.uint16("tfrc.flags", "Flags", base.HEX)
f.session = ProtoField.uint32("tfrc.session", "Session id", base.HEX)
f.seq = ProtoField.uint32("tfrc.seq", "Sequence number")
f.timestamp = ProtoField.uint64("tfrc.timestamp", "Send timestamp (ns)")
f.rtt = ProtoField.uint32("tfrc.rtt_us", "Sender's RTT estimate (us)")
f.veno = ProtoField.uint32("tfrc.veno_backlog", "Veno backlog N (1/1000 packet)")
f.token = ProtoField.uint16("tfrc.token", "Session token", base.HEX)
f.mark = ProtoField.uint16("tfrc.mark", "Packet mark", base.HEX)
f.echo_seq = ProtoField.uint32("tfrc.echo_seq", "Echoed sequence number")
f.echo_ts = ProtoField.uint64("tfrc.echo_timestamp", "Echoed timestamp t_recvdata (ns)")
f.elapsed = ProtoField.uint32("tfrc.t_delay_us", "Elapsed time at the receiver t_delay (us)")
f.x_recv = ProtoField.uint64("tfrc.x_recv", "X_recv (bytes/s)")
f.p_raw = ProtoField.uint32("tfrc.p_raw", "Loss event rate p (fraction of 2^32)")
f.p = ProtoField.double("tfrc.p", "Loss event rate p")
f.proof_offset = ProtoField.uint16("tfrc.proof.offset", "Receipt proof: run ends this far below the echo")
f.proof_length = ProtoField.uint16("tfrc.proof.length", "Receipt proof: packets in the run")
f.proof_sum = ProtoField.uint16("tfrc.proof.sum", "Receipt proof: sum of their marks", base.HEX)
f.nonce = ProtoField.uint32("tfrc.nonce", "Nonce", base.HEX)
f.cookie = ProtoField.uint64("tfrc.cookie", "Cookie", base.HEX)
f.count = ProtoField.uint64("tfrc.count", "Count")

function tfrc.dissector(buffer, pinfo, tree)
    local length = buffer:len()
    if length < 8 or buffer(0, 1):uint() ~= 1 then
        return 0
    end
    local kind = buffer(1, 1):uint()
    if kinds[kind] == nil then
        return 0
    end
    pinfo.cols.protocol = "TFRC"
    local subtree = tree:add(tfrc, buffer(), "TFRC " .. kinds[kind])
    subtree:add(f.version, buffer(0, 1))
    subtree:add(f.kind, buffer(1, 1))
    subtree:add(f.flags, buffer(2, 2))
    subtree:add(f.session, buffer(4, 4))
    local session = buffer(4, 4):uint()
    if kind == 1 and length >= 32 then
        local seq = buffer(8, 4):uint()
        subtree:add(f.seq, buffer(8, 4))
        subtree:add(f.timestamp, buffer(12, 8))
        subtree:add(f.rtt, buffer(20, 4))
        subtree:add(f.veno, buffer(24, 4))
        subtree:add(f.token, buffer(28, 2))
        subtree:add(f.mark, buffer(30, 2))
        pinfo.cols.info = string.format("TFRC data session=%08x seq=%u RTT=%u us", session, seq,
            buffer(20, 4):uint())
    elseif kind == 2 and length >= 40 then
        local flags = buffer(2, 2):uint()
        local raw = buffer(32, 4):uint()
        local p = raw / 4294967296.0
        if raw == 0xffffffff then p = 1.0 end
        subtree:add(f.echo_seq, buffer(8, 4))
        subtree:add(f.echo_ts, buffer(12, 8))
        subtree:add(f.elapsed, buffer(20, 4))
        subtree:add(f.x_recv, buffer(24, 8))
        subtree:add(f.p_raw, buffer(32, 4))
        subtree:add(f.p, buffer(32, 4), p)
        subtree:add(f.token, buffer(36, 2))
        subtree:add(f.proof_offset, buffer(2, 2), bit.rshift(flags, 13))
        subtree:add(f.proof_length, buffer(2, 2), bit.band(flags, 0x1fff))
        subtree:add(f.proof_sum, buffer(38, 2))
        pinfo.cols.info = string.format("TFRC feedback session=%08x echo=%u X_recv=%s B/s p=%.6f",
            session, buffer(8, 4):uint(), tostring(buffer(24, 8):uint64()), p)
    elseif kind == 0x13 and length >= 20 then
        subtree:add(f.nonce, buffer(8, 4))
        subtree:add(f.cookie, buffer(12, 8))
        pinfo.cols.info = string.format("TFRC cookie session=%08x", session)
    elseif length >= 12 then
        subtree:add(f.nonce, buffer(8, 4))
        local offset = 12
        while offset + 8 <= length and (kind == 0x10 or kind == 0x11) do
            subtree:add(f.count, buffer(offset, 8))
            offset = offset + 8
        end
        pinfo.cols.info = string.format("TFRC %s session=%08x", kinds[kind], session)
    end
    return length
end

DissectorTable.get("udp.port"):add(5201, tfrc)
