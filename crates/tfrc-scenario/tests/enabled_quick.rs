//! The additive keys `enabled` (per flow) and `quick` (top level): parsing, expansion, overrides,
//! the resolved form, and errors.

use core::time::Duration;

use tfrc_scenario::Scenario;

const BASE: &str = r#"
name = "s"
duration = "100s"

[[link]]
between = ["src", "edge"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["edge", "dst"]
rate = "1Mbps"
delay = "10ms"

[[marker]]
link = ["src", "edge"]
flows = ["a"]
rate = "400kbps"
bucket = 10000

[[marker]]
link = ["src", "edge"]
flows = ["b", "tcp"]
rate = "200kbps"
bucket = 10000

[[flow]]
name = "a"
kind = "tfrc"
from = "src"
to = "dst"

[[flow]]
name = "b"
kind = "tfrc"
from = "src"
to = "dst"
enabled = false

[[flow]]
name = "tcp"
kind = "tcp"
count = 3
from = "src"
to = "dst"
"#;

fn parse(text: &str) -> Scenario {
    Scenario::from_str_named(text, "s.toml").unwrap_or_else(|error| panic!("{error}"))
}

fn names(scenario: &Scenario) -> Vec<&str> {
    scenario.flows.iter().map(|f| f.name.as_str()).collect()
}

#[test]
fn enabled_defaults_to_true_and_disabled_flows_leave_the_expansion() {
    let scenario = parse(BASE);
    let enabled: Vec<bool> = scenario.flows.iter().map(|f| f.enabled).collect();
    assert_eq!(enabled, [true, false, true]);
    let run = &scenario.expand().unwrap()[0];
    assert_eq!(names(run), ["a", "tcp.1", "tcp.2", "tcp.3"]);
    assert!(run.flows.iter().all(|f| f.enabled));
    // The shared marker keeps the enabled flows only.
    assert_eq!(run.markers.len(), 2);
    assert_eq!(run.markers[1].flows, ["tcp.1", "tcp.2", "tcp.3"]);
}

#[test]
fn a_marker_whose_flows_are_all_disabled_is_removed() {
    let mut scenario = parse(BASE);
    scenario
        .apply_sets(["flow.a.enabled=false", "flow.tcp.enabled=false"])
        .unwrap();
    let run = &scenario.expand().unwrap()[0];
    assert!(run.flows.is_empty());
    assert!(run.markers.is_empty());
    // Switching a flow back on restores it and its marker reference.
    scenario.apply_set("flow.b.enabled=true").unwrap();
    let run = &scenario.expand().unwrap()[0];
    assert_eq!(names(run), ["b"]);
    assert_eq!(run.markers.len(), 1);
    assert_eq!(run.markers[0].flows, ["b"]);
}

#[test]
fn a_sweep_switches_flows_on_and_off() {
    let text = format!(
        "{BASE}\n[sweep]\nmix = [\n  {{ \"flow.b.enabled\" = false, label = \"a-only\" }},\n  {{ \"flow.b.enabled\" = true, \"flow.a.enabled\" = false, label = \"b-only\" }},\n]\n"
    );
    let variants = parse(&text).expand().unwrap();
    assert_eq!(variants.len(), 2);
    assert_eq!(variants[0].name, "s[mix=a-only]");
    assert_eq!(names(&variants[0]), ["a", "tcp.1", "tcp.2", "tcp.3"]);
    assert_eq!(names(&variants[1]), ["b", "tcp.1", "tcp.2", "tcp.3"]);
    assert_eq!(
        variants[1].markers[0].flows,
        ["b", "tcp.1", "tcp.2", "tcp.3"]
    );
}

#[test]
fn enabled_round_trips_and_is_written_only_when_false() {
    let scenario = parse(BASE);
    let text = scenario.to_toml_string();
    assert_eq!(text.matches("enabled = false").count(), 1, "{text}");
    assert!(!text.contains("enabled = true"), "{text}");
    assert_eq!(parse(&text), scenario);
    let run = &scenario.expand().unwrap()[0];
    assert!(!run.to_toml_string().contains("enabled"));
}

#[test]
fn a_bad_enabled_value_names_the_key() {
    let text = BASE.replace("enabled = false", "enabled = \"no\"");
    let error = Scenario::from_str_named(&text, "s.toml").unwrap_err();
    assert_eq!(error.key(), Some("flow[1].enabled"), "{error}");
    assert!(
        error.to_string().starts_with("s.toml: flow[1].enabled: "),
        "{error}"
    );
}

#[test]
fn quick_overrides_shorten_the_run_and_shrink_the_sweep() {
    let text = BASE.replace(
        "duration = \"100s\"",
        "duration = \"100s\"\nquick = [\"duration=20s\", \"flow.tcp.start=5s\", \"sweep.flows={ path = \\\"flow.tcp.count\\\", values = [2] }\"]",
    ) + "\n[[flow]]\nname = \"late\"\nkind = \"cbr\"\nrate = \"100kbps\"\nfrom = \"src\"\nto = \"dst\"\nstart = \"50s\"\nstop = \"60s\"\n\n[sweep]\nflows = { path = \"flow.tcp.count\", values = [2, 4, 8] }\n";
    // `late` starts after the quick version's end: the quick list must move it, or loading fails.
    let error = Scenario::from_str_named(&text, "s.toml").unwrap_err();
    assert_eq!(error.key(), Some("quick"), "{error}");
    assert!(error.to_string().contains("flow[3].start"), "{error}");

    let text = text.replace(
        "\"flow.tcp.start=5s\"",
        "\"flow.tcp.start=5s\", \"flow.late.start=10s\", \"flow.late.stop=12s\"",
    );
    let mut scenario = parse(&text);
    assert_eq!(scenario.quick.len(), 5);
    assert_eq!(scenario.expand().unwrap().len(), 3);
    // Expanded variants do not carry the quick list.
    assert!(scenario
        .expand()
        .unwrap()
        .iter()
        .all(|v| v.quick.is_empty()));
    // The resolved form keeps it.
    assert_eq!(parse(&scenario.to_toml_string()), scenario);

    scenario.apply_quick().unwrap();
    assert!(scenario.quick.is_empty());
    assert_eq!(scenario.duration, Duration::from_secs(20));
    assert_eq!(scenario.flow("tcp").unwrap().start, Duration::from_secs(5));
    let variants = scenario.expand().unwrap();
    assert_eq!(variants.len(), 1);
    assert_eq!(variants[0].name, "s[flows=2]");
    // Applying again changes nothing.
    let before = scenario.clone();
    scenario.apply_quick().unwrap();
    assert_eq!(scenario, before);
}

#[test]
fn quick_errors_name_the_key_and_leave_the_scenario_unchanged() {
    let with_quick = |list: &str| {
        BASE.replace(
            "duration = \"100s\"",
            &format!("duration = \"100s\"\nquick = {list}"),
        )
    };
    for (list, expected) in [
        (
            "[\"duration\"]",
            "quick[0]: expected an override key.path=value",
        ),
        ("[\"duration=60s\", \"flow.zzz.start=1s\"]", "quick: "),
        ("[\"duration=fast\"]", "quick: "),
        ("\"duration=60s\"", "quick: "),
    ] {
        let error = Scenario::from_str_named(&with_quick(list), "s.toml").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with(&format!("s.toml: {expected}")),
            "{list}: {error}"
        );
    }
    // A valid file whose quick list is then broken by an override: apply_quick fails cleanly.
    let mut scenario = parse(&with_quick("[\"duration=60s\"]"));
    scenario.apply_set("quick=[\"flow.a.start=150s\"]").unwrap();
    let before = scenario.clone();
    let error = scenario.apply_quick().unwrap_err();
    assert!(error.to_string().contains("flow[0].start"), "{error}");
    assert_eq!(scenario, before);
}
