-- Wireshark dissector for the TFRC packets of this toolkit (crates/tfrc-proto/src/wire.rs),
-- the UDP driver's control datagrams (crates/tfrc-udp/src/control.rs) and ETP, the
-- compositional transport that carries TFRC packets inside its own (crates/etp/src/wire.rs).
--
-- Use:  wireshark -X lua_script:tools/wireshark/tfrc.lua capture.pcap
--       tshark -r capture.pcap -X lua_script:tools/wireshark/tfrc.lua -V
-- or copy it to ~/.local/lib/wireshark/plugins/. It decodes UDP port 5201 (`tfrc send`'s
-- default and the port of `tfrc sim --pcap` captures) and, on any UDP port, datagrams whose
-- first bytes are a TFRC or ETP header (a heuristic: version 1 or 0xE1 and a known kind).
--
-- Layout (big-endian): common header 0 version (1), 1 kind, 2..4 flags, 4..8 session id.
-- Data (kind 1, 32-byte header): 8 sequence, 12 send timestamp (ns), 20 sender RTT (µs),
-- 24 Veno backlog (1/1000 packet), 28 nonce (session token, packet mark).
-- Feedback (kind 3, wire format 2: 52 + 12·n bytes): 8 echoed sequence, 12 echoed timestamp (ns),
-- 20 t_delay (µs), 24 X_recv (bytes/s, 64 bits), 32 p (fraction of 2^32), 36 session token and
-- receipt-proof sum; the flags carry the proof's run (bits 13..16 offset, bits 0..13 length);
-- 40 n loss intervals, 44 the open interval's first sequence number, 48 its unproven tail, then
-- n entries of 12 bytes, open first: 0 lossy part, 4 data part (packets), 8 sum of the data
-- part's marks, 10 flags (bit 0 Veno-stretched, bit 1 synthetic). Kind 2 is wire format 1's
-- 40-byte feedback, refused by senders of format 2.
-- Control: 0x10 END, 0x11 END-ACK, 0x12 HELLO, 0x13 COOKIE, 0x14 REVERSE (`tfrc send -R`: 4 request
-- id, 8 segment size, 12 duration ns, 20 rate cap and 28 target rate in bytes/s, 0 = none).

local tfrc = Proto("tfrc", "TCP-Friendly Rate Control (RFC 5348, tfrc toolkit)")

local kinds = {
    [1] = "data", [2] = "feedback (wire format 1, refused)", [3] = "feedback",
    [0x10] = "end of session", [0x11] = "end acknowledgement",
    [0x12] = "hello", [0x13] = "cookie", [0x14] = "reverse request",
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
f.intervals = ProtoField.uint8("tfrc.intervals", "Loss intervals")
f.open_start = ProtoField.uint32("tfrc.open_start", "Open interval: first sequence number")
f.open_tail = ProtoField.uint32("tfrc.open_tail", "Open interval: unproven tail (packets)")
f.lossy = ProtoField.uint32("tfrc.interval.lossy", "Lossy part (packets)")
f.data = ProtoField.uint32("tfrc.interval.data", "Data part (packets, proven)")
f.data_sum = ProtoField.uint16("tfrc.interval.sum", "Sum of the data part's marks", base.HEX)
f.interval_flags = ProtoField.uint8("tfrc.interval.flags", "Flags (1 Veno-stretched, 2 synthetic)", base.HEX)
f.nonce = ProtoField.uint32("tfrc.nonce", "Nonce", base.HEX)
f.cookie = ProtoField.uint64("tfrc.cookie", "Cookie", base.HEX)
f.count = ProtoField.uint64("tfrc.count", "Count")
f.request_size = ProtoField.uint32("tfrc.reverse.packet_size", "Requested segment size (bytes)")
f.request_duration = ProtoField.uint64("tfrc.reverse.duration_ns", "Requested duration (ns)")
f.request_cap = ProtoField.uint64("tfrc.reverse.max_rate", "Requested rate cap (bytes/s, 0 = none)")
f.request_target = ProtoField.uint64("tfrc.reverse.target_rate", "Requested target rate (bytes/s, 0 = none)")

-- Whether `buffer` starts with a TFRC header this dissector knows.
local function is_tfrc(buffer)
    return buffer:len() >= 8 and buffer(0, 1):uint() == 1 and kinds[buffer(1, 1):uint()] ~= nil
end

function tfrc.dissector(buffer, pinfo, tree)
    local length = buffer:len()
    if not is_tfrc(buffer) then
        return 0
    end
    local kind = buffer(1, 1):uint()
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
    elseif kind == 3 and length >= 52 then
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
        local count = buffer(40, 1):uint()
        subtree:add(f.intervals, buffer(40, 1))
        subtree:add(f.open_start, buffer(44, 4))
        subtree:add(f.open_tail, buffer(48, 4))
        for i = 0, count - 1 do
            local at = 52 + 12 * i
            if at + 12 > length then break end
            local name = "Loss interval I_" .. i
            if i == 0 then name = name .. " (open)" end
            local item = subtree:add(tfrc, buffer(at, 12), name)
            item:add(f.lossy, buffer(at, 4))
            item:add(f.data, buffer(at + 4, 4))
            item:add(f.data_sum, buffer(at + 8, 2))
            item:add(f.interval_flags, buffer(at + 10, 1))
        end
        pinfo.cols.info = string.format("TFRC feedback session=%08x echo=%u X_recv=%s B/s p=%.6f",
            session, buffer(8, 4):uint(), tostring(buffer(24, 8):uint64()), p)
    elseif kind == 0x14 and length >= 36 then
        subtree:add(f.request_size, buffer(8, 4))
        subtree:add(f.request_duration, buffer(12, 8))
        subtree:add(f.request_cap, buffer(20, 8))
        subtree:add(f.request_target, buffer(28, 8))
        pinfo.cols.info = string.format("TFRC reverse request %08x: %u bytes for %s ns", session,
            buffer(8, 4):uint(), tostring(buffer(12, 8):uint64()))
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
-- Decodes `proto` on any UDP port whose datagrams `recognises` (a heuristic dissector).
local function on_any_udp_port(proto, recognises)
    proto:register_heuristic("udp", function(buffer, pinfo, tree)
        if not recognises(buffer) then
            return false
        end
        proto.dissector(buffer, pinfo, tree)
        return true
    end)
end
on_any_udp_port(tfrc, is_tfrc)

-- ETP (crates/etp/src/wire.rs), big-endian. Common header: 0 version 0xE1, 1 type, 2..4 flags,
-- 4..8 connection id. DATA: 8 packet number (u64), 16 rate epoch (u16), 18 sender's minimum
-- RTT (µs, u32), then a whole TFRC data packet (32-byte header) whose payload is frames:
-- 0 PADDING (the rest); 1 FRAGMENT stream u16, domain u16, flags u8 (bit 0 ordered), message
-- u32, message length u32, offset u32, deadline u64 (ns, 0 = none), length u16, bytes;
-- 2 FORWARD domain u16, flags u8, forward u32. ACK: 8 rate epoch u16, 10 ack delay µs u32,
-- 14 has-feedback u8, [TFRC feedback, 52 + 12·n bytes], range count u8, ranges (first u64, last u64).
local etp = Proto("etp", "ETP, compositional transport over TFRC (tfrc toolkit)")

local etp_types = {
    [1] = "INIT", [2] = "INIT_ACK", [3] = "COOKIE_ECHO", [4] = "COOKIE_ACK", [5] = "DATA",
    [6] = "ACK", [7] = "CLOSE", [8] = "CLOSE_ACK", [9] = "ERROR", [10] = "PING",
    [11] = "RECONFIGURE", [12] = "RECONFIGURE_ACK",
}
local frame_types = { [0] = "PADDING", [1] = "FRAGMENT", [2] = "FORWARD" }

local e = etp.fields
e.version = ProtoField.uint8("etp.version", "Version", base.HEX)
e.type = ProtoField.uint8("etp.type", "Type", base.DEC, etp_types)
e.flags = ProtoField.uint16("etp.flags", "Flags", base.HEX)
e.connection = ProtoField.uint32("etp.connection", "Connection id", base.HEX)
e.packet_number = ProtoField.uint64("etp.packet_number", "Packet number")
e.epoch = ProtoField.uint16("etp.epoch", "Rate epoch")
e.min_rtt = ProtoField.uint32("etp.min_rtt_us", "Sender's minimum RTT (us)")
e.frame = ProtoField.uint8("etp.frame", "Frame", base.DEC, frame_types)
e.stream = ProtoField.uint16("etp.stream", "Stream")
e.domain = ProtoField.uint16("etp.domain", "Ordering domain")
e.ordered = ProtoField.bool("etp.ordered", "Ordered")
e.message = ProtoField.uint32("etp.message", "Message number")
e.message_length = ProtoField.uint32("etp.message_length", "Message length")
e.offset = ProtoField.uint32("etp.offset", "Fragment offset")
e.deadline = ProtoField.uint64("etp.deadline_ns", "Deadline (ns on the sender's clock, 0 = none)")
e.fragment_length = ProtoField.uint16("etp.fragment_length", "Fragment length")
e.forward = ProtoField.uint32("etp.forward", "Forward: every message below is done")
e.padding = ProtoField.bytes("etp.padding", "Padding")
e.ack_delay = ProtoField.uint32("etp.ack_delay_us", "ACK delay (us)")
e.has_feedback = ProtoField.bool("etp.has_feedback", "Carries a TFRC feedback")
e.range_count = ProtoField.uint8("etp.range_count", "Acknowledged ranges")
e.range_first = ProtoField.uint64("etp.range_first", "Range first packet")
e.range_last = ProtoField.uint64("etp.range_last", "Range last packet")
e.client_tag = ProtoField.uint32("etp.client_tag", "Client tag", base.HEX)
e.cookie = ProtoField.bytes("etp.cookie", "Cookie")
e.descriptor = ProtoField.string("etp.descriptor", "QoS descriptor (JSON)")
e.code = ProtoField.uint16("etp.code", "Code")
e.reason = ProtoField.string("etp.reason", "Reason")
e.change_id = ProtoField.uint32("etp.change_id", "Change id")
e.accepted = ProtoField.bool("etp.accepted", "Accepted")

-- A u16 length then that many bytes, at `offset`, as field `field`; returns the offset after.
local function length_prefixed(buffer, tree, offset, field)
    if offset + 2 > buffer:len() then
        return buffer:len()
    end
    local length = buffer(offset, 2):uint()
    if offset + 2 + length > buffer:len() then
        return buffer:len()
    end
    if length > 0 then
        tree:add(field, buffer(offset + 2, length))
    end
    return offset + 2 + length
end

-- The frames of a DATA packet's TFRC payload; returns a short summary for the info column.
local function dissect_frames(buffer, tree)
    local offset, length, summary = 0, buffer:len(), {}
    while offset < length do
        local frame = buffer(offset, 1):uint()
        if frame == 0 then
            local item = tree:add(e.frame, buffer(offset, 1))
            item:add(e.padding, buffer(offset, length - offset))
            break
        elseif frame == 1 and offset + 28 <= length then
            local data_length = buffer(offset + 26, 2):uint()
            local whole = math.min(28 + data_length, length - offset)
            local item = tree:add(e.frame, buffer(offset, whole), frame)
            item:add(e.stream, buffer(offset + 1, 2))
            item:add(e.domain, buffer(offset + 3, 2))
            item:add(e.ordered, buffer(offset + 5, 1))
            item:add(e.message, buffer(offset + 6, 4))
            item:add(e.message_length, buffer(offset + 10, 4))
            item:add(e.offset, buffer(offset + 14, 4))
            item:add(e.deadline, buffer(offset + 18, 8))
            item:add(e.fragment_length, buffer(offset + 26, 2))
            table.insert(summary, string.format("msg %u@%u+%u", buffer(offset + 6, 4):uint(),
                buffer(offset + 14, 4):uint(), data_length))
            offset = offset + whole
        elseif frame == 2 and offset + 8 <= length then
            local item = tree:add(e.frame, buffer(offset, 8), frame)
            item:add(e.domain, buffer(offset + 1, 2))
            item:add(e.ordered, buffer(offset + 3, 1))
            item:add(e.forward, buffer(offset + 4, 4))
            table.insert(summary, string.format("forward %u", buffer(offset + 4, 4):uint()))
            offset = offset + 8
        else
            tree:add_expert_info(PI_MALFORMED, PI_ERROR, "truncated or unknown frame")
            break
        end
    end
    return table.concat(summary, ", ")
end

local function is_etp(buffer)
    return buffer:len() >= 8 and buffer(0, 1):uint() == 0xE1
        and etp_types[buffer(1, 1):uint()] ~= nil
end

function etp.dissector(buffer, pinfo, tree)
    if not is_etp(buffer) then
        return 0
    end
    local length = buffer:len()
    local kind = buffer(1, 1):uint()
    local connection = buffer(4, 4):uint()
    pinfo.cols.protocol = "ETP"
    local subtree = tree:add(etp, buffer(), "ETP " .. etp_types[kind])
    subtree:add(e.version, buffer(0, 1))
    subtree:add(e.type, buffer(1, 1))
    subtree:add(e.flags, buffer(2, 2))
    subtree:add(e.connection, buffer(4, 4))
    local info = string.format("ETP %s conn=%08x", etp_types[kind], connection)
    if kind == 5 and length >= 22 + 32 then
        subtree:add(e.packet_number, buffer(8, 8))
        subtree:add(e.epoch, buffer(16, 2))
        subtree:add(e.min_rtt, buffer(18, 4))
        tfrc.dissector(buffer(22):tvb(), pinfo, subtree)
        local frames = dissect_frames(buffer(54):tvb(), subtree)
        info = string.format("%s pn=%s %s", info, tostring(buffer(8, 8):uint64()), frames)
    elseif kind == 6 and length >= 15 then
        subtree:add(e.epoch, buffer(8, 2))
        subtree:add(e.ack_delay, buffer(10, 4))
        subtree:add(e.has_feedback, buffer(14, 1))
        local offset = 15
        if buffer(14, 1):uint() == 1 and length >= offset + 52 then
            local size = 52 + 12 * buffer(offset + 40, 1):uint()
            if length >= offset + size then
                tfrc.dissector(buffer(offset, size):tvb(), pinfo, subtree)
                offset = offset + size
            end
        end
        if offset < length then
            local count = buffer(offset, 1):uint()
            subtree:add(e.range_count, buffer(offset, 1))
            offset = offset + 1
            for _ = 1, count do
                if offset + 16 > length then
                    break
                end
                subtree:add(e.range_first, buffer(offset, 8))
                subtree:add(e.range_last, buffer(offset + 8, 8))
                offset = offset + 16
            end
            info = string.format("%s ranges=%u", info, count)
        end
    elseif (kind == 1 or kind == 2) and length >= 12 then
        subtree:add(e.client_tag, buffer(8, 4))
        if kind == 1 then
            length_prefixed(buffer, subtree, 12, e.descriptor)
        elseif length >= 36 then
            subtree:add(e.cookie, buffer(12, 24))
        end
    elseif kind == 3 and length >= 36 then
        subtree:add(e.cookie, buffer(8, 24))
        subtree:add(e.client_tag, buffer(32, 4))
        length_prefixed(buffer, subtree, 36, e.descriptor)
    elseif (kind == 7 or kind == 9) and length >= 10 then
        subtree:add(e.code, buffer(8, 2))
        length_prefixed(buffer, subtree, 10, e.reason)
    elseif (kind == 11 or kind == 12) and length >= 12 then
        subtree:add(e.change_id, buffer(8, 4))
        if kind == 11 then
            length_prefixed(buffer, subtree, 12, e.descriptor)
        elseif length >= 13 then
            subtree:add(e.accepted, buffer(12, 1))
            length_prefixed(buffer, subtree, 13, e.reason)
        end
    end
    pinfo.cols.protocol = "ETP"
    pinfo.cols.info = info
    return length
end

on_any_udp_port(etp, is_etp)
