//! `tfrc rmcat`: every RFC 8867 case file runs over the three protocols into one report, with
//! a figure per case and protocol and RFC 8868's figures in `rmcat.csv` and `cases.csv`.

use std::path::Path;

use assert_cmd::Command;

fn case_files() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/rmcat");
    let mut cases: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".toml").map(str::to_owned)
        })
        .collect();
    cases.sort();
    cases
}

fn rmcat(args: &[&str]) -> std::process::Output {
    Command::cargo_bin("tfrc")
        .unwrap()
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .arg("rmcat")
        .args(args)
        .output()
        .unwrap()
}

/// The stderr of a run that must fail.
fn failed(output: std::process::Output) -> String {
    assert!(!output.status.success(), "succeeded: {output:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn quick_rmcat_reports_every_case_over_every_protocol() {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("rmcat");
    tfrc_test_support::succeeded(rmcat(&[
        "--quick",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let cases = case_files();
    assert!(cases.len() >= 7, "{cases:?}");
    let mut reader = csv::Reader::from_path(out.join("cases.csv")).unwrap();
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let headers = reader.headers().unwrap().clone();
    let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
    for case in &cases {
        for protocol in ["tfrc", "gtfrc", "tfrc-sp"] {
            assert!(
                report.contains(&format!("## {case}/{protocol} — ")),
                "no section for {case}/{protocol}"
            );
            let figure = out.join("figures").join(case);
            assert!(
                std::fs::read_dir(&figure).unwrap().any(|entry| entry
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(protocol)),
                "no figure for {case}/{protocol} in {}",
                figure.display()
            );
            let line = rows
                .iter()
                .find(|row| &row[column("case")] == case && &row[column("protocol")] == protocol)
                .unwrap_or_else(|| panic!("no cases.csv line for {case}/{protocol}"));
            // Every case has media frames, so a share of frames missed.
            let missed: f64 = line[column("frames_missed_pct")].parse().unwrap();
            assert!(
                (0.0..=100.0).contains(&missed),
                "{case}/{protocol}: {missed}"
            );
        }
    }
    // The per-flow table has the media flows' frames.
    let flows = std::fs::read_to_string(out.join("rmcat.csv")).unwrap();
    assert!(flows.lines().next().unwrap().contains("frames_missed_pct"));
    assert!(flows.contains(",video,") && flows.contains(",audio,"));
}

#[test]
fn rmcat_errors_name_the_bad_input() {
    let directory = tempfile::tempdir().unwrap();
    let out = directory.path().join("x");
    let text = failed(rmcat(&["--only", "9.9", "--out", out.to_str().unwrap()]));
    assert!(text.contains("--only 9.9"), "{text}");
    assert!(text.contains("5.1-variable-capacity"), "{text}");
    let text = failed(rmcat(&[
        "--protocols",
        "quic",
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(text.contains("quic") && text.contains("tfrc-sp"), "{text}");
    // A folder whose scenario has no media flow.
    let cases = directory.path().join("cases");
    std::fs::create_dir_all(&cases).unwrap();
    std::fs::write(
        cases.join("plain.toml"),
        "name = \"plain\"\nduration = \"2s\"\n[[link]]\nbetween = [\"s\", \"r\"]\nrate = \"1Mbps\"\n\
         delay = \"10ms\"\n[[flow]]\nname = \"a\"\nkind = \"tfrc\"\nfrom = \"s\"\nto = \"r\"\n",
    )
    .unwrap();
    let text = failed(rmcat(&[
        "--scenarios",
        cases.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        text.contains("plain.toml") && text.contains("no media flow"),
        "{text}"
    );
}
