//! Parsing the scenario format: the shared example, units, defaults, asymmetric links, errors.

use core::time::Duration;
use std::path::{Path, PathBuf};

use tfrc_scenario::{
    Capacity, FlowKind, LossModel, LossSpec, MarkerKind, MediaTransport, OnOffSpec, QueueSpec,
    Rate, RedSpec, RioSpec, Scenario, ScenarioError, TcpProfile, TcpSpec, TcpVariant, TfrcProfile,
    TfrcSpec, TfrcVariant, TraceOpportunity, VenoSpec,
};

const EXAMPLE_PATH: &str = "tests/data/example.toml";

fn example() -> Scenario {
    Scenario::from_path(Path::new(EXAMPLE_PATH)).expect("the shared example parses")
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn secs(seconds: u64) -> Duration {
    Duration::from_secs(seconds)
}

/// A minimal valid scenario plus `extra` TOML.
fn minimal(extra: &str) -> String {
    format!(
        r#"name = "t"
duration = "10s"

[[link]]
between = ["s", "r"]
rate = "1Mbps"
delay = "10ms"
{extra}"#
    )
}

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_str_named(text, "test.toml")
}

/// Parses, expecting an error; returns its text.
fn error_of(text: &str) -> String {
    match parse(text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(error) => error.to_string(),
    }
}

/// Asserts that `text` fails with an error naming the file, `key` and containing `expected`.
fn assert_error(text: &str, key: &str, expected: &str) {
    let error = parse(text).expect_err("expected an error");
    let shown = error.to_string();
    assert_eq!(error.file(), "test.toml", "{shown}");
    assert_eq!(error.key(), Some(key), "{shown}");
    assert!(
        shown.starts_with(&format!("test.toml: {key}: ")),
        "message should start with file and key: {shown}"
    );
    assert!(
        shown.contains(expected),
        "{shown}\nshould contain: {expected}"
    );
}

#[test]
fn the_shared_example_parses_to_the_expected_structs() {
    let scenario = example();
    assert_eq!(scenario.name, "example");
    assert_eq!(scenario.duration, secs(180));
    assert_eq!(scenario.seed, 1);
    assert_eq!(scenario.nodes(), ["sender", "router", "receiver"]);

    assert_eq!(scenario.links.len(), 2);
    let access = &scenario.links[0];
    assert_eq!(access.between, ["sender".to_owned(), "router".to_owned()]);
    for direction in [&access.forward, &access.reverse] {
        assert_eq!(direction.capacity, Capacity::Rate(Rate::from_mbps(100)));
        assert_eq!(direction.delay, ms(1));
        assert_eq!(direction.queue, QueueSpec::DropTail { limit: 50 });
        assert_eq!(direction.loss, None);
    }
    let bottleneck = &scenario.links[1];
    let rio = QueueSpec::Rio(RioSpec {
        limit: 50,
        min_in: 20.0,
        max_in: 40.0,
        p_in: 0.02,
        min_out: 10.0,
        max_out: 20.0,
        p_out: 0.1,
        weight: 0.002,
        ecn: false,
    });
    assert_eq!(bottleneck.forward.rate(), Some(Rate::from_mbps(1)));
    assert_eq!(bottleneck.forward.delay, ms(24));
    assert_eq!(bottleneck.forward.queue, rio);
    assert_eq!(
        bottleneck.forward.loss,
        Some(LossSpec {
            model: LossModel::Bernoulli { rate: 0.01 },
            start: secs(30),
            stop: Some(secs(90)),
        })
    );
    // The loss applies to the first → second direction only; everything else to both.
    assert_eq!(bottleneck.reverse.loss, None);
    assert_eq!(bottleneck.reverse.queue, rio);
    assert_eq!(bottleneck.reverse.delay, ms(24));
    assert_eq!(
        scenario
            .link_direction("receiver", "router")
            .unwrap()
            .rate(),
        Some(Rate::from_mbps(1))
    );

    assert_eq!(scenario.markers.len(), 1);
    let marker = &scenario.markers[0];
    assert_eq!(marker.link, ["sender".to_owned(), "router".to_owned()]);
    assert_eq!(marker.kind, MarkerKind::TokenBucket);
    assert_eq!(marker.flows, ["a"]);
    assert_eq!(marker.rate, Rate::from_kbps(800));
    assert_eq!(marker.bucket, 10_000);

    assert_eq!(scenario.flows.len(), 3);
    let a = scenario.flow("a").unwrap();
    assert_eq!((a.from.as_str(), a.to.as_str()), ("sender", "receiver"));
    assert_eq!(
        (a.start, a.stop, a.packet_size, a.count),
        (secs(0), None, 1000, None)
    );
    assert_eq!(a.stop_time(scenario.duration), secs(180));
    assert_eq!(
        a.kind,
        FlowKind::Tfrc(TfrcSpec {
            target_rate: Some(Rate::from_kbps(800)),
            rtt_ref: None,
            feedbacks_per_rtt: None,
            veno: None,
            profile: TfrcProfile::Rfc5348,
            history_discounting: false,
            oscillation_damping: false,
            variant: TfrcVariant::Standard,
            nominal_segment_size: None,
            header_size: None,
            ecn: false,
            max_rate: None,
            media: None,
        })
    );
    let t1 = scenario.flow("t1").unwrap();
    assert_eq!(
        t1.kind,
        FlowKind::Tcp(TcpSpec {
            variant: TcpVariant::Sack,
            delayed_ack: false,
            window: None,
            profile: TcpProfile::Rfc,
            downloads: None,
        })
    );
    assert_eq!((t1.start, t1.packet_size), (secs(0), 1000));
    let u = scenario.flow("u").unwrap();
    assert_eq!(
        u.kind,
        FlowKind::Cbr {
            rate: Rate::from_kbps(500)
        }
    );
    assert_eq!((u.start, u.stop), (secs(30), Some(secs(90))));

    assert_eq!(scenario.output.interval, secs(1));
    assert_eq!(scenario.output.state_sampling_interval(), secs(1));
    assert!(scenario.sweep.is_empty());
    assert_eq!(scenario.file(), EXAMPLE_PATH);
}

#[test]
fn defaults_are_filled_in() {
    let scenario = parse(&minimal(
        r#"
[[flow]]
name = "a"
kind = "tfrc"
from = "s"
to = "r"

[[flow]]
name = "b"
kind = "tcp"
from = "r"
to = "s"

[[flow]]
name = "p"
kind = "pareto"
from = "s"
to = "r"
rate = "500kbps"

[[flow]]
name = "e"
kind = "exp-onoff"
from = "s"
to = "r"
rate = "64kbps"
"#,
    ))
    .unwrap();
    assert_eq!(scenario.seed, 1, "a missing seed defaults to 1");
    assert_eq!(
        scenario.links[0].forward.queue,
        QueueSpec::DropTail { limit: 50 }
    );
    assert_eq!(scenario.output.interval, secs(1));
    assert_eq!(scenario.output.state_interval, None);
    let a = scenario.flow("a").unwrap();
    assert_eq!(
        (a.start, a.stop, a.packet_size),
        (Duration::ZERO, None, 1000)
    );
    assert_eq!(a.kind, FlowKind::Tfrc(TfrcSpec::default()));
    assert_eq!(
        scenario.flow("b").unwrap().kind,
        FlowKind::Tcp(TcpSpec::default())
    );
    assert_eq!(
        scenario.flow("p").unwrap().kind,
        FlowKind::Pareto(OnOffSpec {
            rate: Rate::from_kbps(500),
            burst: ms(500),
            idle: ms(500),
            shape: Some(1.5),
        })
    );
    assert_eq!(
        scenario.flow("e").unwrap().kind,
        FlowKind::ExponentialOnOff(OnOffSpec {
            rate: Rate::from_kbps(64),
            burst: ms(500),
            idle: ms(500),
            shape: None,
        })
    );
    assert!(
        scenario.to_toml_string().contains("seed = 1\n"),
        "the default seed is recorded"
    );
}

#[test]
fn every_kind_specific_key_is_read() {
    let scenario = parse(&minimal(
        r#"queue = { kind = "red", limit = 100, min_th = 10, max_th = 30, max_p = 0.2, weight = 0.001, gentle = false, ecn = true }
loss = { kind = "gilbert-elliott", p_good_to_bad = 0.01, p_bad_to_good = 0.5, loss_bad = 0.8 }
reverse = { loss = { kind = "exponential", mean_gap = "100ms", stop = "5s" } }

[[flow]]
name = "v"
kind = "tfrc"
from = "s"
to = "r"
rtt_ref = "100ms"
veno_beta = 2
profile = "ns2"
history_discounting = true
oscillation_damping = true
ecn = true
max_rate = "2Mbps"
stop = "9s"
packet_size = 1460

[[flow]]
name = "t"
kind = "tcp"
variant = "newreno"
delayed_ack = true
window = 20
profile = "ns2"
from = "s"
to = "r"

[[flow]]
name = "p"
kind = "pareto"
from = "s"
to = "r"
rate = "500kbps"
burst = "100ms"
idle = "100ms"
shape = 1.2
packet_size = 512

[output]
interval = "100ms"
state_interval = "10ms"
"#,
    ))
    .unwrap();
    let link = &scenario.links[0];
    assert_eq!(
        link.forward.queue,
        QueueSpec::Red(RedSpec {
            limit: 100,
            min_th: 10.0,
            max_th: 30.0,
            max_p: 0.2,
            weight: 0.001,
            gentle: false,
            ecn: true,
        })
    );
    let LossModel::GilbertElliott {
        p_good_to_bad,
        p_bad_to_good,
        loss_good,
        loss_bad,
    } = link.forward.loss.as_ref().unwrap().model
    else {
        panic!("expected Gilbert-Elliott")
    };
    assert_eq!(
        (p_good_to_bad, p_bad_to_good, loss_good, loss_bad),
        (0.01, 0.5, 0.0, 0.8)
    );
    let reverse_loss = link.reverse.loss.as_ref().unwrap();
    assert_eq!(
        reverse_loss.model,
        LossModel::Exponential { mean_gap: ms(100) }
    );
    assert_eq!(
        (reverse_loss.start, reverse_loss.stop),
        (Duration::ZERO, Some(secs(5)))
    );
    assert!(reverse_loss.is_active(secs(4)) && !reverse_loss.is_active(secs(5)));
    assert_eq!(reverse_loss.model.mean_loss_rate(), None);
    let gilbert = link
        .forward
        .loss
        .as_ref()
        .unwrap()
        .model
        .mean_loss_rate()
        .unwrap();
    assert!((gilbert - 0.01 * 0.8 / 0.51).abs() < 1e-12, "{gilbert}");

    let v = scenario.flow("v").unwrap();
    assert_eq!((v.stop, v.packet_size), (Some(secs(9)), 1460));
    assert_eq!(
        v.kind,
        FlowKind::Tfrc(TfrcSpec {
            target_rate: None,
            rtt_ref: Some(ms(100)),
            feedbacks_per_rtt: None,
            veno: Some(VenoSpec {
                beta: 2.0,
                alpha: 3.0
            }),
            profile: TfrcProfile::Ns2,
            history_discounting: true,
            oscillation_damping: true,
            variant: TfrcVariant::Standard,
            nominal_segment_size: None,
            header_size: None,
            ecn: true,
            max_rate: Some(Rate::from_mbps(2)),
            media: None,
        })
    );
    assert_eq!(
        scenario.flow("t").unwrap().kind,
        FlowKind::Tcp(TcpSpec {
            variant: TcpVariant::NewReno,
            delayed_ack: true,
            window: Some(20),
            profile: TcpProfile::Ns2,
            downloads: None,
        })
    );
    let FlowKind::Pareto(pareto) = &scenario.flow("p").unwrap().kind else {
        panic!("expected pareto")
    };
    assert_eq!(
        (pareto.burst, pareto.idle, pareto.shape),
        (ms(100), ms(100), Some(1.2))
    );
    assert_eq!(scenario.output.state_sampling_interval(), ms(10));
}

#[test]
fn every_unit_form_is_accepted_in_files() {
    let rates = [
        ("\"100Mbps\"", 100_000_000),
        ("\"800kbps\"", 800_000),
        ("\"800Kbps\"", 800_000),
        ("\"1Gbps\"", 1_000_000_000),
        ("\"64bps\"", 64),
        ("\"1.5Mbps\"", 1_500_000),
        ("\"2 Mbps\"", 2_000_000),
        ("\"1Mb/s\"", 1_000_000),
        ("1000000", 1_000_000),
        ("1e6", 1_000_000),
    ];
    for (text, bits) in rates {
        let scenario = parse(&minimal("").replace("\"1Mbps\"", text)).unwrap();
        assert_eq!(
            scenario.links[0].forward.rate(),
            Some(Rate::from_bits_per_second(bits)),
            "{text}"
        );
    }
    let delays = [
        ("\"2s\"", secs(2)),
        ("\"1.5s\"", ms(1500)),
        ("\"24ms\"", ms(24)),
        ("\"250us\"", Duration::from_micros(250)),
        ("\"250µs\"", Duration::from_micros(250)),
        ("\"40ns\"", Duration::from_nanos(40)),
        ("\"0s\"", Duration::ZERO),
    ];
    for (text, delay) in delays {
        let scenario = parse(&minimal("").replace("\"10ms\"", text)).unwrap();
        assert_eq!(scenario.links[0].forward.delay, delay, "{text}");
    }
}

#[test]
fn asymmetric_links_override_per_direction() {
    let scenario = Scenario::from_str_in_dir(
        &minimal(
            r#"queue = { kind = "droptail", limit = 20 }
loss = { kind = "bernoulli", rate = 0.1 }
forward = { delay = "5ms", queue = { kind = "red" } }
reverse = { rate = "64kbps", loss = { kind = "bernoulli", rate = 0.2 } }

[[link]]
between = ["r", "cell"]
trace = "traces/down.trace"
delay = "20ms"
reverse = { trace = "/abs/up.trace", queue = { limit = 100 } }

[[link]]
between = ["cell", "x"]
trace = "traces/down.trace"
delay = "1ms"
forward = { rate = "2Mbps" }
"#,
        ),
        "test.toml",
        Path::new("/scenarios/dir"),
    )
    .unwrap();
    let plain = &scenario.links[0];
    assert_eq!(plain.forward.rate(), Some(Rate::from_mbps(1)));
    assert_eq!(plain.forward.delay, ms(5));
    assert_eq!(plain.forward.queue, QueueSpec::Red(RedSpec::default()));
    assert_eq!(
        plain.forward.loss.as_ref().unwrap().model,
        LossModel::Bernoulli { rate: 0.1 }
    );
    assert_eq!(plain.reverse.rate(), Some(Rate::from_kbps(64)));
    assert_eq!(plain.reverse.delay, ms(10));
    assert_eq!(plain.reverse.queue, QueueSpec::DropTail { limit: 20 });
    assert_eq!(
        plain.reverse.loss.as_ref().unwrap().model,
        LossModel::Bernoulli { rate: 0.2 }
    );

    let cellular = &scenario.links[1];
    assert_eq!(
        cellular.forward.trace(),
        Some(Path::new("/scenarios/dir/traces/down.trace")),
        "relative trace paths are resolved against the scenario file's directory"
    );
    assert_eq!(cellular.forward.rate(), None);
    assert_eq!(cellular.reverse.trace(), Some(Path::new("/abs/up.trace")));
    assert_eq!(cellular.reverse.queue, QueueSpec::DropTail { limit: 100 });
    assert_eq!(cellular.forward.queue, QueueSpec::DropTail { limit: 50 });
    // A rate at the more specific level wins over an inherited trace.
    let mixed = &scenario.links[2];
    assert_eq!(mixed.forward.rate(), Some(Rate::from_mbps(2)));
    assert_eq!(
        mixed.reverse.trace(),
        Some(Path::new("/scenarios/dir/traces/down.trace"))
    );

    // The same file loaded by path resolves against its own directory.
    let dir = std::env::temp_dir().join(format!("tfrc-scenario-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cell.toml");
    std::fs::write(
        &file,
        "name = \"c\"\nduration = \"1s\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"t.down\"\ndelay = \"1ms\"\n",
    )
    .unwrap();
    let loaded = Scenario::from_path(&file).unwrap();
    let trace: PathBuf = loaded.links[0].forward.trace().unwrap().to_path_buf();
    assert!(
        trace.is_absolute() && trace.ends_with("t.down"),
        "{}",
        trace.display()
    );
    assert_eq!(
        trace.parent(),
        Some(std::path::absolute(&dir).unwrap().as_path())
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unknown_keys_are_rejected_with_their_name() {
    assert_error(
        &minimal("colour = \"blue\""),
        "link[0].colour",
        "unknown key `colour`",
    );
    assert_error(
        &minimal("").replace("duration", "seed = 3\nduraton = \"1s\"\nduration"),
        "duraton",
        "unknown key `duraton` (did you mean `duration`?)",
    );
    assert_error(
        &minimal("queue = { kind = \"rio\", min_ot = 10 }"),
        "link[0].queue.min_ot",
        "did you mean `min_out`?",
    );
    assert_error(
        &minimal("loss = { kind = \"bernoulli\", rate = 0.1, when = \"1s\" }"),
        "link[0].loss.when",
        "unknown key `when`",
    );
    assert_error(
        &minimal("reverse = { bandwidth = \"1Mbps\" }"),
        "link[0].reverse.bandwidth",
        "expected one of: rate, trace, trace_offset, trace_opportunity, delay, queue, loss",
    );
    assert_error(
        &minimal(
            "[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\ntarget = \"1Mbps\"",
        ),
        "flow[0].target",
        "unknown key `target`",
    );
    assert_error(
        &minimal("[output]\nintervall = \"1s\""),
        "output.intervall",
        "did you mean `interval`?",
    );
    assert_error(
        &minimal("[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\n[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 1\ncolor = 2"),
        "marker[0].color",
        "unknown key `color`",
    );
}

#[test]
fn kind_specific_keys_must_match_the_kind() {
    assert_error(
        &minimal("[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\nwindow = 20"),
        "flow[0].window",
        "`window` is not a key of a tfrc flow; besides the common keys a tfrc flow takes: target_rate, rtt_ref",
    );
    assert_error(
        &minimal("queue = { kind = \"droptail\", min_th = 5 }"),
        "link[0].queue.min_th",
        "`min_th` is not a key of a droptail queue",
    );
    assert_error(
        &minimal("loss = { kind = \"bernoulli\", mean_gap = \"5ms\" }"),
        "link[0].loss.mean_gap",
        "a bernoulli loss model takes: rate",
    );
}

#[test]
fn wrong_values_name_the_key_and_what_was_expected() {
    let flow = |extra: &str| {
        minimal(&format!(
            "[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\n{extra}"
        ))
    };
    let cases: Vec<(String, &str, &str)> = vec![
        (minimal("").replace("\"1Mbps\"", "\"800kbs\""), "link[0].rate", "expected a rate like \"800kbps\", got \"800kbs\""),
        (minimal("").replace("\"1Mbps\"", "\"1MBps\""), "link[0].rate", "bits per second"),
        (minimal("").replace("\"1Mbps\"", "\"0kbps\""), "link[0].rate", "above zero"),
        (minimal("").replace("\"1Mbps\"", "true"), "link[0].rate", "expected a rate like \"800kbps\", got boolean `true`"),
        (minimal("").replace("\"10ms\"", "10"), "link[0].delay", "a duration needs a unit"),
        (minimal("").replace("\"10ms\"", "\"10 parsecs\""), "link[0].delay", "expected a duration like \"180s\""),
        (minimal("").replace("\"10s\"", "\"0s\""), "duration", "above zero"),
        (minimal("").replace("name = \"t\"", "name = 5"), "name", "expected a string, got integer `5`"),
        (minimal("").replace("name = \"t\"", "name = \"a/b\""), "name", "without '/'"),
        (minimal("").replace("duration", "seed = -3\nduration"), "seed", "expected a whole number ≥ 0"),
        (minimal("queue = { kind = \"fifo\" }"), "link[0].queue.kind", "expected one of \"droptail\", \"red\", \"rio\", got \"fifo\""),
        (minimal("queue = { limit = 0 }"), "link[0].queue.limit", "at least 1 packet"),
        (minimal("queue = { limit = 4000000000 }"), "link[0].queue.limit", "expected a queue limit of at most 1000000 packets, got 4000000000"),
        (minimal("[output]\ninterval = \"1ns\""), "output.interval", "an interval of 1ns over a 10s run writes 10000000000 rows per flow; at most 10000000 (use an interval of at least 1µs)"),
        (minimal("[output]\nstate_interval = \"100ns\""), "output.state_interval", "writes 100000000 rows per flow"),
        (minimal("queue = { kind = \"droptail\", limit = 1 }"), "link[0].queue.limit", "expected a DropTail limit of at least 2 packets (the limit includes the packet in transmission), got 1"),
        (minimal("queue = { limit = \"50\" }"), "link[0].queue.limit", "expected a whole number ≥ 0, got string \"50\""),
        (minimal("queue = { kind = \"red\", min_th = 20, max_th = 10 }"), "link[0].queue.min_th", "expected a value below max_th (10)"),
        (minimal("queue = { kind = \"rio\", p_out = 1.5 }"), "link[0].queue.p_out", "expected a probability above 0 and at most 1, got 1.5"),
        (minimal("loss = { kind = \"bernoulli\", rate = 2 }"), "link[0].loss.rate", "expected a probability between 0 and 1, got 2"),
        (minimal("loss = { kind = \"bernoulli\" }"), "link[0].loss.rate", "required key is missing for a bernoulli loss model"),
        (minimal("loss = { rate = 0.1 }"), "link[0].loss.kind", "required key is missing"),
        (minimal("loss = { kind = \"uniform\", rate = 0.1 }"), "link[0].loss.kind", "\"bernoulli\", \"exponential\", \"gilbert-elliott\""),
        (minimal("loss = { kind = \"bernoulli\", rate = 0.1, start = \"9s\", stop = \"2s\" }"), "link[0].loss.stop", "after start (9s)"),
        (minimal("loss = { kind = \"exponential\", mean_gap = \"0s\" }"), "link[0].loss.mean_gap", "above zero"),
        (minimal("loss = { kind = \"exponential\", mean_gap = 99 }"), "link[0].loss.mean_gap", "a duration needs a unit"),
        (minimal("loss = { kind = \"exponential\" }"), "link[0].loss.mean_gap", "required key is missing for an exponential loss model (expected the mean time between losses like \"100ms\")"),
        (minimal("trace = \"x.trace\""), "link[0].trace", "either rate or trace, not both"),
        (minimal("").replace("rate = \"1Mbps\"\n", ""), "link[0].rate", "required key is missing for the forward direction"),
        (minimal("").replace("delay = \"10ms\"\n", ""), "link[0].delay", "required key is missing"),
        (minimal("").replace("[\"s\", \"r\"]", "[\"s\"]"), "link[0].between", "expected two node names like [\"sender\", \"router\"], got 1 names"),
        (minimal("").replace("[\"s\", \"r\"]", "[\"s\", \"s\"]"), "link[0].between", "two different nodes"),
        (minimal("").replace("[\"s\", \"r\"]", "[\"s\", \"bad node\"]"), "link[0].between", "expected a node name"),
        (minimal("[[link]]\nbetween = [\"r\", \"s\"]\nrate = \"1Mbps\"\ndelay = \"1ms\""), "link[1].between", "already joined by link[0]"),
        (flow("target_rate = \"fast\""), "flow[0].target_rate", "expected a rate like \"800kbps\", got \"fast\""),
        (flow("rtt_ref = 100"), "flow[0].rtt_ref", "a duration needs a unit, e.g. \"100s\" or \"100ms\""),
        (flow("veno_alpha = 3"), "flow[0].veno_alpha", "needs veno_beta"),
        (flow("veno_beta = 1\nveno_alpha = 0.5"), "flow[0].veno_alpha", "α ≥ 1"),
        (flow("profile = \"ns3\""), "flow[0].profile", "expected one of \"rfc5348\", \"ns2\", got \"ns3\""),
        (flow("history_discounting = \"yes\""), "flow[0].history_discounting", "expected true or false"),
        (flow("variant = \"tiny\""), "flow[0].variant", "expected one of \"standard\", \"sp\", got \"tiny\""),
        (flow("header_size = 32"), "flow[0].header_size", "needs variant = \"sp\""),
        (flow("nominal_segment_size = 536"), "flow[0].nominal_segment_size", "needs variant = \"sp\""),
        (flow("variant = \"sp\"\nnominal_segment_size = 0"), "flow[0].nominal_segment_size", "at least 1 byte"),
        (flow("variant = \"sp\"\nprofile = \"ns2\""), "flow[0].variant", "runs under profile = \"rfc5348\""),
        (flow("media = { fps = 30 }"), "flow[0].media", "needs the flow's max_rate"),
        (flow("max_rate = \"1Mbps\"\nmedia = { fps = 0 }"), "flow[0].media.fps", "a frame rate above 0"),
        (flow("max_rate = \"1Mbps\"\nmedia = { min_rate = \"2Mbps\" }"), "flow[0].media.min_rate", "at most the flow's max_rate"),
        (flow("max_rate = \"1Mbps\"\nmedia = { start_rate = \"100kbps\" }"), "flow[0].media.start_rate", "between min_rate"),
        (flow("max_rate = \"1Mbps\"\nmedia = { deadline = \"0s\" }"), "flow[0].media.deadline", "above zero"),
        (flow("max_rate = \"1Mbps\"\nmedia = { pause = \"2s\" }"), "flow[0].media.resume", "needs its resume time"),
        (flow("max_rate = \"1Mbps\"\nmedia = { pause = \"2s\", resume = \"1s\" }"), "flow[0].media.resume", "after pause (2s)"),
        (flow("max_rate = \"1Mbps\"\nmedia = { pause = \"20s\", resume = \"21s\" }"), "flow[0].media.pause", "before the end of the run"),
        (flow("max_rate = \"1Mbps\"\nmedia = { frames = 30 }"), "flow[0].media.frames", "unknown key `frames`; expected one of: fps, min_rate"),
        (flow("max_rate = \"1Mbps\"\nmedia = { transport = \"rtp\" }"), "flow[0].media.transport", "expected one of \"etp\", \"tfrc\", got \"rtp\""),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\nveno_beta = 1"), "flow[0].veno_beta", "needs media.transport = \"tfrc\""),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\nfeedbacks_per_rtt = 4"), "flow[0].feedbacks_per_rtt", "an ETP media flow's rate control is what an ETP descriptor names"),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\necn = true"), "flow[0].ecn", "needs media.transport = \"tfrc\""),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\nprofile = \"ns2\""), "flow[0].profile", "needs media.transport = \"tfrc\""),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\nvariant = \"sp\"\nheader_size = 28"), "flow[0].header_size", "RFC 4828's defaults"),
        (flow("max_rate = \"1Mbps\"\nmedia = {}\nvariant = \"sp\"\ntarget_rate = \"100kbps\""), "flow[0].target_rate", "needs media.transport = \"tfrc\""),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\ndownloads = { connections = 0 }"), "flow[0].downloads.connections", "from 1 to 1000 connections"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\ndownloads = { min_size = 60000 }"), "flow[0].downloads.max_size", "from min_size (60000)"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\ndownloads = { idle = \"0s\" }"), "flow[0].downloads.idle", "above zero"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\ndownloads = { first = \"maybe\" }"), "flow[0].downloads.first", "\"on\", \"off\""),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\ndownloads = { files = 3 }"), "flow[0].downloads.files", "unknown key `files`"),
        (flow("packet_size = 0"), "flow[0].packet_size", "from 1 to 65507 bytes"),
        (flow("start = \"10s\""), "flow[0].start", "before the end of the run (10s)"),
        (flow("start = \"5s\"\nstop = \"5s\""), "flow[0].stop", "after start (5s)"),
        (flow("count = 0"), "flow[0].count", "from 1 to 100000"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"quic\"\nfrom = \"s\"\nto = \"r\""), "flow[0].kind", "\"tfrc\", \"tcp\", \"cbr\", \"pareto\", \"exp-onoff\""),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"cbr\"\nfrom = \"s\"\nto = \"r\""), "flow[0].rate", "required key is missing for a cbr flow (expected a rate like \"800kbps\")"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"pareto\"\nfrom = \"s\"\nto = \"r\"\nrate = \"1Mbps\"\nshape = 1"), "flow[0].shape", "above 1"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\nvariant = \"vegas\""), "flow[0].variant", "\"reno\", \"newreno\", \"sack\", \"cubic\", \"bbr\", got \"vegas\""),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\nprofile = \"linux\""), "flow[0].profile", "expected one of \"rfc\", \"ns2\", \"ns3\", got \"linux\""),
        (minimal("[[flow]]\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\""), "flow[0].name", "required key is missing (expected a name like \"example\")"),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"x\"\nto = \"r\""), "flow[0].from", "expected a node that a link joins (\"s\", \"r\"), got \"x\""),
        (minimal("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"s\""), "flow[0].to", "a node other than from"),
        (minimal("[[link]]\nbetween = [\"x\", \"y\"]\nrate = \"1Mbps\"\ndelay = \"1ms\"\n[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"y\""), "flow[0].to", "no path of links leads from \"s\" to \"y\""),
        (flow("[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\""), "flow[1].name", "flow name \"a\" is already used by flow[0]"),
        (flow("count = 2\n[[flow]]\nname = \"a.2\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\""), "flow[1].name", "\"a.2\" is already used by flow[0]"),
        (flow("[[marker]]\nlink = [\"s\", \"x\"]\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 1"), "marker[0].link", "no link joins \"s\" and \"x\""),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"b\"]\nrate = \"1Mbps\"\nbucket = 1"), "marker[0].flows", "got unknown flow \"b\""),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nflows = []\nrate = \"1Mbps\"\nbucket = 1"), "marker[0].flows", "at least one flow name"),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 0"), "marker[0].bucket", "above zero"),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"a\"]\nrate = \"1Mbps\""), "marker[0].bucket", "required key is missing (expected a bucket size in bytes like 10000)"),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nkind = \"three-colour\"\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 5"), "marker[0].kind", "\"token-bucket\""),
        (flow("[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 5\n[[marker]]\nlink = [\"s\", \"r\"]\nflows = [\"a\"]\nrate = \"1Mbps\"\nbucket = 5"), "marker[1].flows", "already marked on this link direction by marker[0]"),
        (minimal("[output]\ninterval = \"0s\""), "output.interval", "above zero"),
        ("name = \"t\"\nduration = \"1s\"\n[link]\nbetween = [\"a\", \"b\"]".to_owned(), "link", "write [[link]] for each entry, not [link]"),
        ("name = \"t\"\nduration = \"1s\"".to_owned(), "link", "at least one [[link]]"),
        ("name = \"t\"".to_owned(), "duration", "required key is missing (expected a duration like \"180s\""),
    ];
    for (text, key, expected) in cases {
        assert_error(&text, key, expected);
    }
}

#[test]
fn syntax_and_read_errors_name_the_file() {
    let error = parse("name = \"t\"\nduration = [\n").unwrap_err();
    assert!(
        matches!(error, ScenarioError::Syntax { line: 3, .. }),
        "{error:?}"
    );
    let shown = error.to_string();
    assert!(
        shown.starts_with("test.toml:3:1: not valid TOML:"),
        "{shown}"
    );
    assert!(!shown.contains('\n'), "one line: {shown}");

    let error = parse("name = \"t\"\nname = \"u\"").unwrap_err().to_string();
    assert!(error.starts_with("test.toml:2:"), "{error}");
    assert!(error.contains("duplicate key"), "{error}");

    let error = Scenario::from_path(Path::new("tests/data/no-such-file.toml")).unwrap_err();
    assert!(matches!(error, ScenarioError::Read { .. }));
    assert!(error
        .to_string()
        .starts_with("tests/data/no-such-file.toml: cannot read the scenario file:"));

    let error = error_of(
        &minimal("")
            .replace("\"1Mbps\"", "\"1Gbps\"")
            .replace("delay", "rate = \"2Mbps\"\ndelay"),
    );
    assert!(error.starts_with("test.toml:"), "{error}");
}

#[test]
fn none_switches_optional_keys_off() {
    let scenario = parse(&minimal(
        "loss = \"none\"\ntrace = \"none\"\n[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\ntarget_rate = \"none\"\nrtt_ref = \"none\"\nveno_beta = \"none\"\nstop = \"none\"\ncount = \"none\"",
    ))
    .unwrap();
    assert_eq!(scenario.links[0].forward.loss, None);
    assert_eq!(scenario.flows[0].kind, FlowKind::Tfrc(TfrcSpec::default()));
    assert_eq!(
        (scenario.flows[0].stop, scenario.flows[0].count),
        (None, None)
    );
    // A per-direction "none" switches off a loss the top level would give.
    let scenario = parse(&minimal(
        "loss = { kind = \"bernoulli\", rate = 0.5 }\nforward = { loss = \"none\" }",
    ))
    .unwrap();
    assert_eq!(scenario.links[0].forward.loss, None);
}

/// `profile = "ns2"` defaults history discounting and √RTT spacing to ns-2.35's `discount_ 1`
/// and `ca_ 1`; explicit values still win.
#[test]
fn a_tcp_flow_takes_the_ns3_profile() {
    let text = minimal(
        "[[flow]]\nname = \"a\"\nkind = \"tcp\"\nfrom = \"s\"\nto = \"r\"\nvariant = \"bbr\"\nprofile = \"ns3\"",
    );
    let scenario = parse(&text).unwrap();
    let FlowKind::Tcp(tcp) = &scenario.flow("a").unwrap().kind else {
        panic!("expected tcp")
    };
    assert_eq!(
        (tcp.variant, tcp.profile),
        (TcpVariant::Bbr, TcpProfile::Ns3)
    );
}

#[test]
fn ns2_profile_defaults_follow_ns2() {
    let scenario = parse(&minimal(
        r#"
[[flow]]
name = "a"
kind = "tfrc"
from = "s"
to = "r"
profile = "ns2"

[[flow]]
name = "b"
kind = "tfrc"
from = "s"
to = "r"
profile = "ns2"
history_discounting = false
"#,
    ))
    .unwrap();
    let spec = |name: &str| match &scenario.flow(name).unwrap().kind {
        FlowKind::Tfrc(spec) => spec.clone(),
        other => panic!("flow {name} is not TFRC: {other:?}"),
    };
    let a = spec("a");
    assert_eq!(a.profile, TfrcProfile::Ns2);
    assert!(a.history_discounting && a.oscillation_damping);
    let b = spec("b");
    assert!(!b.history_discounting && b.oscillation_damping);
}

/// `variant = "sp"` turns TFRC-SP on with RFC 4828's defaults (1460-byte nominal segments,
/// H = 40) unless given; standard flows write no TFRC-SP key, and the written form reads back.
#[test]
fn small_packet_variant_fills_rfc_4828_defaults_and_round_trips() {
    let scenario = parse(&minimal(
        r#"
[[flow]]
name = "voip"
kind = "tfrc"
from = "s"
to = "r"
packet_size = 232
variant = "sp"

[[flow]]
name = "exact"
kind = "tfrc"
from = "s"
to = "r"
variant = "sp"
nominal_segment_size = 536
header_size = 32

[[flow]]
name = "plain"
kind = "tfrc"
from = "s"
to = "r"
"#,
    ))
    .unwrap();
    let spec = |name: &str| match &scenario.flow(name).unwrap().kind {
        FlowKind::Tfrc(spec) => spec.clone(),
        other => panic!("flow {name} is not TFRC: {other:?}"),
    };
    let voip = spec("voip");
    assert_eq!(voip.variant, TfrcVariant::Sp);
    assert_eq!(
        (voip.nominal_segment_size, voip.header_size),
        (Some(1460), Some(40))
    );
    let exact = spec("exact");
    assert_eq!(
        (exact.nominal_segment_size, exact.header_size),
        (Some(536), Some(32))
    );
    let plain = spec("plain");
    assert_eq!(plain.variant, TfrcVariant::Standard);
    assert_eq!(
        (plain.nominal_segment_size, plain.header_size),
        (None, None)
    );
    let written = scenario.to_toml_string();
    assert_eq!(written.matches("variant = \"sp\"").count(), 2, "{written}");
    assert!(!written.contains("standard"), "{written}");
    assert_eq!(parse(&written).unwrap(), scenario);
}

/// `feedbacks_per_rtt` (ns-2's NumFeedback_): a fixed count from 1 to 1000, not with rtt_ref.
#[test]
fn fixed_feedbacks_per_rtt() {
    let text = |extra: &str| {
        format!(
            "name = \"f\"\nduration = \"10s\"\n[[link]]\nbetween = [\"a\", \"b\"]\nrate = \"1Mbps\"\ndelay = \"10ms\"\n[[flow]]\nname = \"x\"\nkind = \"tfrc\"\nfrom = \"a\"\nto = \"b\"\n{extra}\n"
        )
    };
    let scenario = Scenario::from_str_named(&text("feedbacks_per_rtt = 4"), "f.toml").unwrap();
    let FlowKind::Tfrc(spec) = &scenario.flow("x").unwrap().kind else {
        panic!("not tfrc");
    };
    assert_eq!(spec.feedbacks_per_rtt, Some(4));
    // Written back and read again.
    let again = Scenario::from_str_named(&scenario.to_toml_string(), "g.toml").unwrap();
    assert_eq!(again, scenario);
    for (extra, needle) in [
        ("feedbacks_per_rtt = 0", "from 1 to 1000"),
        ("feedbacks_per_rtt = 1001", "from 1 to 1000"),
        ("feedbacks_per_rtt = 2\nrtt_ref = \"100ms\"", "not both"),
        ("feedbacks_per_rtt = \"four\"", "feedbacks_per_rtt"),
    ] {
        let error = Scenario::from_str_named(&text(extra), "f.toml")
            .unwrap_err()
            .to_string();
        assert!(error.contains(needle), "{extra}: {error}");
        assert!(
            error.contains("feedbacks_per_rtt") || error.contains("flow"),
            "{error}"
        );
    }
}

/// `trace_offset` starts a trace-driven direction that far into its trace; it needs a trace at
/// the same level and survives writing back.
#[test]
fn trace_offsets_travel_with_their_trace() {
    let dir = std::env::temp_dir().join(format!("tfrc-trace-offset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.down"), "0\n5\n10\n").unwrap();
    let text = |extra: &str| {
        format!(
            "name = \"t\"\nduration = \"10s\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"t.down\"\ndelay = \"10ms\"\n{extra}\n[[flow]]\nname = \"x\"\nkind = \"cbr\"\nrate = \"100kbps\"\nfrom = \"a\"\nto = \"b\"\n"
        )
    };
    let scenario = Scenario::from_str_in_dir(
        &text("trace_offset = \"480s\"\nreverse = { rate = \"1Mbps\" }"),
        "t.toml",
        &dir,
    )
    .unwrap();
    let Capacity::Trace { offset, .. } = &scenario.links[0].forward.capacity else {
        panic!("not a trace");
    };
    assert_eq!(*offset, secs(480));
    let again = Scenario::from_str_in_dir(&scenario.to_toml_string(), "again.toml", &dir).unwrap();
    assert_eq!(again, scenario);
    let error = Scenario::from_str_in_dir(
        &text("reverse = { rate = \"1Mbps\", trace_offset = \"5s\" }"),
        "t.toml",
        &dir,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("trace_offset needs a trace"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `trace_opportunity` chooses how packets use a trace's opportunities: Mahimahi's shared
/// 1500 bytes by default, or one packet each; it needs a trace at the same level, names its
/// two values when wrong, and survives writing back.
#[test]
fn trace_opportunity_defaults_to_mahimahi_bytes() {
    let dir = std::env::temp_dir().join(format!("tfrc-trace-opportunity-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("t.down"), "0\n5\n10\n").unwrap();
    let text = |extra: &str| {
        format!(
            "name = \"t\"\nduration = \"10s\"\n[[link]]\nbetween = [\"a\", \"b\"]\ntrace = \"t.down\"\ndelay = \"10ms\"\n{extra}\n[[flow]]\nname = \"x\"\nkind = \"cbr\"\nrate = \"100kbps\"\nfrom = \"a\"\nto = \"b\"\n"
        )
    };
    let opportunity = |scenario: &Scenario, reverse: bool| {
        let link = &scenario.links[0];
        match &(if reverse {
            &link.reverse
        } else {
            &link.forward
        })
        .capacity
        {
            Capacity::Trace { opportunity, .. } => *opportunity,
            Capacity::Rate(_) => panic!("not a trace"),
        }
    };
    let default = Scenario::from_str_in_dir(&text(""), "t.toml", &dir).unwrap();
    assert_eq!(opportunity(&default, false), TraceOpportunity::Bytes);
    assert_eq!(opportunity(&default, true), TraceOpportunity::Bytes);
    let mixed = Scenario::from_str_in_dir(
        &text("reverse = { trace = \"t.down\", trace_opportunity = \"packet\" }"),
        "t.toml",
        &dir,
    )
    .unwrap();
    assert_eq!(opportunity(&mixed, false), TraceOpportunity::Bytes);
    assert_eq!(opportunity(&mixed, true), TraceOpportunity::Packet);
    let again = Scenario::from_str_in_dir(&mixed.to_toml_string(), "again.toml", &dir).unwrap();
    assert_eq!(again, mixed);
    let error = Scenario::from_str_in_dir(&text("trace_opportunity = \"shared\""), "t.toml", &dir)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("link[0].trace_opportunity")
            && error.contains("\"bytes\"")
            && error.contains("\"packet\""),
        "{error}"
    );
    let error = Scenario::from_str_in_dir(
        &text("reverse = { rate = \"1Mbps\", trace_opportunity = \"packet\" }"),
        "t.toml",
        &dir,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("trace_opportunity needs a trace"), "{error}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A table whose `kind` chooses its keys: an unknown key is named with the keys of that kind
/// only, a typo of another kind's key says whose key it is, a bad value inside the kind's keys
/// names that key, and a `kind` that is not a string lists the kinds.
#[test]
fn kind_tables_name_their_own_keys() {
    let base = "name = \"p\"\nduration = \"10s\"\n[[link]]\nbetween = [\"s\", \"r\"]\nrate = \"1Mbps\"\ndelay = \"10ms\"\n";
    let flow = "[[flow]]\nname = \"a\"\nfrom = \"s\"\nto = \"r\"\n";
    assert_error(
        &format!("{base}{flow}kind = \"tfrc\"\nwindw = 3\n"),
        "flow[0].windw",
        "unknown key `windw` (did you mean `window`? it is a key of a tcp flow, not of a tfrc flow); expected one of: name, kind, from, to, start, stop, packet_size, count, enabled, target_rate,",
    );
    let shown = error_of(&format!("{base}{flow}kind = \"tfrc\"\ntarget_rat = 1\n"));
    assert!(shown.contains("did you mean `target_rate`?"), "{shown}");
    assert!(
        !shown.contains("burst"),
        "only the tfrc flow's keys are listed: {shown}"
    );
    assert_error(
        &format!("{base}{flow}kind = \"pareto\"\nrate = \"1Mbps\"\nshape = \"steep\"\n"),
        "flow[0].shape",
        "expected a number, got string \"steep\"",
    );
    assert_error(
        &format!("{base}forward = {{ queue = {{ kind = \"rio\", p_in = \"x\" }} }}\n"),
        "link[0].forward.queue.p_in",
        "expected a number, got string \"x\"",
    );
    assert_error(
        &format!("{base}queue = {{ kind = 5 }}\n"),
        "link[0].queue.kind",
        "expected one of \"droptail\", \"red\", \"rio\", got 5",
    );
    assert_error(
        &format!("{base}loss = {{ kind = \"exponential\", mean_gap = \"5ms\", stopp = \"1s\" }}\n"),
        "link[0].loss.stopp",
        "unknown key `stopp` (did you mean `stop`?); expected one of: kind, start, stop, mean_gap",
    );
}

/// A media source takes RFC 8867 §4.3's defaults (30 frames/s, 150 kb/s floor and start, a
/// 300 ms deadline) unless given, needs `max_rate`, and the written form reads back.
#[test]
fn media_sources_fill_their_defaults_and_round_trip() {
    let scenario = parse(&minimal(
        r#"
[[flow]]
name = "video"
kind = "tfrc"
from = "s"
to = "r"
max_rate = "1.5Mbps"
media = {}

[[flow]]
name = "audio"
kind = "tfrc"
from = "s"
to = "r"
max_rate = "20kbps"
media = { fps = 50, min_rate = "20kbps", deadline = "150ms", pause = "2s", resume = "4s", transport = "tfrc" }
veno_beta = 1
"#,
    ))
    .unwrap();
    let media = |name: &str| match &scenario.flow(name).unwrap().kind {
        FlowKind::Tfrc(spec) => spec.media.clone().unwrap(),
        other => panic!("flow {name} is not TFRC: {other:?}"),
    };
    let video = media("video");
    assert_eq!(video.fps, 30.0);
    assert_eq!(video.min_rate, Rate::from_kbps(150));
    assert_eq!(video.start_rate, Rate::from_kbps(150));
    assert_eq!(video.deadline, Duration::from_millis(300));
    assert_eq!((video.pause, video.resume), (None, None));
    // Carried by ETP unless told otherwise.
    assert_eq!(video.transport, MediaTransport::Etp);
    let audio = media("audio");
    assert_eq!((audio.fps, audio.start_rate), (50.0, Rate::from_kbps(20)));
    assert_eq!(audio.transport, MediaTransport::Tfrc);
    assert_eq!(audio.pause, Some(secs(2)));
    let written = scenario.to_toml_string();
    assert_eq!(parse(&written).unwrap(), scenario, "{written}");
    // `--set` reaches into the table, and "none" takes the source away.
    let mut changed = scenario.clone();
    changed.apply_set("flow.video.media.fps=10").unwrap();
    changed.apply_set("flow.audio.media=none").unwrap();
    assert_eq!(
        match &changed.flow("video").unwrap().kind {
            FlowKind::Tfrc(spec) => spec.media.as_ref().unwrap().fps,
            _ => 0.0,
        },
        10.0
    );
    assert!(
        matches!(&changed.flow("audio").unwrap().kind, FlowKind::Tfrc(spec) if spec.media.is_none())
    );
}

/// Short TCP transfers take RFC 8868 §5.1's defaults (30 connections of 30-50 kB, a 10 s mean
/// idle time, starting "on") unless given, and the written form reads back.
#[test]
fn short_tcp_downloads_fill_rfc_8868_defaults_and_round_trip() {
    let scenario = parse(&minimal(
        r#"
[[flow]]
name = "web"
kind = "tcp"
from = "s"
to = "r"
downloads = {}

[[flow]]
name = "late"
kind = "tcp"
from = "s"
to = "r"
downloads = { connections = 1, min_size = 1000, max_size = 2000, idle = "2s", first = "off" }
"#,
    ))
    .unwrap();
    let downloads = |name: &str| match &scenario.flow(name).unwrap().kind {
        FlowKind::Tcp(spec) => spec.downloads.clone().unwrap(),
        other => panic!("flow {name} is not TCP: {other:?}"),
    };
    let web = downloads("web");
    assert_eq!(
        (
            web.connections,
            web.min_size,
            web.max_size,
            web.idle,
            web.first
        ),
        (
            30,
            30_000,
            50_000,
            secs(10),
            tfrc_scenario::DownloadPhase::On
        )
    );
    let late = downloads("late");
    assert_eq!(late.first, tfrc_scenario::DownloadPhase::Off);
    let written = scenario.to_toml_string();
    assert_eq!(parse(&written).unwrap(), scenario, "{written}");
}
