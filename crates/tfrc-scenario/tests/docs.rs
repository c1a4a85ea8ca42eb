//! The examples of docs/scenario-format.md parse, and the reference example there is the one
//! the tests use.

use std::path::Path;

use tfrc_scenario::Scenario;

fn docs_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scenario-format.md")
}

/// The ```toml blocks of the reference.
fn toml_blocks() -> Vec<String> {
    let text = std::fs::read_to_string(docs_path()).expect("docs/scenario-format.md exists");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn every_toml_example_in_the_reference_parses_and_expands() {
    let blocks = toml_blocks();
    assert!(blocks.len() >= 4, "found {} toml blocks", blocks.len());
    let docs_dir = docs_path().parent().unwrap().to_path_buf();
    for block in &blocks {
        let scenario = Scenario::from_str_in_dir(block, "docs/scenario-format.md", &docs_dir)
            .unwrap_or_else(|error| panic!("{error}\n{block}"));
        let variants = scenario
            .expand()
            .unwrap_or_else(|error| panic!("{error}\n{block}"));
        for variant in &variants {
            let again = Scenario::from_str_named(&variant.to_toml_string(), "again").unwrap();
            assert_eq!(&again, variant);
        }
        match scenario.name.as_str() {
            "e002-grid" => {
                assert_eq!(variants.len(), 18);
                assert_eq!(
                    variants[0].name,
                    "e002-grid[flows=2,delay=250ms,rtt_ref=none]"
                );
                assert_eq!(
                    variants[1].name,
                    "e002-grid[flows=2,delay=250ms,rtt_ref=250ms]"
                );
                assert_eq!(
                    variants[17].name,
                    "e002-grid[flows=4,delay=500ms,rtt_ref=125ms]"
                );
                assert!(variants[0]
                    .to_toml_string()
                    .contains("[variant]\nflows = \"2\"\ndelay = \"250ms\"\nrtt_ref = \"none\"\n"));
            }
            "friendliness" => {
                assert_eq!(variants.len(), 5);
                assert_eq!(variants[4].name, "friendliness[flows=32]");
                assert_eq!(variants[4].flows.len(), 32 + 32 + 3);
            }
            "umts" => {
                assert_eq!(variants.len(), 2);
                let names = |v: &Scenario| -> Vec<String> {
                    v.flows.iter().map(|f| f.name.clone()).collect()
                };
                assert_eq!(names(&variants[0]), ["tcp"]);
                assert_eq!(names(&variants[1]), ["tcp", "tfrc"]);
            }
            _ => assert_eq!(variants.len(), 1),
        }
    }
}

#[test]
fn the_reference_example_is_the_tested_example() {
    let fixture = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/example.toml"),
    )
    .unwrap();
    assert_eq!(toml_blocks()[0], fixture);
}
