//! Overrides (`--set`), `count` expansion, sweeps and the TOML round trip.

use core::time::Duration;
use std::path::Path;

use tfrc_scenario::{
    FlowKind, LossModel, QueueSpec, Rate, Scenario, ScenarioError, SweepForm, TcpSpec,
};

fn example() -> Scenario {
    Scenario::from_path(Path::new("tests/data/example.toml")).unwrap()
}

fn parse(text: &str) -> Scenario {
    Scenario::from_str_named(text, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn tfrc(scenario: &Scenario, name: &str) -> tfrc_scenario::TfrcSpec {
    match &scenario.flow(name).unwrap().kind {
        FlowKind::Tfrc(spec) => spec.clone(),
        other => panic!("{name} is {other:?}"),
    }
}

fn set_error(scenario: &Scenario, assignment: &str) -> ScenarioError {
    let mut copy = scenario.clone();
    let error = copy.apply_set(assignment).expect_err(assignment);
    assert_eq!(
        &copy, scenario,
        "a failed override leaves the scenario unchanged"
    );
    error
}

const GRID: &str = r#"
name = "e002-grid"
duration = "500s"

[[link]]
between = ["s", "r1"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["r1", "r2"]
rate = "1Mbps"
delay = "250ms"

[[link]]
between = ["r2", "d"]
rate = "100Mbps"
delay = "1ms"

[[flow]]
name = "f"
kind = "tfrc"
count = 2
from = "s"
to = "d"

[sweep]
flows = { path = "flow.f.count", values = [2, 3, 4] }
setting = [
  { "link.1.delay" = "250ms", "flow.f.rtt_ref" = "500ms" },
  { "link.1.delay" = "250ms", "flow.f.rtt_ref" = "125ms" },
  { "link.1.delay" = "500ms", "flow.f.rtt_ref" = "1s", label = "long-1fb" },
]
"link.0.rate" = ["100Mbps", "10Mbps"]
"#;

#[test]
fn set_overrides_address_the_tree() {
    let mut scenario = example();
    scenario
        .apply_sets([
            "link.1.rate=2Mbps",
            "flow.a.target_rate=600kbps",
            "seed=7",
            "duration = 60s",
            "link.1.queue.p_out=0.2",
            "link.1.reverse.rate=64kbps",
            "flow.t1.window=20",
            "flow.2.rate=\"250kbps\"",
            "output.state_interval=100ms",
            "marker.0.flows=[\"a\", \"t1\"]",
        ])
        .unwrap();
    assert_eq!(scenario.links[1].forward.rate(), Some(Rate::from_mbps(2)));
    assert_eq!(scenario.links[1].reverse.rate(), Some(Rate::from_kbps(64)));
    assert_eq!(tfrc(&scenario, "a").target_rate, Some(Rate::from_kbps(600)));
    assert_eq!(
        (scenario.seed, scenario.duration),
        (7, Duration::from_secs(60))
    );
    let QueueSpec::Rio(rio) = &scenario.links[1].forward.queue else {
        panic!()
    };
    assert_eq!(rio.p_out, 0.2);
    assert_eq!(
        scenario.flow("t1").unwrap().kind,
        FlowKind::Tcp(TcpSpec {
            window: Some(20),
            ..TcpSpec::default()
        })
    );
    assert_eq!(
        scenario.flow("u").unwrap().kind,
        FlowKind::Cbr {
            rate: Rate::from_kbps(250)
        }
    );
    assert_eq!(
        scenario.output.state_interval,
        Some(Duration::from_millis(100))
    );
    assert_eq!(scenario.markers[0].flows, ["a", "t1"]);
    // The loss window was 30-90 s: still valid in a 60 s run.
    assert_eq!(
        scenario.links[1].forward.loss.as_ref().unwrap().stop,
        Some(Duration::from_secs(90))
    );

    // "none" switches an option off; setting a kind drops the old kind's keys.
    scenario.apply_set("flow.a.target_rate=none").unwrap();
    assert_eq!(tfrc(&scenario, "a").target_rate, None);
    scenario.apply_set("flow.a.kind=tcp").unwrap();
    assert_eq!(
        scenario.flow("a").unwrap().kind,
        FlowKind::Tcp(TcpSpec::default())
    );
    scenario.apply_set("link.1.queue.kind=red").unwrap();
    assert_eq!(
        scenario.links[1].forward.queue.limit(),
        50,
        "common keys survive a kind change"
    );
    assert!(matches!(scenario.links[1].forward.queue, QueueSpec::Red(_)));
    scenario
        .apply_set("link.1.loss.kind=gilbert-elliott")
        .unwrap_err();
    scenario
        .apply_set("link.1.loss={ kind = \"exponential\", mean_gap = \"9ms\" }")
        .unwrap();
    assert_eq!(
        scenario.links[1].forward.loss.as_ref().unwrap().model,
        LossModel::Exponential {
            mean_gap: Duration::from_millis(9)
        }
    );

    // Several overrides are validated together: switch a link from a rate to a trace.
    scenario
        .apply_sets(["link.0.rate=none", "link.0.trace=/traces/up"])
        .unwrap();
    assert_eq!(
        scenario.links[0].forward.trace(),
        Some(Path::new("/traces/up"))
    );
    let shown = scenario
        .clone()
        .apply_sets(["link.0.trace=none", "seed=3"])
        .unwrap_err()
        .to_string();
    assert!(
        shown.starts_with("tests/data/example.toml: --set link.0.trace=none --set seed=3: link[0].rate: required key is missing"),
        "{shown}"
    );

    // Appending a flow one past the end.
    scenario
        .apply_set("flow.3={ name = \"late\", kind = \"cbr\", rate = \"1Mbps\", from = \"receiver\", to = \"sender\", start = \"10s\" }")
        .unwrap();
    assert_eq!(scenario.flows[3].name, "late");
}

#[test]
fn bad_override_paths_are_errors_naming_the_path() {
    let scenario = example();
    let cases = [
        ("link.1.rate", "link.1.rate", "expected key.path=value"),
        (
            "link.5.rate=1Mbps",
            "link.5",
            "index 5 is out of range: there are 2 elements",
        ),
        (
            "flow.zz.rate=1Mbps",
            "flow.zz",
            "no element named \"zz\" (names: \"a\", \"t1\", \"u\")",
        ),
        (
            "link.x.rate=1Mbps",
            "link.x",
            "its elements have no names; use an index",
        ),
        (
            "name.first=x",
            "name",
            "is a string, not a table or an array, so it has no `first`",
        ),
        ("link..rate=1Mbps", "link..rate", "empty segment"),
        ("=5", "", "expected a key path"),
        ("marker.0.link.0.x=1", "marker.0.link.0", "is a string"),
        (
            "nothing.0.x=1",
            "nothing",
            "is not present, so it cannot be indexed",
        ),
    ];
    for (assignment, key, expected) in cases {
        let error = set_error(&scenario, assignment);
        let shown = error.to_string();
        assert!(matches!(error, ScenarioError::Override { .. }), "{shown}");
        assert_eq!(error.key(), Some(key), "{shown}");
        assert!(
            shown.starts_with(&format!("tests/data/example.toml: --set {assignment}: ")),
            "{shown}"
        );
        assert!(
            shown.contains(expected),
            "{shown}\nshould contain: {expected}"
        );
    }
    // Paths that lead to a key the format does not have, or to a bad value, are caught by
    // validation, which names the key in the scenario.
    let validation_cases = [
        (
            "link.1.forwrd.rate=1Mbps",
            "link[1].forwrd",
            "did you mean `forward`?",
        ),
        (
            "flow.a.colour=red",
            "flow[0].colour",
            "unknown key `colour`",
        ),
        (
            "link.1.rate=fast",
            "link[1].rate",
            "expected a rate like \"800kbps\", got \"fast\"",
        ),
        (
            "flow.a.rtt_ref=100",
            "flow[0].rtt_ref",
            "a duration needs a unit",
        ),
        (
            "flow.a.delayed_ack=true",
            "flow[0].delayed_ack",
            "not a key of a tfrc flow",
        ),
        (
            "flow.a.variant=reno",
            "flow[0].variant",
            "expected one of \"standard\", \"sp\", got \"reno\"",
        ),
    ];
    for (assignment, key, expected) in validation_cases {
        let error = set_error(&scenario, assignment);
        let shown = error.to_string();
        assert_eq!(error.key(), Some(key), "{shown}");
        assert!(
            shown.contains(&format!("--set {assignment}: {key}: ")),
            "{shown}"
        );
        assert!(
            shown.contains(expected),
            "{shown}\nshould contain: {expected}"
        );
    }
}

#[test]
fn count_expands_into_numbered_flows() {
    let scenario = parse(
        r#"
name = "many"
duration = "300s"
[[link]]
between = ["s", "r"]
rate = "5Mbps"
delay = "80ms"
[[flow]]
name = "tcp"
kind = "tcp"
count = 3
from = "s"
to = "r"
[[flow]]
name = "a"
kind = "tfrc"
from = "s"
to = "r"
[[marker]]
link = ["s", "r"]
flows = ["tcp"]
rate = "200kbps"
bucket = 10000
"#,
    );
    assert_eq!(scenario.flows.len(), 2);
    assert_eq!(scenario.flows[0].count, Some(3));
    let expanded = scenario.expand().unwrap();
    assert_eq!(expanded.len(), 1);
    let names: Vec<&str> = expanded[0].flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["tcp.1", "tcp.2", "tcp.3", "a"]);
    assert!(expanded[0].flows.iter().all(|f| f.count.is_none()));
    assert_eq!(
        expanded[0].markers[0].flows,
        ["tcp.1", "tcp.2", "tcp.3"],
        "one aggregate marker"
    );
    assert_eq!(expanded[0].name, "many");
    // The expanded scenario is itself a valid scenario and round-trips.
    let text = expanded[0].to_toml_string();
    assert_eq!(parse(&text), expanded[0]);
    // Instances can be addressed with a quoted path.
    let mut concrete = expanded[0].clone();
    concrete.apply_set("flow.\"tcp.2\".window=10").unwrap();
    assert_eq!(
        concrete.flow("tcp.2").unwrap().kind,
        FlowKind::Tcp(TcpSpec {
            window: Some(10),
            ..TcpSpec::default()
        })
    );
}

#[test]
fn sweeps_expand_to_the_cartesian_product_with_readable_names() {
    let scenario = parse(GRID);
    assert_eq!(scenario.sweep.len(), 3);
    assert_eq!(
        scenario
            .sweep
            .iter()
            .map(|a| (a.label.as_str(), a.form))
            .collect::<Vec<_>>(),
        [
            ("flows", SweepForm::Paths),
            ("setting", SweepForm::Grouped),
            ("rate", SweepForm::List)
        ]
    );
    assert_eq!(scenario.variant_count(), 18);
    let variants = scenario.expand().unwrap();
    assert_eq!(variants.len(), 18);
    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        names[0],
        "e002-grid[flows=2,delay=250ms,rtt_ref=500ms,rate=100Mbps]"
    );
    assert_eq!(
        names[1],
        "e002-grid[flows=2,delay=250ms,rtt_ref=500ms,rate=10Mbps]"
    );
    assert_eq!(
        names[2],
        "e002-grid[flows=2,delay=250ms,rtt_ref=125ms,rate=100Mbps]"
    );
    assert_eq!(names[4], "e002-grid[flows=2,setting=long-1fb,rate=100Mbps]");
    assert_eq!(names[17], "e002-grid[flows=4,setting=long-1fb,rate=10Mbps]");
    let unique: std::collections::HashSet<&str> = names.iter().copied().collect();
    assert_eq!(unique.len(), 18);

    let last = &variants[17];
    assert!(last.sweep.is_empty());
    assert_eq!(last.flows.len(), 4);
    assert_eq!(last.flows[3].name, "f.4");
    assert_eq!(last.links[1].forward.delay, Duration::from_millis(500));
    assert_eq!(last.links[0].forward.rate(), Some(Rate::from_mbps(10)));
    assert_eq!(tfrc(last, "f.4").rtt_ref, Some(Duration::from_secs(1)));
    assert_eq!(
        last.variant,
        [
            ("flows".to_owned(), "4".to_owned()),
            ("setting".to_owned(), "long-1fb".to_owned()),
            ("rate".to_owned(), "10Mbps".to_owned()),
        ]
    );
    // A variant records its settings and round-trips; expanding it again changes nothing.
    let text = last.to_toml_string();
    assert!(
        text.contains("[variant]\nflows = \"4\"\nsetting = \"long-1fb\"\nrate = \"10Mbps\"\n"),
        "{text}"
    );
    assert_eq!(parse(&text), *last);
    assert_eq!(last.expand().unwrap(), vec![last.clone()]);
}

#[test]
fn sweep_labels_and_errors() {
    let base = r#"
name = "s"
duration = "10s"
[[link]]
between = ["a", "b"]
rate = "1Mbps"
delay = "1ms"
[[link]]
between = ["b", "c"]
rate = "1Mbps"
delay = "1ms"
[[flow]]
name = "x"
kind = "tfrc"
from = "a"
to = "c"
"#;
    // Two list axes ending in the same segment are labelled by their full paths.
    let scenario = parse(&format!(
        "{base}[sweep]\n\"link.0.delay\" = [\"1ms\"]\n\"link.1.delay\" = [\"2ms\", \"3ms\"]\n"
    ));
    let names: Vec<String> = scenario
        .expand()
        .unwrap()
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert_eq!(
        names,
        [
            "s[link.0.delay=1ms,link.1.delay=2ms]",
            "s[link.0.delay=1ms,link.1.delay=3ms]"
        ]
    );

    // Explicit labels, several paths with one value, booleans and "none".
    let scenario = parse(&format!(
        "{base}[sweep]\ndelay = {{ paths = [\"link.0.delay\", \"link.1.delay\"], values = [\"5ms\", \"50ms\"], labels = [\"short\", \"long\"] }}\n\"flow.x.target_rate\" = [\"none\", \"400kbps\"]\n\"flow.x.history_discounting\" = [false, true]\n"
    ));
    let variants = scenario.expand().unwrap();
    assert_eq!(variants.len(), 8);
    assert_eq!(
        variants[0].name,
        "s[delay=short,target_rate=none,history_discounting=false]"
    );
    assert_eq!(
        variants[7].name,
        "s[delay=long,target_rate=400kbps,history_discounting=true]"
    );
    assert_eq!(
        variants[7].links[0].forward.delay,
        Duration::from_millis(50)
    );
    assert_eq!(
        variants[7].links[1].reverse.delay,
        Duration::from_millis(50)
    );
    assert_eq!(tfrc(&variants[0], "x").target_rate, None);
    assert_eq!(
        tfrc(&variants[7], "x").target_rate,
        Some(Rate::from_kbps(400))
    );
    // The sweep itself round-trips in the form it was written.
    assert_eq!(parse(&scenario.to_toml_string()), scenario);

    // Errors found when parsing: they name the sweep key.
    let cases = [
        (
            "\"flow.y.rate\" = [1]",
            "sweep.\"flow.y.rate\"",
            "no element named \"y\"",
        ),
        (
            "\"link.9.delay\" = [\"1ms\"]",
            "sweep.\"link.9.delay\"",
            "index 9 is out of range",
        ),
        (
            "delay = [\"1ms\", \"2ms\"]",
            "sweep.delay",
            "delay: unknown key `delay`",
        ),
        (
            "g = [{ \"link.0.forwrd.rate\" = \"1Mbps\" }]",
            "sweep.g",
            "link[0].forwrd: unknown key `forwrd` (did you mean `forward`?)",
        ),
        (
            "\"link.0.delay\" = []",
            "sweep.\"link.0.delay\"",
            "non-empty array",
        ),
        ("delay = 5", "sweep.delay", "expected an array of values"),
        (
            "mix = [1, { \"link.0.delay\" = \"1ms\" }]",
            "sweep.mix",
            "not a mix",
        ),
        (
            "g = [{ label = \"x\" }]",
            "sweep.g[0]",
            "at least one \"key.path\" = value",
        ),
        (
            "d = { paths = [\"link.0.delay\"], values = [\"1ms\"], labels = [\"a\", \"b\"] }",
            "sweep.d.labels",
            "an array of 1 strings",
        ),
        (
            "d = { paths = [\"link.0.delay\"], value = [\"1ms\"] }",
            "sweep.d.value",
            "unknown key `value`",
        ),
        (
            "d = { values = [\"1ms\"] }",
            "sweep.d.paths",
            "expected paths = [",
        ),
        (
            "\"a=b\" = [1]",
            "sweep.\"a=b\"",
            "expected a label without '='",
        ),
    ];
    for (sweep, key, expected) in cases {
        let error = Scenario::from_str_named(&format!("{base}[sweep]\n{sweep}\n"), "test.toml")
            .unwrap_err();
        let shown = error.to_string();
        assert_eq!(error.key(), Some(key), "{shown}");
        assert!(shown.starts_with(&format!("test.toml: {key}: ")), "{shown}");
        assert!(
            shown.contains(expected),
            "{shown}\nshould contain: {expected}"
        );
    }

    // Errors found when expanding name the variant.
    let scenario = parse(&format!(
        "{base}[sweep]\n\"link.0.rate\" = [\"1Mbps\", \"fast\"]\n"
    ));
    let shown = scenario.expand().unwrap_err().to_string();
    assert_eq!(
        shown,
        "test.toml: sweep variant s[rate=fast]: link[0].rate: expected a rate like \"800kbps\", got \"fast\" (no number before the unit)"
    );
    let scenario = parse(&format!(
        "{base}[sweep]\n\"link.0.rate\" = [\"1Mbps\", \"1Mbps\"]\n"
    ));
    let shown = scenario.expand().unwrap_err().to_string();
    assert!(
        shown.contains("two variants are both named s[rate=1Mbps]"),
        "{shown}"
    );

    // Values in names never contain '/' (names are folder names): rates are normalized,
    // paths shortened to their file name.
    let scenario = parse(&format!(
        "{base}[sweep]\n\"link.0.rate\" = [\"1Mb/s\"]\n\"link.1.trace\" = [\"traces/a.down\"]\n\"link.1.rate\" = [\"none\"]\n"
    ));
    let variants = scenario.expand().unwrap();
    assert_eq!(
        variants[0].name,
        "s[link.0.rate=1Mbps,trace=a.down,link.1.rate=none]"
    );
    assert_eq!(
        variants[0].links[1].forward.trace(),
        Some(Path::new("traces/a.down"))
    );
    assert_eq!(parse(&variants[0].to_toml_string()), variants[0]);

    // A sweep can be changed with --set like any other key.
    let mut scenario = parse(&format!(
        "{base}[sweep]\n\"link.0.rate\" = [\"1Mbps\", \"2Mbps\"]\n"
    ));
    scenario
        .apply_set("sweep.\"link.0.rate\"=[\"3Mbps\"]")
        .unwrap();
    assert_eq!(
        scenario.expand().unwrap()[0].links[0].forward.rate(),
        Some(Rate::from_mbps(3))
    );
}

#[test]
fn the_resolved_scenario_round_trips() {
    let scenario = example();
    let text = scenario.to_toml_string();
    let again = Scenario::from_str_named(&text, "resolved.toml").unwrap();
    assert_eq!(again, scenario);
    assert_eq!(again.to_toml_string(), text, "writing is stable");
    // Everything explicit: the defaults are visible in the record.
    for expected in [
        "seed = 1\n",
        "queue = { kind = \"droptail\", limit = 50 }",
        "profile = \"rfc5348\"",
        "variant = \"sack\"",
        "loss = { kind = \"bernoulli\", rate = 0.01, start = \"30s\", stop = \"90s\" }",
        "[output]\ninterval = \"1s\"\n",
    ] {
        assert!(text.contains(expected), "{expected} missing in\n{text}");
    }

    let rich = parse(
        r#"
name = "rich"
duration = "1500ms"
seed = 99
[[link]]
between = ["a", "b"]
trace = "/traces/down"
delay = "1500us"
queue = { kind = "red", limit = 40, gentle = false }
loss = { kind = "gilbert-elliott", p_good_to_bad = 0.001, p_bad_to_good = 0.3, start = "1ms" }
reverse = { trace = "/traces/up", delay = "7ns", queue = { kind = "rio" }, loss = { kind = "exponential", mean_gap = "3500us" } }
[[link]]
between = ["b", "c"]
rate = "1234bps"
delay = "0s"
forward = { rate = "1.5Mbps" }
[[flow]]
name = "v"
kind = "tfrc"
from = "c"
to = "a"
count = 2
veno_beta = 1.5
veno_alpha = 2
rtt_ref = "100ms"
stop = "1s"
[[flow]]
name = "p"
kind = "pareto"
from = "a"
to = "c"
rate = "500kbps"
shape = 1.9
[[flow]]
name = "e"
kind = "exp-onoff"
from = "a"
to = "b"
rate = "64kbps"
burst = "1s"
[[marker]]
link = ["b", "a"]
flows = ["v", "e"]
rate = "100kbps"
bucket = 3000
[output]
interval = "100ms"
state_interval = "10ms"
[sweep]
"link.1.delay" = ["1ms", "2ms"]
both = [{ "flow.p.rate" = "1Mbps", "flow.e.rate" = "1Mbps" }, { "flow.p.rate" = "2Mbps", "flow.e.rate" = "2Mbps", label = "fast" }]
"#,
    );
    let text = rich.to_toml_string();
    let again = parse(&text);
    assert_eq!(again, rich, "{text}");
    assert_eq!(again.to_toml_string(), text);
    for variant in rich.expand().unwrap() {
        assert_eq!(parse(&variant.to_toml_string()), variant);
    }
}

#[test]
fn validate_checks_direct_changes() {
    let mut scenario = example();
    assert!(scenario.validate().is_ok());
    scenario.flows[0].to = "nowhere".to_owned();
    let shown = scenario.validate().unwrap_err().to_string();
    assert!(
        shown.starts_with("tests/data/example.toml: flow[0].to: expected a node that a link joins"),
        "{shown}"
    );

    // Seeds are written to TOML, whose integers stop at i64::MAX.
    let mut scenario = example();
    scenario.seed = u64::MAX;
    let shown = scenario.validate().unwrap_err().to_string();
    assert!(
        shown.starts_with(
            "tests/data/example.toml: seed: expected a seed from 0 to 9223372036854775807"
        ),
        "{shown}"
    );
    assert!(scenario.clone().apply_set("duration=1s").is_err());
    assert!(scenario.expand().is_err());
    scenario.seed = tfrc_scenario::MAX_TOML_INTEGER;
    assert_eq!(
        Scenario::from_str_named(&scenario.to_toml_string(), "x").unwrap(),
        scenario
    );
}

/// `--set` and sweep settings apply to the file as written, so a key left to its default is
/// resolved again under the new setting: setting `profile = "ns2"` gives the ns-2 profile's
/// own defaults (history discounting and oscillation damping on, as ns-2's `discount_` and
/// `ca_`), exactly as writing it in the file does.
#[test]
fn overrides_resolve_like_the_file_written_with_them() {
    let base = r#"
name = "p"
duration = "10s"
[[link]]
between = ["s", "r"]
rate = "1Mbps"
delay = "10ms"
[[flow]]
name = "a"
kind = "tfrc"
from = "s"
to = "r"
"#;
    let written = parse(&format!("{base}profile = \"ns2\"\n"));
    assert!(tfrc(&written, "a").history_discounting);
    assert!(tfrc(&written, "a").oscillation_damping);

    let mut set = parse(base);
    assert!(!tfrc(&set, "a").history_discounting);
    set.apply_set("flow.a.profile=ns2").unwrap();
    assert_eq!(set, written, "--set gives what the file gives");

    let swept = parse(&format!("{base}[sweep]\n\"flow.a.profile\" = [\"ns2\"]\n"));
    let variants = swept.expand().unwrap();
    assert_eq!(
        variants[0].flows, written.flows,
        "a sweep gives what the file gives"
    );

    // An explicit value in the file stays what it is.
    let mut explicit = parse(&format!("{base}history_discounting = false\n"));
    explicit.apply_set("flow.a.profile=ns2").unwrap();
    assert!(!tfrc(&explicit, "a").history_discounting);
    assert!(tfrc(&explicit, "a").oscillation_damping);

    // A key the file leaves to its default can be set; the table on the way is created.
    let mut queue = parse(base);
    queue.apply_set("link.0.queue.limit=20").unwrap();
    assert_eq!(
        queue.links[0].forward.queue,
        QueueSpec::DropTail { limit: 20 }
    );
    assert_eq!(
        queue.links[0].reverse.queue,
        QueueSpec::DropTail { limit: 20 }
    );
}

/// A scenario changed through its public fields keeps those changes when an override is
/// applied afterwards (the override applies to the scenario as it now is).
#[test]
fn overrides_keep_direct_changes() {
    let mut scenario = example();
    scenario.seed = 99;
    scenario.flows[0].start = Duration::from_secs(3);
    scenario.apply_set("duration=100s").unwrap();
    assert_eq!(scenario.seed, 99);
    assert_eq!(scenario.flows[0].start, Duration::from_secs(3));
    assert_eq!(scenario.duration, Duration::from_secs(100));
}
