proc udp_sent {key i} {
    global fm fmflow
    if {![info exists fmflow($key,$i)]} {
        foreach f [$fm($key) flows] { set fmflow($key,[expr {[$f set flowid_] - 1}]) $f }
        if {![info exists fmflow($key,$i)]} { return "0 0" }
    }
    set f $fmflow($key,$i)
    return "[$f set parrivals_] [$f set barrivals_]"
}
proc average_queue {d} {
    global redq
    if {[info exists redq($d)]} { return [$redq($d) set ave_] }
    return "-"
}
proc sample_flows {k} {
    global ns src snk qm tfrc_flows tcp_flows udp_flows directions flow_times samples_out
    foreach i $tfrc_flows {
        puts $samples_out "F $k $i [$src($i) set ndatapack_] [$src($i) set ndatabytes_] - [$snk($i) set bytes_]"
    }
    foreach i $tcp_flows {
        set p [$src($i) set ndatapack_]
        puts $samples_out "F $k $i $p [expr {[$src($i) set ndatabytes_] + 40 * $p}] - [$snk($i) set bytes_]"
    }
    foreach {i key} $udp_flows {
        puts $samples_out "F $k $i [udp_sent $key $i] [$snk($i) set npkts_] [$snk($i) set bytes_]"
    }
    foreach d $directions {
        set m $qm($d)
        puts $samples_out "L $k $d [$m set size_] [$m set pkts_] [$m set parrivals_] [$m set pdepartures_] [$m set bdepartures_] [$m set pdrops_] [average_queue $d]"
    }
    set next [expr {$k + 1}]
    if {$next < [llength $flow_times]} { $ns at [lindex $flow_times $next] "sample_flows $next" }
}
proc sample_state {k} {
    global ns src tfrc_flows tcp_flows state_times samples_out
    foreach i $tfrc_flows {
        puts $samples_out "S $k $i [$src($i) set rate_]"
    }
    foreach i $tcp_flows {
        set a $src($i)
        set tick [$a set tcpTick_]
        set rtt [$a set rtt_]
        set srtt [$a set srtt_]
        if {$srtt > 0} { set srtt_s [expr {$srtt / 8.0 * $tick}] } else { set srtt_s "-" }
        if {$rtt > 0} {
            set rtt_s [expr {$rtt * $tick}]
            # TcpAgent::rtt_timeout with rfc2988_: t_rtxcur_ clamped to minrto_, times the backoff
            set rtxcur [expr {((([$a set rttvar_] << 3) + $srtt) >> 3) * $tick}]
            set minrto [$a set minrto_]
            if {$rtxcur < $minrto} { set rtxcur $minrto }
            set rto [expr {$rtxcur * [$a set backoff_]}]
            set maxrto [$a set maxrto_]
            if {$rto > $maxrto} { set rto $maxrto }
        } else { set rtt_s "-"; set rto "-" }
        puts $samples_out "S $k $i [$a set cwnd_] [$a set ssthresh_] $rtt_s $srtt_s $rto"
    }
    set next [expr {$k + 1}]
    if {$next < [llength $state_times]} { $ns at [lindex $state_times $next] "sample_state $next" }
}
proc finish {} {
    global src tcp_flows samples_out
    # TcpAgent: nrexmit_ counts retransmission timeouts, nrexmitpack_ retransmitted packets.
    foreach i $tcp_flows { puts $samples_out "R $i [$src($i) set nrexmit_] [$src($i) set nrexmitpack_]" }
    close $samples_out
    flush stdout
    exit 0
}
