//! `tfrc reproduce --quick`: the report has a section per experiment id, each with its numbers.

use std::path::Path;

use assert_cmd::Command;

fn experiment_ids() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut ids: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            (name.starts_with('e') && name.ends_with(".toml")).then(|| name.replace(".toml", ""))
        })
        .collect();
    ids.sort();
    ids
}

/// The text of one experiment's section of report.md.
fn section<'a>(report: &'a str, id: &str) -> &'a str {
    let start = report
        .find(&format!("<a id=\"{id}\"></a>"))
        .unwrap_or_else(|| panic!("no section for {id}"));
    let rest = &report[start + 1..];
    let end = rest.find("<a id=\"").map_or(rest.len(), |e| e + 1);
    &report[start..start + end]
}

#[test]
fn quick_reproduction_reports_every_experiment_with_numbers() {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("report");
    let output = Command::cargo_bin("tfrc")
        .unwrap()
        .args([
            "reproduce",
            "--quick",
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let ids = experiment_ids();
    assert!(ids.len() >= 21, "{ids:?}");
    let mut with_numbers = 0;
    for id in &ids {
        let text = section(&report, id);
        assert!(text.contains("**Verdict: "), "{id}: no verdict");
        assert!(text.contains("### Paper's result"), "{id}: no paper result");
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "{id}: not in index.html"
        );
        // A measurement row: | quantity | paper | ours | with a number in our column.
        let has_number = text
            .lines()
            .filter(|line| line.starts_with("| "))
            .any(|line| {
                let cells: Vec<&str> = line.split(" | ").collect();
                cells.len() >= 3
                    && !line.starts_with("| quantity")
                    && cells[2].chars().any(|c| c.is_ascii_digit())
            });
        if has_number {
            with_numbers += 1;
        } else {
            assert!(
                text.contains("**Verdict: not run** — "),
                "{id}: no measured number and no reason:\n{text}"
            );
        }
        // Every figure the section shows exists.
        for line in text.lines().filter(|line| line.starts_with("![")) {
            let path = line.rsplit_once("](").unwrap().1.trim_end_matches(')');
            assert!(out.join(path).is_file(), "{id}: missing figure {path}");
        }
    }
    assert!(
        with_numbers >= ids.len() - 3,
        "only {with_numbers} sections have numbers"
    );
    // claims.csv has one row per claim of claims.toml.
    let claims = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/claims.toml"),
    )
    .unwrap();
    let claim_count = claims
        .lines()
        .filter(|l| l.starts_with("[[experiment."))
        .count();
    let csv = std::fs::read_to_string(out.join("claims.csv")).unwrap();
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(reader.records().count(), claim_count);
    // The ns-2 conformance runs are beside ours when ns-2 is installed (always in CI).
    let ns_installed = Path::new("/usr/bin/ns").is_file();
    if ns_installed {
        for id in ["e000-const-bw", "e000-loss", "e000-udp"] {
            let text = section(&report, id);
            assert!(
                text.contains("mean receiver throughput, ours (profile=ns2) vs ns-2 | ns-2 "),
                "{id}: no ns-2 comparison:\n{text}"
            );
        }
    } else if std::env::var_os("CI").is_some() {
        panic!("CI is set but ns-2 (/usr/bin/ns) is not installed");
    } else {
        eprintln!("skipping the ns-2 part: /usr/bin/ns is not installed (apt-get install ns2)");
    }
}

#[test]
fn an_unknown_experiment_is_an_error_listing_the_known_ones() {
    let directory = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("tfrc")
        .unwrap()
        .args(["reproduce", "--only", "e999-nope", "--out"])
        .arg(directory.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("e999-nope") && message.contains("e000-loss"),
        "{message}"
    );
}
