//! Golden runs: the simulator's four output files for three scenarios that exercise every flow
//! kind, queue, loss model, marker and TFRC option, compared byte for byte with the files
//! committed in `tests/golden/NAME/`. A refactoring must leave them unchanged; a deliberate
//! change of behaviour or schema regenerates them with `TFRC_BLESS=1 cargo test -p tfrc-sim
//! --test golden` and says why in its commit.
//!
//! The `tool` line of `summary.json` (the crate version) is left out of the comparison.

use std::path::{Path, PathBuf};

use tfrc_scenario::Scenario;
use tfrc_sim::simulation::Simulation;

const FILES: [&str; 4] = ["flows.csv", "state.csv", "links.csv", "summary.json"];

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The file's text without the line naming the tool's version.
fn comparable(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("\"tool\":"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn check(name: &str) {
    let scenario = Scenario::from_path(&golden_dir().join(format!("{name}.toml"))).unwrap();
    let directory = tempfile::tempdir().unwrap();
    Simulation::run(&scenario.expand_counts(), Some(directory.path())).unwrap();
    let expected_dir = golden_dir().join(name);
    let bless = std::env::var_os("TFRC_BLESS").is_some();
    for file in FILES {
        let produced = std::fs::read_to_string(directory.path().join(file)).unwrap();
        let expected_path = expected_dir.join(file);
        if bless {
            std::fs::create_dir_all(&expected_dir).unwrap();
            std::fs::write(&expected_path, &produced).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_else(|error| {
            panic!(
                "{}: {error} (TFRC_BLESS=1 writes it)",
                expected_path.display()
            )
        });
        let (produced, expected) = (comparable(&produced), comparable(&expected));
        if produced != expected {
            let line = produced
                .lines()
                .zip(expected.lines())
                .position(|(a, b)| a != b)
                .unwrap_or_else(|| produced.lines().count().min(expected.lines().count()));
            panic!(
                "{name}/{file} differs from the golden file at line {}:\n  now:    {:?}\n  golden: {:?}",
                line + 1,
                produced.lines().nth(line),
                expected.lines().nth(line)
            );
        }
    }
}

#[test]
fn mixed_flows_through_red() {
    check("mixed");
}

#[test]
fn diffserv_af_with_losses() {
    check("af");
}

#[test]
fn mahimahi_trace_link() {
    check("trace");
}
