//! Random input never panics: arbitrary text, random TOML built from the format's own keys,
//! random overrides. Whatever parses also round-trips.

use proptest::prelude::*;
use tfrc_scenario::Scenario;

const EXAMPLE: &str = include_str!("data/example.toml");

const KEYS: &[&str] = &[
    "name",
    "duration",
    "seed",
    "between",
    "rate",
    "delay",
    "queue",
    "loss",
    "trace",
    "forward",
    "reverse",
    "kind",
    "limit",
    "min_th",
    "max_th",
    "max_p",
    "weight",
    "gentle",
    "min_in",
    "max_in",
    "p_in",
    "min_out",
    "max_out",
    "p_out",
    "start",
    "stop",
    "mean_gap",
    "p_good_to_bad",
    "p_bad_to_good",
    "loss_good",
    "loss_bad",
    "link",
    "flows",
    "bucket",
    "from",
    "to",
    "packet_size",
    "count",
    "target_rate",
    "rtt_ref",
    "veno_beta",
    "veno_alpha",
    "profile",
    "history_discounting",
    "oscillation_damping",
    "variant",
    "nominal_segment_size",
    "header_size",
    "ecn",
    "max_rate",
    "media",
    "downloads",
    "delayed_ack",
    "window",
    "burst",
    "idle",
    "shape",
    "interval",
    "state_interval",
    "label",
    "paths",
    "values",
    "labels",
    "\"flow.a.count\"",
    "\"link.0.rate\"",
    "\"link.1.delay\"",
    "bogus",
];

const VALUES: &[&str] = &[
    "\"a\"",
    "\"b\"",
    "\"s\"",
    "\"r\"",
    "\"x\"",
    "\"none\"",
    "\"1Mbps\"",
    "\"800kbps\"",
    "\"0bps\"",
    "\"1.5Mbps\"",
    "\"1MBps\"",
    "\"10ms\"",
    "\"1s\"",
    "\"0s\"",
    "\"-1s\"",
    "\"99999999999999999999s\"",
    "\"0.5ns\"",
    "\"µs\"",
    "\"tfrc\"",
    "\"tcp\"",
    "\"cbr\"",
    "\"pareto\"",
    "\"exp-onoff\"",
    "\"red\"",
    "\"rio\"",
    "\"droptail\"",
    "\"bernoulli\"",
    "\"exponential\"",
    "\"gilbert-elliott\"",
    "\"token-bucket\"",
    "\"sack\"",
    "\"ns2\"",
    "0",
    "1",
    "2",
    "-1",
    "50",
    "3.5",
    "1e300",
    "-0.0",
    "nan",
    "inf",
    "-inf",
    "9223372036854775807",
    "true",
    "false",
    "[]",
    "[\"s\", \"r\"]",
    "[\"r\", \"s\"]",
    "[\"a\"]",
    "[1, 2]",
    "[\"1ms\", \"2ms\"]",
    "{}",
    "{ kind = \"red\" }",
    "{ kind = \"bernoulli\", rate = 0.1 }",
    "{ rate = \"2Mbps\" }",
    "[{ \"link.0.delay\" = \"1ms\" }]",
    "1979-05-27T07:32:00Z",
    "{ paths = [\"link.0.rate\"], values = [\"1Mbps\"] }",
];

const HEADERS: &[&str] = &[
    "[[link]]",
    "[[flow]]",
    "[[marker]]",
    "[output]",
    "[sweep]",
    "[variant]",
    "[link]",
    "[flow.x]",
    "[[bogus]]",
];

/// A line of TOML-ish text from the format's vocabulary.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (prop::sample::select(KEYS), prop::sample::select(VALUES))
            .prop_map(|(key, value)| format!("{key} = {value}")),
        1 => prop::sample::select(HEADERS).prop_map(str::to_owned),
        1 => "[ -~]{0,20}",
    ]
}

/// A plausible scenario: a valid skeleton plus random lines.
fn document() -> impl Strategy<Value = String> {
    prop::collection::vec(line(), 0..25).prop_map(|lines| {
        format!(
            "name = \"f\"\nduration = \"10s\"\n[[link]]\nbetween = [\"s\", \"r\"]\nrate = \"1Mbps\"\ndelay = \"1ms\"\n{}\n",
            lines.join("\n")
        )
    })
}

const RATES: &[&str] = &["\"1Mbps\"", "\"800kbps\"", "1000000", "\"2.5Mbps\""];
const DURATIONS: &[&str] = &["\"10ms\"", "\"1s\"", "\"2500us\"", "\"5s\"", "\"0s\""];
const PROBABILITIES: &[&str] = &["0.1", "0.02", "1", "0.5", "0.002"];
const PACKETS: &[&str] = &["5", "10", "20", "40", "2.5"];
const WHOLE: &[&str] = &["1", "2", "3", "20", "1000"];
const BOOLEANS: &[&str] = &["true", "false"];

/// Values suited to a key (mostly valid, sometimes not).
fn value_for(key: &'static str) -> BoxedStrategy<String> {
    let pool: &'static [&'static str] = match key {
        "rate" | "target_rate" | "max_rate" => RATES,
        "delay" | "start" | "burst" | "idle" | "mean_gap" => DURATIONS,
        "stop" | "rtt_ref" => &["\"10ms\"", "\"7s\"", "\"none\"", "\"9s\""],
        "p_in" | "p_out" | "max_p" | "weight" | "p_good_to_bad" | "p_bad_to_good" | "loss_good"
        | "loss_bad" => PROBABILITIES,
        "min_th" | "max_th" | "min_in" | "max_in" | "min_out" | "max_out" | "veno_beta"
        | "veno_alpha" | "shape" => PACKETS,
        "limit" | "packet_size" | "count" | "window" | "nominal_segment_size" | "header_size" => {
            WHOLE
        }
        "gentle" | "history_discounting" | "oscillation_damping" | "delayed_ack" | "ecn" => {
            BOOLEANS
        }
        "variant" => &[
            "\"reno\"",
            "\"newreno\"",
            "\"sack\"",
            "\"standard\"",
            "\"sp\"",
        ],
        "profile" => &["\"rfc5348\"", "\"ns2\""],
        "media" => &[
            "{}",
            "{ fps = 30, min_rate = \"150kbps\" }",
            "{ deadline = \"300ms\", start_rate = \"1Mbps\" }",
            "{ pause = \"1s\", resume = \"2s\" }",
            "{ fps = -1 }",
            "{ resume = \"3s\" }",
            "{ transport = \"tfrc\" }",
            "{ transport = \"etp\", fps = 10 }",
            "{ transport = 3 }",
            "\"none\"",
        ],
        "downloads" => &[
            "{}",
            "{ connections = 2, min_size = 100, max_size = 200 }",
            "{ idle = \"1s\", first = \"off\" }",
            "{ connections = 0 }",
            "{ min_size = 9, max_size = 1 }",
            "\"none\"",
        ],
        _ => VALUES,
    };
    prop_oneof![30 => prop::sample::select(pool), 1 => prop::sample::select(VALUES)]
        .prop_map(str::to_owned)
        .boxed()
}

/// An inline table of some of `keys`, after `fixed` entries.
fn inline_table(fixed: String, keys: &'static [&'static str]) -> BoxedStrategy<String> {
    prop::sample::subsequence(keys, 0..=keys.len())
        .prop_flat_map(move |chosen| {
            let fixed = fixed.clone();
            chosen
                .into_iter()
                .map(|key| value_for(key).prop_map(move |value| format!("{key} = {value}")))
                .collect::<Vec<_>>()
                .prop_map(move |entries| {
                    let mut all = vec![fixed.clone()];
                    all.extend(entries);
                    all.retain(|entry| !entry.is_empty());
                    format!("{{ {} }}", all.join(", "))
                })
        })
        .boxed()
}

fn queue() -> BoxedStrategy<String> {
    prop::sample::select(&["droptail", "red", "rio"][..])
        .prop_flat_map(|kind| {
            let keys: &'static [&'static str] = match kind {
                "droptail" => &["limit"],
                "red" => &[
                    "limit", "min_th", "max_th", "max_p", "weight", "gentle", "ecn",
                ],
                _ => &[
                    "limit", "min_in", "max_in", "p_in", "min_out", "max_out", "p_out", "weight",
                    "ecn",
                ],
            };
            inline_table(format!("kind = \"{kind}\""), keys)
        })
        .boxed()
}

fn loss() -> BoxedStrategy<String> {
    prop::sample::select(&["bernoulli", "exponential", "gilbert-elliott"][..])
        .prop_flat_map(|kind| {
            let keys: &'static [&'static str] = match kind {
                "bernoulli" | "exponential" => &["start", "stop"],
                _ => &["loss_good", "loss_bad", "start", "stop"],
            };
            let fixed = match kind {
                "bernoulli" => "kind = \"bernoulli\", rate = 0.01".to_owned(),
                "exponential" => "kind = \"exponential\", mean_gap = \"90ms\"".to_owned(),
                _ => "kind = \"gilbert-elliott\", p_good_to_bad = 0.01, p_bad_to_good = 0.5"
                    .to_owned(),
            };
            inline_table(fixed, keys)
        })
        .boxed()
}

fn link(index: usize) -> BoxedStrategy<String> {
    (
        prop::option::of(queue()),
        prop::option::of(loss()),
        prop::option::of((
            prop::option::of(queue()),
            prop::option::of(loss()),
            prop::option::of(value_for("rate")),
        )),
        value_for("rate"),
        prop::sample::select(&["\"10ms\"", "\"0s\"", "\"250ms\""][..]),
    )
        .prop_map(move |(queue, loss, reverse, rate, delay)| {
            let mut text = format!(
                "[[link]]\nbetween = [\"n{index}\", \"n{}\"]\nrate = {rate}\ndelay = {delay}\n",
                index + 1
            );
            if let Some(queue) = queue {
                text.push_str(&format!("queue = {queue}\n"));
            }
            if let Some(loss) = loss {
                text.push_str(&format!("loss = {loss}\n"));
            }
            if let Some((queue, loss, rate)) = reverse {
                let mut entries = Vec::new();
                if let Some(queue) = queue {
                    entries.push(format!("queue = {queue}"));
                }
                if let Some(loss) = loss {
                    entries.push(format!("loss = {loss}"));
                }
                if let Some(rate) = rate {
                    entries.push(format!("rate = {rate}"));
                }
                text.push_str(&format!("reverse = {{ {} }}\n", entries.join(", ")));
            }
            text
        })
        .boxed()
}

fn flow(index: usize, nodes: usize) -> BoxedStrategy<String> {
    (
        prop::sample::select(&["tfrc", "tcp", "cbr", "pareto", "exp-onoff"][..]),
        0..nodes,
        1..nodes.max(2),
    )
        .prop_flat_map(move |(kind, from, offset)| {
            let to = (from + offset) % nodes;
            let keys: &'static [&'static str] = match kind {
                "tfrc" => &["target_rate", "rtt_ref", "veno_beta", "veno_alpha", "profile", "history_discounting", "oscillation_damping", "variant", "nominal_segment_size", "header_size", "ecn", "max_rate", "start", "stop", "packet_size", "count"],
                "tcp" => &["variant", "delayed_ack", "window", "start", "stop", "packet_size", "count"],
                "cbr" => &["start", "stop", "packet_size", "count"],
                "pareto" => &["burst", "idle", "shape", "start", "stop", "packet_size"],
                _ => &["burst", "idle", "start", "packet_size"],
            };
            let rate = if matches!(kind, "tfrc" | "tcp") { String::new() } else { ", rate = \"100kbps\"".to_owned() };
            inline_table(
                format!("name = \"f{index}\", kind = \"{kind}\", from = \"n{from}\", to = \"n{to}\"{rate}"),
                keys,
            )
        })
        .prop_map(|table| {
            // The inline table's entries, one per line, as a [[flow]] block.
            let body = table.trim_start_matches("{ ").trim_end_matches(" }");
            format!("[[flow]]\n{}\n", body.replace(", ", "\n"))
        })
        .boxed()
}

/// A scenario assembled from the format's tables with mostly plausible values.
fn structured_document() -> impl Strategy<Value = String> {
    (1usize..4)
        .prop_flat_map(|links| {
            (
                (0..links).map(link).collect::<Vec<_>>(),
                prop::collection::vec((0usize..4).prop_flat_map(move |i| flow(i, links + 1)), 0..4),
                prop::option::of(prop::sample::select(&[
                    "[[marker]]\nlink = [\"n0\", \"n1\"]\nflows = [\"f0\"]\nrate = \"200kbps\"\nbucket = 10000\n",
                    "[[marker]]\nlink = [\"n1\", \"n0\"]\nflows = [\"f1\", \"f2\"]\nrate = \"1Mbps\"\nbucket = 1500\n",
                ][..])),
                prop::option::of(prop::sample::select(&[
                    "[sweep]\n\"link.0.rate\" = [\"1Mbps\", \"2Mbps\"]\n",
                    "[sweep]\nflows = { path = \"flow.f0.count\", values = [1, 2] }\nboth = [{ \"link.0.delay\" = \"1ms\", \"seed\" = 3 }, { \"link.0.delay\" = \"2ms\", label = \"slow\" }]\n",
                    "[sweep]\n\"flow.f1.kind\" = [\"tcp\", \"cbr\", \"tfrc\"]\n",
                ][..])),
                prop::option::of(prop::sample::select(&["1", "7", "9223372036854775807"][..])),
            )
        })
        .prop_map(|(links, flows, marker, sweep, seed)| {
            let mut text = String::from("name = \"structured\"\nduration = \"10s\"\n");
            if let Some(seed) = seed {
                text.push_str(&format!("seed = {seed}\n"));
            }
            for part in links.iter().chain(&flows) {
                text.push_str(part);
            }
            text.push_str(marker.unwrap_or(""));
            text.push_str("[output]\ninterval = \"1s\"\n");
            text.push_str(sweep.unwrap_or(""));
            text
        })
}

fn check_round_trip(scenario: &Scenario) {
    let text = scenario.to_toml_string();
    let again = Scenario::from_str_named(&text, "again.toml")
        .unwrap_or_else(|error| panic!("written scenario does not parse: {error}\n{text}"));
    assert_eq!(&again, scenario, "{text}");
}

/// 256 cases per property, or `PROPTEST_CASES` for a longer hunt.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 256;
    }
    config
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        let _ = Scenario::from_str_named(&text, "random.toml");
    }

    #[test]
    fn arbitrary_bytes_as_text_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = Scenario::from_str_named(&text, "random.toml");
    }

    #[test]
    fn random_scenarios_never_panic_and_round_trip(text in document()) {
        if let Ok(scenario) = Scenario::from_str_named(&text, "random.toml") {
            check_round_trip(&scenario);
            if scenario.variant_count() <= 64 {
                if let Ok(variants) = scenario.expand() {
                    for variant in &variants {
                        check_round_trip(variant);
                    }
                }
            }
        }
    }

    #[test]
    fn structured_scenarios_never_panic_and_round_trip(text in structured_document()) {
        if let Ok(scenario) = Scenario::from_str_named(&text, "structured.toml") {
            check_round_trip(&scenario);
            if let Ok(variants) = scenario.expand() {
                for variant in &variants {
                    check_round_trip(variant);
                }
            }
        }
    }

    #[test]
    fn mutated_example_never_panics(
        position in 0usize..2000,
        replacement in prop::sample::select(VALUES),
        cut in 0usize..40,
    ) {
        let mut text = EXAMPLE.to_owned();
        let mut at = position.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mut end = (at + cut).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.replace_range(at..end, replacement);
        if let Ok(scenario) = Scenario::from_str_named(&text, "mutated.toml") {
            check_round_trip(&scenario);
        }
    }

    #[test]
    fn random_overrides_never_panic(
        segments in prop::collection::vec(
            prop_oneof![
                prop::sample::select(KEYS).prop_map(str::to_owned),
                prop::sample::select(&["0", "1", "2", "5", "a", "t1", "u", "\"a\"", "\"\"", "-1"][..]).prop_map(str::to_owned),
                "[ -~]{0,6}",
            ],
            0..5,
        ),
        value in prop_oneof![prop::sample::select(VALUES).prop_map(str::to_owned), "[ -~]{0,12}"],
        separator in prop::sample::select(&["=", " = ", "", "=="][..]),
    ) {
        let mut scenario = Scenario::from_str_named(EXAMPLE, "example.toml").unwrap();
        let before = scenario.clone();
        let assignment = format!("{}{separator}{value}", segments.join("."));
        match scenario.apply_set(&assignment) {
            Ok(()) => check_round_trip(&scenario),
            Err(error) => {
                prop_assert_eq!(&scenario, &before);
                prop_assert!(error.to_string().starts_with("example.toml: --set "), "{}", error);
            }
        }
    }
}
