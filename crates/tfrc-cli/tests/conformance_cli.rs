//! `tfrc conformance`: a small matrix in ns-2 and ours, its files and verdicts, and the gate.

use assert_cmd::Command;
use std::collections::HashMap;

use tfrc_test_support::Scratch;

/// A CSV file's rows as column → cell maps.
fn records(path: &std::path::Path) -> Vec<HashMap<String, String>> {
    let (header, rows) = tfrc_test_support::read_csv(path);
    rows.into_iter()
        .map(|row| header.iter().cloned().zip(row).collect())
        .collect()
}

const MATRIX: &str = r#"
[defaults]
rate = "1.5Mbps"
rtt = "40ms"
duration = "12s"

[[cell]]
name = "one-tfrc"
group = "tfrc alone"
tfrc = 1

[[cell]]
name = "one-tcp"
group = "tcp alone"
tcp = 1
quick = true
expect = "agrees"
"#;

fn conformance(matrix: &std::path::Path, out: &std::path::Path, extra: &[&str]) -> Command {
    let mut command = Command::cargo_bin("tfrc").unwrap();
    command.args([
        "conformance",
        "--matrix",
        matrix.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    command.args(extra);
    command
}

#[test]
fn a_small_matrix_gives_verdicts_tables_and_a_page() {
    if !tfrc_test_support::ns2_available("a_small_matrix_gives_verdicts_tables_and_a_page") {
        return;
    }
    let scratch = Scratch::new();
    let matrix = scratch.write("matrix.toml", MATRIX);
    let out = scratch.join("out");
    let output = conformance(&matrix, &out, &["--replications", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    // The gate: one-tcp is expected to agree; whether it does decides the exit status.
    let tcp_agrees = stdout
        .lines()
        .any(|line| line.starts_with("one-tcp") && line.contains(" agrees "));
    assert_eq!(output.status.success(), tcp_agrees, "{stdout}");
    assert!(stdout.contains("of 2 cells agree"), "{stdout}");

    let table = records(&out.join("conformance.csv"));
    // Nine metrics per cell.
    assert_eq!(table.len(), 18);
    let row = |cell: &str, metric: &str| {
        table
            .iter()
            .find(|row| row["cell"] == cell && row["metric"] == metric)
            .unwrap_or_else(|| panic!("{cell} {metric}"))
            .clone()
    };
    let throughput = row("one-tfrc", "tfrc_throughput_bps");
    assert_eq!(throughput["ns2_n"], "3");
    assert_eq!(throughput["ours_n"], "3");
    let (ns2, ours): (f64, f64) = (
        throughput["ns2_mean"].parse().unwrap(),
        throughput["ours_mean"].parse().unwrap(),
    );
    // One flow alone fills most of 1.5 Mb/s in both.
    assert!(ns2 > 1.0e6 && ours > 1.0e6, "ns-2 {ns2}, ours {ours}");
    assert!(["agrees", "disagrees"].contains(&throughput["verdict"].as_str()));
    // No TCP in a TFRC-only cell: nothing to compare.
    assert_eq!(row("one-tfrc", "ratio")["verdict"], "n/a");
    assert_eq!(row("one-tcp", "tcp_timeouts")["verdict"], "reported");
    assert!(row("one-tfrc", "p")["ns2_mean"].parse::<f64>().unwrap() > 0.0);

    let runs = records(&out.join("runs.csv"));
    assert!(runs.iter().any(|run| run["cell"] == "one-tcp"
        && run["simulator"] == "ns2"
        && run["replication"] == "2"));
    for file in [
        "index.html",
        "runs/one-tfrc/0/ns2/scenario.toml",
        "runs/one-tfrc/2/ours/summary.json",
    ] {
        assert!(out.join(file).is_file(), "{file}");
    }
    let page = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(
        page.contains("cells agree") && page.contains("<svg"),
        "page"
    );
}

#[test]
fn quick_only_and_a_failing_ns2_fail_the_gate() {
    let scratch = Scratch::new();
    let matrix = scratch.write("matrix.toml", MATRIX);
    let out = scratch.join("out");
    // A stand-in ns-2 that always fails: the quick cell (expected to agree) fails, and so
    // does the command, naming it.
    let fake = scratch.write("ns", "#!/bin/sh\necho broken >&2\nexit 3\n");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = conformance(
        &matrix,
        &out,
        &[
            "--quick",
            "--replications",
            "2",
            "--ns",
            fake.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stdout.contains("one-tcp") && stdout.contains("failed"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("one-tfrc"),
        "--quick runs the quick cells only: {stdout}"
    );
    assert!(
        stderr.contains("expected to agree") && stderr.contains("one-tcp"),
        "{stderr}"
    );
    // Unknown cells and a missing ns-2 are errors that say so.
    let output = conformance(&matrix, &out, &["--only", "nope"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("--only nope: no such cell"));
    let output = conformance(&matrix, &out, &["--ns", "/nonexistent/ns"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&output.stderr).contains("ns-2 not found at /nonexistent/ns"));
}

/// The regression gate: the committed matrix's quick cells (expected to agree) still agree with
/// ns-2. Deterministic: every replication's seed derives from its cell's.
#[test]
fn the_committed_quick_matrix_agrees_with_ns2() {
    if !tfrc_test_support::ns2_available("the_committed_quick_matrix_agrees_with_ns2") {
        return;
    }
    let matrix =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/matrix.toml");
    let scratch = Scratch::new();
    let out = scratch.join("out");
    let output = conformance(&matrix, &out, &["--quick"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.contains("cells agree"), "{stdout}");
    let (agree, total) = summary
        .split_once(" of ")
        .map(|(a, rest)| {
            (
                a.trim().to_string(),
                rest.split_whitespace().next().unwrap_or("").to_string(),
            )
        })
        .unwrap();
    assert_eq!(agree, total, "{stdout}");
    assert!(total.parse::<u32>().unwrap() >= 10, "{stdout}");
}

/// The regression gate of today's TCPs: the `--quick` cells of `conformance/modern.toml`, ours
/// against ns-3.37. Every cell marked `expect = "agrees"` must agree; a cell measured to differ
/// carries its cause in the matrix (docs/conformance.md, "Today's TCP against ns-3").
#[test]
fn the_committed_quick_modern_matrix_passes_its_gate_against_ns3() {
    let missing = tfrc_ns3::missing_toolchain(&tfrc_ns3::BuildOptions::default());
    if !tfrc_test_support::can_run(
        "the_committed_quick_modern_matrix_passes_its_gate_against_ns3",
        missing,
    ) {
        return;
    }
    let scratch = Scratch::new();
    let out = scratch.join("out");
    let mut command = Command::cargo_bin("tfrc").unwrap();
    command.current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."));
    let output = command
        .args(["conformance", "--modern", "--quick", "--quiet", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("against ns-3.37"), "{stdout}");
    let rows = records(&out.join("conformance.csv"));
    assert!(rows.iter().any(|row| row.contains_key("ns3_mean")));
    assert!(rows.iter().all(|row| !row.contains_key("ns2_mean")));
    assert!(rows.len() >= 3 * 7, "{} rows", rows.len());
}

/// Run from a directory outside the clone, `tfrc conformance` still finds its default matrices
/// (the source tree's, `tfrc_cli::project_path`): an unknown cell is refused with the cells of
/// the matrix it read, not with "cannot read conformance/matrix.toml".
#[test]
fn the_default_matrices_are_found_from_any_directory() {
    let elsewhere = tempfile::tempdir().unwrap();
    for (modern, known) in [(false, "tfrc-4"), (true, "cubic-4")] {
        let mut command = Command::cargo_bin("tfrc").unwrap();
        command.current_dir(elsewhere.path()).arg("conformance");
        if modern {
            command.arg("--modern");
        }
        let output = command
            .args(["--only", "no-such-cell", "--quiet", "--out"])
            .arg(elsewhere.path().join("out"))
            .output()
            .unwrap();
        assert!(!output.status.success());
        let message = String::from_utf8_lossy(&output.stderr);
        let matrix = if modern { "modern.toml" } else { "matrix.toml" };
        assert!(
            message.contains("no such cell")
                && message.contains(&format!("conformance/{matrix}"))
                && message.contains(known),
            "{message}"
        );
    }
}
