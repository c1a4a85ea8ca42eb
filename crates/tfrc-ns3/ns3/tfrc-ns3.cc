// tfrc-ns3: runs one scenario of the TFRC toolkit in ns-3.37 (`tfrc ns3`, docs/ns3.md).
//
// One generic program for every scenario: it reads the run description that tfrc-ns3's Rust
// side writes (ns3-run.txt, one record per line, see crates/tfrc-ns3/src/describe.rs) and
// writes cumulative counters (ns3-samples.txt) that the Rust side converts to the toolkit's
// flows.csv, links.csv, state.csv and summary.json:
//
//   F <interval index> <flow> <sent packets> <sent bytes> <recv packets> <recv bytes> <sink bytes>
//   S <sample index> <flow> <cwnd packets> <ssthresh packets | -> <last rtt s | -> <srtt s | ->
//     <rto s | ->
//   L <interval index> <direction> <queue bytes> <queue packets> <arrivals> <departures>
//     <departure bytes> <drops> <loss-model drops>
//   R <flow> <timeouts> <retransmitted packets>
//
// Usage: tfrc-ns3 RUN_DESCRIPTION SAMPLES_OUTPUT

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// Bytes of the IPv4 and TCP headers (no options: timestamps are off) and of IPv4 and UDP.
const uint32_t TCP_IP_HEADER = 40;
const uint32_t UDP_IP_HEADER = 28;
// The point-to-point device's PPP header, in every packet on the wire and in the device queue.
const uint32_t PPP_HEADER = 2;
// First port of the flows' sinks (flow i listens on FIRST_PORT + i).
const uint16_t FIRST_PORT = 10000;

struct DirectionDesc
{
    uint32_t from, to;
    uint64_t rateBps;
    int64_t delayNs;
    std::string queue; // "droptail" or "red"
    uint32_t limit;
    double minTh, maxTh, maxP, weight;
    bool gentle;
    uint32_t meanPacket;
    double lossRate;
    int64_t lossStartNs, lossStopNs; // the loss model acts in [start, stop); stop 0: to the end
};

struct FlowDesc
{
    std::string kind; // "tcp", "cbr" or "onoff"
    uint32_t from, to;
    uint32_t destDirection; // the destination's address is its end of this direction
    int64_t startNs, stopNs;
    uint32_t packetSize;
    std::string congestion; // ns-3 TypeId name of a TCP flow
    uint32_t initialCwnd;
    bool delayedAck;
    uint32_t window; // packets, 0 = unlimited
    bool sack;
    uint64_t rateBps;           // CBR and on/off: the rate while sending
    int64_t onMeanNs, offMeanNs; // on/off: mean on and off times
    double shape;                // on/off: Pareto shape, 0 for exponential
};

struct RouteDesc
{
    uint32_t node;
    uint32_t addressDirection, addressEnd; // the address: this end (0 from, 1 to) of it
    uint32_t outDirection;
};

struct Description
{
    uint64_t seed = 1;
    int64_t durationNs = 0;
    std::vector<int64_t> flowTimes, stateTimes;
    uint32_t nodes = 0;
    std::vector<DirectionDesc> directions;
    std::vector<FlowDesc> flows;
    std::vector<RouteDesc> routes;
};

// ns-3's default RTT estimator (TcpL4Protocol "RttEstimatorType" is ns3::RttMeanDeviation)
// that also keeps the last measurement. ns-3.37 sets TcpSocketState::m_lastRtt, "Last RTT
// sample collected" and the socket's "RTT" trace, to the estimator's smoothed estimate, so the
// raw sample is taken here, where the socket hands it over ("Add a new measurement to the
// estimator", RttEstimator::Measurement).
class SampleKeepingRtt : public RttMeanDeviation
{
  public:
    void Measurement(Time measure) override
    {
        m_last = measure;
        RttMeanDeviation::Measurement(measure);
    }

    Ptr<RttEstimator> Copy() const override
    {
        return CopyObject<SampleKeepingRtt>(this);
    }

    // The last measurement, negative before the first.
    Time m_last{Seconds(-1)};
};

[[noreturn]] void Fail(const std::string& message);

// ---- BBR with the two upstream fixes that ns-3.37 predates ----------------------------------
//
// ns-3.37's TcpBbr loses its bandwidth estimate after a retransmission timeout (one BBR flow at
// 10 Mb/s: pacing rate 12 Mb/s -> 24 kb/s within 50 ms of the timeout). Two later upstream
// commits change exactly that path; the description names "ns3::TfrcTcpBbrUpstreamFixes" to run
// with both (the default of `tfrc ns3`), "ns3::TcpBbr" to run ns-3.37's TcpBbr as packaged
// (`--bbr-as-packaged`). Checked (docs/ns3.md "BBR"): copies of ns-3.37's tcp-bbr.cc and
// tcp-rate-ops.cc with the two upstream lines patched give output byte-identical to these classes,
// and the same copies unpatched output byte-identical to ns-3.37 as packaged.
//
// ns-3 #1026, "Fix delivery rate estimation bug" (ns-3.41, commit 1759450302): in
// TcpRateLinux::SkbDelivered,
//     m_rateSample.m_ackElapsed = Simulator::Now() - m_rateSample.m_priorTime;
// became
//     m_rateSample.m_ackElapsed = Simulator::Now() - skbInfo.m_deliveredTime;
// i.e. the ACK phase is measured from the delivery time recorded when the packet now acknowledged
// was sent, as Linux does ("rs->prior_mstamp = scb->tx.delivered_mstamp;" in
// tcp_rate_skb_delivered, then "ack_us = tcp_stamp_us_delta(tp->tcp_mstamp, rs->prior_mstamp)"
// in tcp_rate_gen). ns-3.37 measured it from the previous sample's prior time.
//
// The fixed line is applied after ns-3.37's own SkbDelivered: that function assigns
// m_priorTime = skbInfo.m_deliveredTime right after the line above and then fires the
// "TcpRateSampleUpdated" trace with its (non-const) sample; the override catches that reference
// and sets m_ackElapsed = now - m_priorTime, the fixed value. Nothing else in ns-3.37 reads the
// sample between the two (only CongControl, i.e. BBR, reads rate samples at all).
class TcpRateLinuxUpstreamFix : public TcpRateLinux
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TfrcTcpRateLinuxUpstreamFix")
                                .SetParent<TcpRateLinux>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpRateLinuxUpstreamFix>();
        return tid;
    }

    void SkbDelivered(TcpTxItem* skb) override
    {
        if (!m_connected)
        {
            m_connected = TraceConnectWithoutContext(
                "TcpRateSampleUpdated",
                MakeCallback(&TcpRateLinuxUpstreamFix::OnSampleUpdated, this));
            if (!m_connected)
            {
                Fail("TcpRateLinux has no TcpRateSampleUpdated trace: not ns-3.37?");
            }
        }
        m_updated = nullptr;
        m_delivering = true;
        TcpRateLinux::SkbDelivered(skb);
        m_delivering = false;
        if (m_updated != nullptr)
        {
            // The sample is TcpRateLinux's own member (not const): the trace hands it out as const.
            auto& sample = const_cast<TcpRateSample&>(*m_updated);
            sample.m_ackElapsed = Simulator::Now() - sample.m_priorTime;
        }
    }

  private:
    void OnSampleUpdated(const TcpRateSample& sample)
    {
        if (m_delivering)
        {
            m_updated = &sample;
        }
    }

    bool m_connected{false};
    bool m_delivering{false};
    const TcpRateSample* m_updated{nullptr};
};

NS_OBJECT_ENSURE_REGISTERED(TcpRateLinuxUpstreamFix);

// ns-3 #735, "BBR fails to discard invalid samples" (commit 90634468bb, first released in
// ns-3.42): in TcpBbr::UpdateBtlBw,
//     if (rs.m_deliveryRate == 0) { return; }
// became
//     if (rs.m_delivered < 0 || rs.m_interval.IsZero()) { return; }
// ns-3.37's estimator leaves m_deliveryRate at its previous value when it invalidates a sample, so
// the packaged check let a stale rate through (and counted a round on it). UpdateBtlBw is the
// only reader of m_deliveryRate in tcp-bbr.cc, so the override hands TcpBbr a copy of the sample
// whose rate says what the fixed check decides: 0 when the sample is invalid. (A valid sample
// whose rate is 0 would pass the fixed check; it is handed over as 1 b/s, the nearest value the
// packaged check passes. ns-3.37's estimator cannot produce one: a valid sample covers at least
// the packet just acknowledged, over less than an hour.)
class TcpBbrUpstreamFixes : public TcpBbr
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TfrcTcpBbrUpstreamFixes")
                                .SetParent<TcpBbr>()
                                .SetGroupName("Internet")
                                .AddConstructor<TcpBbrUpstreamFixes>();
        return tid;
    }

    Ptr<TcpCongestionOps> Fork() override
    {
        return CopyObject<TcpBbrUpstreamFixes>(this);
    }

    void CongControl(Ptr<TcpSocketState> tcb,
                     const TcpRateOps::TcpRateConnection& rc,
                     const TcpRateOps::TcpRateSample& rs) override
    {
        TcpRateOps::TcpRateSample sample = rs;
        if (rs.m_delivered < 0 || rs.m_interval.IsZero())
        {
            sample.m_deliveryRate = DataRate(0);
        }
        else if (sample.m_deliveryRate.GetBitRate() == 0)
        {
            sample.m_deliveryRate = DataRate(1);
        }
        TcpBbr::CongControl(tcb, rc, sample);
    }
};

NS_OBJECT_ENSURE_REGISTERED(TcpBbrUpstreamFixes);

// Gives a socket another rate estimator: TcpSocketBase::m_rateOps is protected and 3.37 has no
// setter (the socket makes a TcpRateLinux in its constructor; only CongControl reads it).
struct RateOpsSlot : TcpSocketBase
{
    static void Replace(TcpSocketBase& socket, Ptr<TcpRateOps> rateOps)
    {
        Ptr<TcpRateOps> TcpSocketBase::*member = &RateOpsSlot::m_rateOps;
        socket.*member = rateOps;
    }
};

// Per-flow counters, cumulative since the start of the run.
struct FlowState
{
    uint64_t sentPackets = 0, sentBytes = 0, recvPackets = 0, recvBytes = 0, sinkBytes = 0;
    uint32_t segment = 0;
    uint32_t cwnd = 0, ssthresh = 0;
    double rto = -1;
    bool hasState = false;
    SequenceNumber32 highestSent{0};
    bool anySent = false;
    uint64_t timeouts = 0, retransmissions = 0;
    // In ns-3's CA_LOSS state (after a retransmission timeout, until the recovery point is
    // acknowledged): a further timeout there does not change the state.
    bool inLoss = false;
    Ptr<Socket> sender;
    // The sender's RTT estimator, installed by StartTcpSender so that its samples and SRTT can
    // be read.
    Ptr<SampleKeepingRtt> rtt;
    bool sending = false;
    // A flow that stops before the end keeps only a short backlog in its socket (see
    // FillSender); a top-up scheduled after a transmission and not yet run.
    bool boundedBacklog = false;
    bool topUpPending = false;
};

// Per-direction counters.
struct DirectionState
{
    Ptr<PointToPointNetDevice> device;
    Ptr<QueueDisc> qdisc;
    uint64_t departures = 0, departureBytes = 0, lossDrops = 0;
};

Description g_desc;
std::vector<FlowState> g_flows;
std::vector<DirectionState> g_dirs;
// Per direction: its two devices (sending end first) and their addresses.
std::vector<NetDeviceContainer> g_dirDevices;
std::vector<Ipv4InterfaceContainer> g_dirInterfaces;
std::ofstream g_out;

[[noreturn]] void
Fail(const std::string& message)
{
    std::cerr << "tfrc-ns3: " << message << std::endl;
    std::exit(2);
}

// A `direction` record (after its tag); false when malformed.
bool
ParseDirection(std::istringstream& fields, const Description& d, DirectionDesc& x)
{
    int gentle = 0;
    bool ok = static_cast<bool>(fields >> x.from >> x.to >> x.rateBps >> x.delayNs >>
                                x.lossRate >> x.lossStartNs >> x.lossStopNs >> x.queue >>
                                x.limit) &&
              x.from < d.nodes && x.to < d.nodes && x.from != x.to && x.rateBps > 0;
    if (ok && x.queue == "red")
    {
        ok = static_cast<bool>(fields >> x.minTh >> x.maxTh >> x.maxP >> x.weight >> gentle >>
                               x.meanPacket) &&
             x.maxP > 0;
    }
    x.gentle = gentle != 0;
    return ok && (x.queue == "droptail" || x.queue == "red");
}

// A `flow` record (after its tag); false when malformed.
bool
ParseFlow(std::istringstream& fields, const Description& d, FlowDesc& f)
{
    int delayed = 0;
    int sack = 0;
    bool ok = static_cast<bool>(fields >> f.kind >> f.from >> f.to >> f.destDirection >>
                                f.startNs >> f.stopNs >> f.packetSize) &&
              f.from < d.nodes && f.to < d.nodes && f.destDirection < d.directions.size() &&
              d.directions[f.destDirection].to == f.to;
    if (ok && f.kind == "tcp")
    {
        ok = static_cast<bool>(fields >> f.congestion >> f.initialCwnd >> delayed >> f.window >>
                               sack) &&
             f.packetSize > TCP_IP_HEADER;
    }
    else if (ok && f.kind == "cbr")
    {
        ok = static_cast<bool>(fields >> f.rateBps) && f.packetSize > UDP_IP_HEADER;
    }
    else if (ok && f.kind == "onoff")
    {
        ok = static_cast<bool>(fields >> f.rateBps >> f.onMeanNs >> f.offMeanNs >> f.shape) &&
             f.packetSize > UDP_IP_HEADER && f.onMeanNs > 0 && f.offMeanNs > 0 &&
             (f.shape == 0 || f.shape > 1);
    }
    else
    {
        ok = false;
    }
    f.delayedAck = delayed != 0;
    f.sack = sack != 0;
    return ok;
}

// One record of the run description into `d`; false when malformed.
bool
ParseRecord(const std::string& tag, std::istringstream& fields, Description& d)
{
    if (tag == "seed")
    {
        return static_cast<bool>(fields >> d.seed);
    }
    if (tag == "duration_ns")
    {
        return static_cast<bool>(fields >> d.durationNs);
    }
    if (tag == "flow_times" || tag == "state_times")
    {
        auto& times = tag == "flow_times" ? d.flowTimes : d.stateTimes;
        int64_t t;
        while (fields >> t)
        {
            times.push_back(t);
        }
        return fields.eof();
    }
    if (tag == "nodes")
    {
        return static_cast<bool>(fields >> d.nodes);
    }
    if (tag == "direction")
    {
        d.directions.emplace_back();
        return ParseDirection(fields, d, d.directions.back());
    }
    if (tag == "flow")
    {
        d.flows.emplace_back();
        return ParseFlow(fields, d, d.flows.back());
    }
    if (tag == "route")
    {
        RouteDesc r;
        bool ok = static_cast<bool>(fields >> r.node >> r.addressDirection >> r.addressEnd >>
                                    r.outDirection) &&
                  r.node < d.nodes && r.addressDirection < d.directions.size() &&
                  r.addressEnd < 2 && r.outDirection < d.directions.size() &&
                  d.directions[r.outDirection].from == r.node;
        d.routes.push_back(r);
        return ok;
    }
    return false;
}

// Reads the run description (see crates/tfrc-ns3/src/describe.rs for the record formats).
Description
ReadDescription(const std::string& path)
{
    std::ifstream in(path);
    if (!in)
    {
        Fail("cannot read " + path);
    }
    Description d;
    std::string line;
    int number = 0;
    while (std::getline(in, line))
    {
        ++number;
        std::istringstream fields(line);
        std::string tag;
        if (!(fields >> tag) || tag[0] == '#')
        {
            continue;
        }
        if (!ParseRecord(tag, fields, d))
        {
            Fail(path + ":" + std::to_string(number) + ": malformed record: " + line);
        }
    }
    return d;
}

// The address of end `end` (0: the sending node, 1: the receiving node) of direction `d`:
// 10.<d / 256>.<d % 256>.<end + 1>.
Ipv4Address
AddressOn(uint32_t d, uint32_t end)
{
    return g_dirInterfaces[d].GetAddress(end);
}

// The queue disc of one direction, installed before the addresses are assigned (else
// Ipv4AddressHelper::Assign installs ns-3's default FqCoDel).
//
// DropTail: our DropTail (docs/network-elements.md) holds "at most `limit − 1` packets wait
// and, with the one being serialized, a link direction holds at most `limit` packets". In
// ns-3 a direction holds the disc's packets, the device queue's one and the one the device
// serializes (PointToPointNetDevice::TransmitStart keeps it outside its queue), so the
// FifoQueueDisc gets limit − 2 ("The max queue size", fifo-queue-disc.cc).
//
// RED: ours drops "an arrival finding `limit` packets waiting", so the disc gets limit − 1
// (with the device queue's one, limit wait); its average queue counts the disc's packets only.
Ptr<QueueDisc>
InstallQueueDisc(const DirectionDesc& x, Ptr<NetDevice> device)
{
    TrafficControlHelper tch;
    if (x.queue == "droptail")
    {
        uint32_t size = x.limit > 3 ? x.limit - 2 : 1;
        tch.SetRootQueueDisc("ns3::FifoQueueDisc",
                             "MaxSize",
                             QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, size)));
    }
    else
    {
        uint32_t size = x.limit > 2 ? x.limit - 1 : 1;
        // RedQueueDisc: "LInterm": "The maximum probability of dropping a packet" is 1/LInterm;
        // "QW": "Queue weight related to the exponential weighted moving average (EWMA)".
        tch.SetRootQueueDisc("ns3::RedQueueDisc",
                             "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, size)),
                             "MinTh", DoubleValue(x.minTh),
                             "MaxTh", DoubleValue(x.maxTh),
                             "LInterm", DoubleValue(1.0 / x.maxP),
                             "QW", DoubleValue(x.weight),
                             "Gentle", BooleanValue(x.gentle),
                             "MeanPktSize", UintegerValue(x.meanPacket),
                             "LinkBandwidth", DataRateValue(DataRate(x.rateBps)),
                             "LinkDelay", TimeValue(NanoSeconds(x.delayNs)));
    }
    return tch.Install(device).Get(0);
}

// The receive error model of direction x's receiving device: Bernoulli loss of the
// direction's rate while it acts.
Ptr<ErrorModel>
LossModel(const DirectionDesc& x)
{
    // "Determine which packets are errored corresponding to an underlying distribution, rate,
    // and unit" (error-model.h).
    auto em = CreateObject<RateErrorModel>();
    em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
    em->SetRate(x.lossRate);
    // "Enable the error model" / "Disable the error model" (ErrorModel): it acts in
    // [start, stop).
    if (x.lossStartNs > 0)
    {
        em->Disable();
        Simulator::Schedule(NanoSeconds(x.lossStartNs), &ErrorModel::Enable, em);
    }
    if (x.lossStopNs > 0)
    {
        Simulator::Schedule(NanoSeconds(x.lossStopNs), &ErrorModel::Disable, em);
    }
    return em;
}

// Builds the link directions: each is a point-to-point channel of its own (ns-3's channel has
// one delay for both ways, so a direction's delay needs its own), from a device at its
// sending node with the direction's rate and queue to a device at its receiving node with its
// loss model. Packets only ever leave through the sending devices (the host routes use
// nothing else), as ns-2's simplex links.
void
BuildDirections(NodeContainer& nodes)
{
    InternetStackHelper internet;
    Ipv4StaticRoutingHelper staticRouting;
    internet.SetRoutingHelper(staticRouting);
    internet.Install(nodes);
    for (uint32_t d = 0; d < g_desc.directions.size(); ++d)
    {
        const DirectionDesc& x = g_desc.directions[d];
        PointToPointHelper p2p;
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(x.delayNs)));
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(x.rateBps)));
        NetDeviceContainer devices = p2p.Install(nodes.Get(x.from), nodes.Get(x.to));
        auto device = DynamicCast<PointToPointNetDevice>(devices.Get(0));
        // One packet in the device queue: the queue disc holds the others (see
        // InstallQueueDisc), and the device wakes it when that packet starts serializing.
        device->GetQueue()->SetMaxSize(QueueSize(QueueSizeUnit::PACKETS, 1));
        if (x.lossRate > 0)
        {
            DynamicCast<PointToPointNetDevice>(devices.Get(1))
                ->SetReceiveErrorModel(LossModel(x));
        }
        g_dirs[d].device = device;
        g_dirs[d].qdisc = InstallQueueDisc(x, device);
        Ipv4AddressHelper addresses;
        std::ostringstream base;
        base << "10." << (d / 256) << "." << (d % 256) << ".0";
        addresses.SetBase(base.str().c_str(), "255.255.255.0");
        g_dirInterfaces.push_back(addresses.Assign(devices));
        g_dirDevices.push_back(devices);
    }
}

// Host routes from the Rust side's one route function (tfrc_scenario::Scenario::route).
void
InstallRoutes(NodeContainer& nodes)
{
    Ipv4StaticRoutingHelper helper;
    for (const RouteDesc& r : g_desc.routes)
    {
        Ptr<Ipv4> ipv4 = nodes.Get(r.node)->GetObject<Ipv4>();
        uint32_t interface = ipv4->GetInterfaceForDevice(g_dirDevices[r.outDirection].Get(0));
        helper.GetStaticRouting(ipv4)->AddHostRouteTo(AddressOn(r.addressDirection, r.addressEnd),
                                                      AddressOn(r.outDirection, 1),
                                                      interface);
    }
}

void
OnPhyTxEnd(uint32_t d, Ptr<const Packet> packet)
{
    g_dirs[d].departures++;
    g_dirs[d].departureBytes += packet->GetSize() - PPP_HEADER;
}

void
OnPhyRxDrop(uint32_t d, Ptr<const Packet>)
{
    g_dirs[d].lossDrops++;
}

void
OnCwnd(uint32_t i, uint32_t, uint32_t value)
{
    g_flows[i].cwnd = value;
    g_flows[i].hasState = true;
}

void
OnSsthresh(uint32_t i, uint32_t, uint32_t value)
{
    g_flows[i].ssthresh = value;
}

// Every retransmission timeout counts, as ns-2's `nrexmit_`, Linux's `tcpi_total_rto` and our
// simulator count them (summary.json's `timeouts`). ns-3.37's `ReTxTimeout` doubles the RTO
// ("Time doubledRto = m_rto + m_rto; m_rto = Min(doubledRto, Time::FromDouble(60, Time::S));")
// and then enters CA_LOSS ("m_congestionControl->CongestionStateSet(m_tcb,
// TcpSocketState::CA_LOSS); m_tcb->m_congState = TcpSocketState::CA_LOSS;"). The first timeout
// of an episode shows as the entry into CA_LOSS; a further one, already in CA_LOSS (a resent
// packet lost again), changes no state but doubles the RTO: it shows as an RTO change to exactly
// Min(2 * old, 60 s) while in CA_LOSS. (A timeout with the RTO already at 60 s changes nothing
// and is not seen; the RTO reaches 60 s only after about 100 s of consecutive timeouts.)
void
OnRto(uint32_t i, Time old, Time value)
{
    g_flows[i].rto = value.GetSeconds();
    if (g_flows[i].inLoss && value == Min(old + old, Seconds(60)))
    {
        g_flows[i].timeouts++;
    }
}

void
OnCongState(uint32_t i,
            TcpSocketState::TcpCongState_t,
            TcpSocketState::TcpCongState_t value)
{
    g_flows[i].inLoss = value == TcpSocketState::CA_LOSS;
    if (value == TcpSocketState::CA_LOSS)
    {
        g_flows[i].timeouts++;
    }
}

void TopUpSender(uint32_t i);

// Data segments the sender puts on the wire (retransmissions included), as packet_size bytes.
void
OnTcpTx(uint32_t i, Ptr<const Packet> packet, const TcpHeader& header, Ptr<const TcpSocketBase>)
{
    uint32_t payload = packet->GetSize();
    if (payload == 0)
    {
        return;
    }
    FlowState& f = g_flows[i];
    f.sentPackets++;
    f.sentBytes += payload + TCP_IP_HEADER;
    SequenceNumber32 end = header.GetSequenceNumber() + payload;
    if (f.anySent && end <= f.highestSent)
    {
        f.retransmissions++;
    }
    if (!f.anySent || end > f.highestSent)
    {
        f.highestSent = end;
        f.anySent = true;
    }
    if (f.boundedBacklog && f.sending && !f.topUpPending)
    {
        // Not from inside the socket's send loop: right after it, at the same time.
        f.topUpPending = true;
        Simulator::ScheduleNow(&TopUpSender, i);
    }
}

// Data segments reaching their destination node (duplicates included): IPv4's LocalDeliver
// trace of every node that terminates a TCP flow, the flow found by its destination port. The
// receiving socket's own Rx trace would miss duplicates: TcpSocketBase::DoForwardUp discards a
// data segment that lies wholly below the next expected byte ("Discard fully out of range data
// packets") before it fires m_rxTrace.
void
OnLocalDeliver(const Ipv4Header& ip, Ptr<const Packet> packet, uint32_t)
{
    if (ip.GetProtocol() != TcpL4Protocol::PROT_NUMBER)
    {
        return;
    }
    TcpHeader header;
    if (packet->PeekHeader(header) == 0)
    {
        return;
    }
    uint32_t port = header.GetDestinationPort();
    if (port < FIRST_PORT || port - FIRST_PORT >= g_flows.size())
    {
        return;
    }
    uint32_t i = port - FIRST_PORT;
    if (g_desc.flows[i].kind != "tcp")
    {
        return;
    }
    uint32_t payload = packet->GetSize() - header.GetSerializedSize();
    if (payload > 0)
    {
        g_flows[i].recvPackets++;
        g_flows[i].recvBytes += payload + TCP_IP_HEADER;
    }
}

// Keeps the sender's buffer full (a bulk transfer) while the flow is active. A flow that stops
// before the end keeps no more than its open window (the congestion window less the bytes in
// flight) and BACKLOG_SEGMENTS segments unsent, topped up after every transmission and every
// ACK: a socket cannot take back data it was given, and Close() sends all of it first, so a
// full buffer would carry on at full rate long after `stop` (64 MiB at 10 Mb/s: 54 s). Never
// running dry, the socket is never judged application-limited (Send() adds the data before
// TcpRateOps::CalculateAppLimited looks at the unsent bytes).
const uint32_t BACKLOG_SEGMENTS = 8;

void
FillSender(uint32_t i, Ptr<Socket> socket, uint32_t)
{
    FlowState& f = g_flows[i];
    if (!f.sending)
    {
        return;
    }
    uint64_t room = socket->GetTxAvailable();
    if (f.boundedBacklog)
    {
        Ptr<TcpTxBuffer> buffer = DynamicCast<TcpSocketBase>(socket)->GetTxBuffer();
        uint64_t inFlight = buffer->BytesInFlight();
        uint64_t open = f.cwnd > inFlight ? f.cwnd - inFlight : 0;
        uint64_t wanted = open + uint64_t(BACKLOG_SEGMENTS) * f.segment;
        uint64_t unsent = f.anySent ? uint64_t(buffer->TailSequence() - f.highestSent)
                                    : uint64_t(buffer->Size());
        room = std::min(room, wanted > unsent ? wanted - unsent : 0);
    }
    while (room > 0)
    {
        uint32_t size = uint32_t(std::min<uint64_t>(room, 1 << 16));
        if (socket->Send(Create<Packet>(size)) < 0)
        {
            break;
        }
        room -= size;
    }
}

void
TopUpSender(uint32_t i)
{
    g_flows[i].topUpPending = false;
    if (g_flows[i].sender)
    {
        FillSender(i, g_flows[i].sender, 0);
    }
}

void
SinkReceive(uint32_t i, Ptr<Socket> socket)
{
    while (Ptr<Packet> packet = socket->Recv())
    {
        g_flows[i].sinkBytes += packet->GetSize();
    }
}

void
SinkAccept(uint32_t i, Ptr<Socket> socket, const Address&)
{
    socket->SetRecvCallback(MakeBoundCallback(&SinkReceive, i));
}

// The sink of TCP flow i: a listening socket on the destination with the flow's ACK policy
// and receive window (accepted sockets are forked from it and keep both).
void
StartTcpSink(uint32_t i, Ptr<Node> node)
{
    const FlowDesc& f = g_desc.flows[i];
    Ptr<Socket> listener = Socket::CreateSocket(node, TcpSocketFactory::GetTypeId());
    // "Number of packets to wait before sending a TCP ack" (TcpSocket::DelAckCount).
    listener->SetAttribute("DelAckCount", UintegerValue(f.delayedAck ? 2 : 1));
    listener->SetAttribute("DelAckTimeout", TimeValue(MilliSeconds(100)));
    uint32_t segment = f.packetSize - TCP_IP_HEADER;
    listener->SetAttribute("SegmentSize", UintegerValue(segment));
    listener->SetAttribute("RcvBufSize", UintegerValue(64u << 20));
    listener->SetAttribute("Sack", BooleanValue(f.sack));
    listener->Bind(InetSocketAddress(Ipv4Address::GetAny(), FIRST_PORT + i));
    listener->Listen();
    listener->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                                MakeBoundCallback(&SinkAccept, i));
}

void
StartTcpSender(uint32_t i, Ptr<Node> node)
{
    const FlowDesc& f = g_desc.flows[i];
    TypeId congestion;
    if (!TypeId::LookupByNameFailSafe(f.congestion, &congestion))
    {
        Fail("unknown congestion control " + f.congestion);
    }
    Ptr<Socket> socket = node->GetObject<TcpL4Protocol>()->CreateSocket(congestion);
    uint32_t segment = f.packetSize - TCP_IP_HEADER;
    socket->SetAttribute("SegmentSize", UintegerValue(segment));
    socket->SetAttribute("InitialCwnd", UintegerValue(f.initialCwnd));
    // The scenario's `window` caps the packets in flight. A send buffer of `window` segments
    // does that at the sender ("TcpSocket maximum transmit buffer size (bytes)": it holds the
    // sent-but-unacknowledged data and what waits to be sent). Capping the receiver's window
    // instead (RcvBufSize) crashes ns-3.37 in TcpRateLinux::SkbSent on some runs.
    uint32_t sndBuf = f.window > 0 ? f.window * segment : (64u << 20);
    socket->SetAttribute("SndBufSize", UintegerValue(sndBuf));
    socket->SetAttribute("RcvBufSize", UintegerValue(64u << 20));
    socket->SetAttribute("Sack", BooleanValue(f.sack));
    if (f.congestion == "ns3::TfrcTcpBbrUpstreamFixes")
    {
        // Before the connection: the estimator has seen no packet yet.
        RateOpsSlot::Replace(*DynamicCast<TcpSocketBase>(socket),
                             CreateObject<TcpRateLinuxUpstreamFix>());
    }
    if (f.congestion == "ns3::TcpBbr" || f.congestion == "ns3::TfrcTcpBbrUpstreamFixes")
    {
        // BBR paces (our model too): pacing on, explicitly. (With Debian's ns-3.37 a BBR run
        // is byte-identical without this line: TcpBbr turns pacing on by itself; kept so that
        // the program does not depend on that.)
        DynamicCast<TcpSocketBase>(socket)->SetPacingStatus(true);
    }
    // The estimator TcpL4Protocol would give the socket, keeping its last sample: rtt_s is that
    // sample, srtt_s its smoothed estimate ("gets the RTT estimate", GetEstimate).
    Ptr<SampleKeepingRtt> rtt = CreateObject<SampleKeepingRtt>();
    DynamicCast<TcpSocketBase>(socket)->SetRtt(rtt);
    g_flows[i].rtt = rtt;
    g_flows[i].segment = segment;
    g_flows[i].sender = socket;
    g_flows[i].sending = true;
    g_flows[i].boundedBacklog = f.stopNs < g_desc.durationNs;
    socket->TraceConnectWithoutContext("CongestionWindow", MakeBoundCallback(&OnCwnd, i));
    socket->TraceConnectWithoutContext("SlowStartThreshold", MakeBoundCallback(&OnSsthresh, i));
    socket->TraceConnectWithoutContext("RTO", MakeBoundCallback(&OnRto, i));
    socket->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, i));
    socket->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnTcpTx, i));
    socket->Bind();
    socket->Connect(InetSocketAddress(AddressOn(f.destDirection, 1), FIRST_PORT + i));
    socket->SetSendCallback(MakeBoundCallback(&FillSender, i));
    FillSender(i, socket, 0);
}

void
StopTcpSender(uint32_t i)
{
    g_flows[i].sending = false;
    if (g_flows[i].sender)
    {
        g_flows[i].sender->Close();
    }
}

void
OnUdpTx(uint32_t i, Ptr<const Packet> packet)
{
    g_flows[i].sentPackets++;
    g_flows[i].sentBytes += packet->GetSize() + UDP_IP_HEADER;
}

void
OnUdpRx(uint32_t i, Ptr<const Packet> packet, const Address&)
{
    g_flows[i].recvPackets++;
    g_flows[i].recvBytes += packet->GetSize() + UDP_IP_HEADER;
    g_flows[i].sinkBytes += packet->GetSize() + UDP_IP_HEADER;
}

// The on and off time variable of an on/off flow with mean `meanNs`: exponential, or Pareto
// with the flow's shape ("Scale" is x_m; the mean is shape × x_m / (shape − 1)).
std::string
OnOffVariable(const FlowDesc& f, int64_t meanNs)
{
    std::ostringstream text;
    double mean = static_cast<double>(meanNs) / 1e9;
    if (f.shape == 0)
    {
        text << "ns3::ExponentialRandomVariable[Mean=" << mean << "]";
    }
    else
    {
        text << "ns3::ParetoRandomVariable[Scale=" << mean * (f.shape - 1) / f.shape
             << "|Shape=" << f.shape << "]";
    }
    return text.str();
}

// A UDP source (OnOffApplication: always on for CBR, random on and off times for on/off
// flows) and a PacketSink.
void
InstallUdp(uint32_t i, NodeContainer& nodes)
{
    const FlowDesc& f = g_desc.flows[i];
    InetSocketAddress destination(AddressOn(f.destDirection, 1), FIRST_PORT + i);
    OnOffHelper source("ns3::UdpSocketFactory", destination);
    // OnOffApplication paces its payload at DataRate; our rate counts whole packets, so the
    // payload rate is rate × payload / packet_size (packet_size / rate between packets).
    uint32_t payload = f.packetSize - UDP_IP_HEADER;
    uint64_t payloadRate = f.rateBps * payload / f.packetSize;
    source.SetConstantRate(DataRate(payloadRate), payload);
    if (f.kind == "onoff")
    {
        source.SetAttribute("OnTime", StringValue(OnOffVariable(f, f.onMeanNs)));
        source.SetAttribute("OffTime", StringValue(OnOffVariable(f, f.offMeanNs)));
    }
    ApplicationContainer app = source.Install(nodes.Get(f.from));
    app.Start(NanoSeconds(f.startNs));
    app.Stop(NanoSeconds(f.stopNs));
    app.Get(0)->TraceConnectWithoutContext("Tx", MakeBoundCallback(&OnUdpTx, i));
    PacketSinkHelper sink("ns3::UdpSocketFactory",
                          InetSocketAddress(Ipv4Address::GetAny(), FIRST_PORT + i));
    ApplicationContainer sinkApp = sink.Install(nodes.Get(f.to));
    sinkApp.Start(Seconds(0));
    sinkApp.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnUdpRx, i));
}

void
InstallFlows(NodeContainer& nodes)
{
    std::vector<bool> counting(nodes.GetN(), false);
    for (uint32_t i = 0; i < g_desc.flows.size(); ++i)
    {
        const FlowDesc& f = g_desc.flows[i];
        if (f.kind != "tcp")
        {
            InstallUdp(i, nodes);
            continue;
        }
        if (!counting[f.to])
        {
            counting[f.to] = true;
            nodes.Get(f.to)->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext(
                "LocalDeliver",
                MakeCallback(&OnLocalDeliver));
        }
        Simulator::Schedule(Seconds(0), &StartTcpSink, i, nodes.Get(f.to));
        Simulator::Schedule(NanoSeconds(f.startNs), &StartTcpSender, i, nodes.Get(f.from));
        if (f.stopNs < g_desc.durationNs)
        {
            Simulator::Schedule(NanoSeconds(f.stopNs), &StopTcpSender, i);
        }
    }
}

// Packets and bytes waiting in direction d (queue disc and device queue; the device queue's
// packets carry the PPP header, which the schema's byte counts leave out).
void
QueueLength(uint32_t d, uint64_t& packets, uint64_t& bytes)
{
    Ptr<Queue<Packet>> queue = g_dirs[d].device->GetQueue();
    packets = queue->GetNPackets() + g_dirs[d].qdisc->GetNPackets();
    bytes = queue->GetNBytes() - PPP_HEADER * queue->GetNPackets() + g_dirs[d].qdisc->GetNBytes();
}

void
SampleFlows(uint32_t k)
{
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        const FlowState& f = g_flows[i];
        g_out << "F " << k << ' ' << i << ' ' << f.sentPackets << ' ' << f.sentBytes << ' '
              << f.recvPackets << ' ' << f.recvBytes << ' ' << f.sinkBytes << '\n';
    }
    for (uint32_t d = 0; d < g_dirs.size(); ++d)
    {
        DirectionState& x = g_dirs[d];
        uint64_t packets = 0;
        uint64_t bytes = 0;
        QueueLength(d, packets, bytes);
        // Every packet goes through the disc (the device queue, under flow control, never
        // drops): its "Total received packets" are the arrivals, its drops the queue's.
        const QueueDisc::Stats& stats = x.qdisc->GetStats();
        uint64_t arrivals = stats.nTotalReceivedPackets;
        uint64_t drops = stats.nTotalDroppedPackets;
        g_out << "L " << k << ' ' << d << ' ' << bytes << ' ' << packets << ' ' << arrivals << ' '
              << x.departures << ' ' << x.departureBytes << ' ' << drops + x.lossDrops << ' '
              << x.lossDrops << '\n';
    }
}

// Seconds with nanosecond digits, "-" for a negative value (none yet).
std::string
SecondsText(double seconds)
{
    if (seconds < 0)
    {
        return "-";
    }
    char text[32];
    std::snprintf(text, sizeof text, "%.9f", seconds);
    return text;
}

void
SampleState(uint32_t k)
{
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        const FlowState& f = g_flows[i];
        if (g_desc.flows[i].kind != "tcp" || !f.hasState || f.segment == 0)
        {
            continue;
        }
        g_out << "S " << k << ' ' << i << ' ' << static_cast<double>(f.cwnd) / f.segment << ' ';
        // ns-3 starts ssthresh at "TCP initial slow start threshold" = UINT32_MAX (no value yet).
        if (f.ssthresh == 0 || f.ssthresh >= 0x7fffffffu)
        {
            g_out << "- ";
        }
        else
        {
            g_out << static_cast<double>(f.ssthresh) / f.segment << ' ';
        }
        bool measured = f.rtt && f.rtt->GetNSamples() > 0;
        g_out << SecondsText(measured ? f.rtt->m_last.GetSeconds() : -1) << ' '
              << SecondsText(measured ? f.rtt->GetEstimate().GetSeconds() : -1) << ' '
              << SecondsText(f.rto) << '\n';
    }
}

void
ScheduleSamples()
{
    for (uint32_t k = 0; k < g_desc.flowTimes.size(); ++k)
    {
        Simulator::Schedule(NanoSeconds(g_desc.flowTimes[k]), &SampleFlows, k);
    }
    for (uint32_t k = 0; k < g_desc.stateTimes.size(); ++k)
    {
        Simulator::Schedule(NanoSeconds(g_desc.stateTimes[k]), &SampleState, k);
    }
}

// TCP defaults shared by every flow (the per-flow ones are set on each socket).
void
ConfigureTcp()
{
    // "Minimum retransmit timeout value" (TcpSocketBase::MinRto): Linux's and our 200 ms.
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(200)));
    // "TCP retransmission timeout when opening connection (seconds)": RFC 6298's 1 s.
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
    // RFC 6298's initial RTO of 1 s before the first sample.
    Config::SetDefault("ns3::RttEstimator::InitialEstimation", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    // No timestamps: a data segment's header is then 40 bytes, the 40 our packet_size counts.
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(64u << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(64u << 20));
}

} // namespace

int
main(int argc, char* argv[])
{
    if (argc != 3)
    {
        std::cerr << "usage: tfrc-ns3 RUN_DESCRIPTION SAMPLES_OUTPUT" << std::endl;
        return 2;
    }
    g_desc = ReadDescription(argv[1]);
    g_out.open(argv[2]);
    if (!g_out)
    {
        Fail(std::string("cannot write ") + argv[2]);
    }
    // "SetRun: the run number ... selects an independent substream" (rng-seed-manager.h).
    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(g_desc.seed);
    ConfigureTcp();
    NodeContainer nodes;
    nodes.Create(g_desc.nodes);
    g_dirs.resize(g_desc.directions.size());
    g_flows.resize(g_desc.flows.size());
    BuildDirections(nodes);
    InstallRoutes(nodes);
    for (uint32_t d = 0; d < g_dirs.size(); ++d)
    {
        g_dirs[d].device->TraceConnectWithoutContext("PhyTxEnd", MakeBoundCallback(&OnPhyTxEnd, d));
        g_dirDevices[d].Get(1)->TraceConnectWithoutContext("PhyRxDrop", MakeBoundCallback(&OnPhyRxDrop, d));
    }
    InstallFlows(nodes);
    ScheduleSamples();
    Simulator::Stop(NanoSeconds(g_desc.durationNs + 1));
    Simulator::Run();
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        if (g_desc.flows[i].kind == "tcp")
        {
            g_out << "R " << i << ' ' << g_flows[i].timeouts << ' ' << g_flows[i].retransmissions
                  << '\n';
        }
    }
    g_out.close();
    Simulator::Destroy();
    return g_out ? 0 : 1;
}
