//! `tfrc sim` as a user runs it.

use assert_cmd::Command;
use tfrc_test_support::{flow, read_json, succeeded, Scratch, DUMBBELL_1MBPS_50MS};

/// Two flows, TFRC and TCP, on the dumbbell for 10 s, seed 3.
fn scenario() -> String {
    format!(
        "name = \"cli\"\nduration = \"10s\"\nseed = 3\n{DUMBBELL_1MBPS_50MS}{}{}",
        flow("a", "tfrc", &[]),
        flow("t", "tcp", &[])
    )
}

fn tfrc() -> Command {
    Command::cargo_bin("tfrc").unwrap()
}

/// The texts of an SVG figure (title, axis labels, ticks, legend), trimmed.
fn svg_texts(svg: &str) -> Vec<&str> {
    svg.split("</text>")
        .filter_map(|part| part.rsplit('>').next())
        .map(str::trim)
        .collect()
}

/// `tfrc sim FILE --out OUT`.
fn sim(file: &std::path::Path, out: &std::path::Path) -> Command {
    let mut command = tfrc();
    command.args([
        "sim",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    command
}

#[test]
fn sim_writes_the_four_files_and_prints_a_summary_table() {
    let directory = Scratch::new();
    let file = directory.write("cli.toml", &scenario());
    let out = directory.join("out");
    let table = succeeded(sim(&file, &out).output().unwrap());
    assert!(
        table.contains("goodput kb/s") && table.contains("Jain index"),
        "{table}"
    );
    for name in [
        "flows.csv",
        "state.csv",
        "links.csv",
        "summary.json",
        "scenario.toml",
    ] {
        assert!(out.join(name).is_file(), "{name} missing");
    }
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["seed"], 3);
    // The run names the binary that made it, version and git commit, as `tfrc --version` does.
    let version = succeeded(
        Command::new(env!("CARGO_BIN_EXE_tfrc"))
            .arg("--version")
            .output()
            .unwrap(),
    );
    assert_eq!(summary["tool"].as_str(), Some(version.trim()));
    assert!(version.contains("(git "), "{version}");
    // 10 s, both flows share the 1 Mb/s link.
    let total: f64 = (0..2)
        .map(|i| summary["flows"][i]["goodput_bps"].as_f64().unwrap())
        .sum();
    assert!(total > 800_000.0, "{total}");
}

#[test]
fn seed_and_set_override_the_file() {
    let directory = Scratch::new();
    let file = directory.write("cli.toml", &scenario());
    let out = directory.join("out");
    sim(&file, &out)
        .arg("--quiet")
        .args([
            "--seed",
            "42",
            "--set",
            "duration=4s",
            "--set",
            "flow.a.target_rate=900kbps",
        ])
        .assert()
        .success();
    let summary = read_json(&out.join("summary.json"));
    assert_eq!(summary["seed"], 42);
    assert_eq!(summary["duration_s"], 4.0);
    let state = std::fs::read_to_string(out.join("state.csv")).unwrap();
    assert!(
        state.lines().any(|line| line.contains(",900000.0,")),
        "{state}"
    );
}

#[test]
fn a_bad_key_is_an_error_naming_file_and_key() {
    let directory = Scratch::new();
    let file = directory.write(
        "bad.toml",
        &scenario().replace("delay = \"24ms\"", "dealy = \"24ms\""),
    );
    let output = tfrc()
        .args([
            "sim",
            file.to_str().unwrap(),
            "--out",
            directory.path().join("o").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("bad.toml") && message.contains("dealy"),
        "{message}"
    );
    assert!(!message.contains("panicked"), "{message}");
}

/// A sweep writes a directory per variant, and each variant's summary.json carries its grid
/// parameters as values (a number where the grid gives one), so a table of summaries can be
/// grouped by them without parsing directory names.
#[test]
fn a_sweep_writes_one_directory_per_variant() {
    let directory = Scratch::new();
    let text = format!(
        "{}\n[sweep]\n\"link.1.delay\" = [\"24ms\", \"49ms\"]\n\"flow.a.packet_size\" = [500]\n",
        scenario()
    );
    let file = directory.write("sweep.toml", &text);
    let out = directory.join("out");
    sim(&file, &out).arg("--quiet").assert().success();
    for delay in ["24ms", "49ms"] {
        let variant = format!("delay={delay},packet_size=500");
        let path = out.join(&variant).join("summary.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{variant} missing"));
        let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            summary["parameters"],
            serde_json::json!({"delay": delay, "packet_size": 500}),
            "{variant}"
        );
    }
}

/// `tfrc --version` names the git commit it was built from (or says it is unknown outside a
/// git checkout), so a result can be traced to the code that made it.
#[test]
fn version_names_the_git_commit() {
    let stdout = succeeded(tfrc().arg("--version").output().unwrap());
    let version = stdout.trim();
    let rest = version
        .strip_prefix(&format!("tfrc {} (git ", env!("CARGO_PKG_VERSION")))
        .and_then(|rest| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{version}"));
    let commit = rest.strip_suffix("-dirty").unwrap_or(rest);
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{version}"
    );
}

/// `tfrc plot` overlays saved runs: two seeds of one scenario on one PNG and one SVG; a
/// directory that is not a run, or a flow no run has, is an error naming it.
#[test]
fn plot_overlays_saved_runs() {
    let directory = Scratch::new();
    let file = directory.write("cli.toml", &scenario());
    for (seed, name) in [("1", "one"), ("2", "two")] {
        sim(&file, &directory.join(name))
            .args(["--quiet", "--seed", seed])
            .assert()
            .success();
    }
    let runs = [directory.join("one"), directory.join("two")];
    for (image, kind) in [("overlay.png", "throughput"), ("rtt.svg", "rtt")] {
        let out = directory.join(image);
        let printed = succeeded(
            tfrc()
                .arg("plot")
                .args(&runs)
                .args(["--kind", kind, "--out", out.to_str().unwrap()])
                .output()
                .unwrap(),
        );
        assert!(printed.contains(image), "{printed}");
        let size = std::fs::metadata(&out).unwrap().len();
        assert!(size > 10_000, "{image}: {size} bytes");
    }
    let svg = std::fs::read_to_string(directory.join("rtt.svg")).unwrap();
    assert!(
        svg.contains("one: a") && svg.contains("two: a"),
        "both runs in the legend"
    );

    // flent's kinds: a state.csv column over time, and the CDF of a flow's samples. The CDF of
    // flow a's receiver throughput has a step (two points) per flows.csv row of that flow.
    let rows_of_a = std::fs::read_to_string(runs[0].join("flows.csv"))
        .unwrap()
        .lines()
        .filter(|line| line.split(',').nth(1) == Some("a"))
        .count();
    assert!(rows_of_a >= 10, "{rows_of_a} rows");
    for (image, args, label) in [
        ("state.svg", vec!["--kind", "state"], "x_bps"),
        ("p.svg", vec!["--kind", "state", "--column", "p"], "p"),
        ("cdf.svg", vec!["--kind", "cdf"], "fraction of samples ≤ x"),
        (
            "cdf-rtt.svg",
            vec!["--kind", "cdf", "--column", "rtt_s"],
            "rtt_s",
        ),
    ] {
        let out = directory.join(image);
        succeeded(
            tfrc()
                .arg("plot")
                .args(&runs)
                .args(&args)
                .arg("--out")
                .arg(&out)
                .output()
                .unwrap(),
        );
        let svg = std::fs::read_to_string(&out).unwrap();
        let texts = svg_texts(&svg);
        assert!(
            texts.contains(&label),
            "{image}: no axis {label}: {texts:?}"
        );
        assert!(
            texts.contains(&"one: a") && texts.contains(&"two: a"),
            "{image}"
        );
        if image == "cdf.svg" {
            let longest = svg
                .split("<polyline")
                .skip(1)
                .filter_map(|line| line.split("points=\"").nth(1)?.split('"').next())
                .map(|points| points.split_whitespace().count())
                .max();
            assert_eq!(longest, Some(2 * rows_of_a), "a step per sample");
        }
    }
    for (args, needle) in [
        (
            vec!["--kind", "state", "--column", "bogus"],
            "the columns are",
        ),
        (
            vec!["--kind", "throughput", "--column", "p"],
            "--column applies to",
        ),
    ] {
        let output = tfrc()
            .arg("plot")
            .args(&runs)
            .args(&args)
            .arg("--out")
            .arg(directory.join("bad.svg"))
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }

    // Pantheon's view: one point per flow and run, at its p95 delay and goodput; a run
    // without delay percentiles (ns-2's, the testbed's) has nothing to draw.
    let scatter = directory.join("delay.svg");
    succeeded(
        tfrc()
            .arg("plot")
            .args(&runs)
            .args(["--kind", "delay-throughput", "--out"])
            .arg(&scatter)
            .output()
            .unwrap(),
    );
    let svg = std::fs::read_to_string(&scatter).unwrap();
    assert!(svg.contains("95th percentile") && svg.contains("goodput (Mb/s)"));
    let texts = svg_texts(&svg);
    assert!(
        texts.contains(&"one") && texts.contains(&"two"),
        "one legend entry per run: {texts:?}"
    );
    assert!(
        svg.matches("<circle").count() >= 4,
        "a point per flow and run, and legend markers"
    );
    let summary_path = runs[0].join("summary.json");
    let text = std::fs::read_to_string(&summary_path).unwrap();
    let mut summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    for flow in summary["flows"].as_array_mut().unwrap() {
        flow.as_object_mut().unwrap().remove("delay_p95_s");
    }
    std::fs::write(&summary_path, summary.to_string()).unwrap();
    let none = tfrc()
        .arg("plot")
        .arg(&runs[0])
        .args(["--kind", "delay-throughput", "--out"])
        .arg(directory.join("none.png"))
        .output()
        .unwrap();
    assert!(!none.status.success());
    assert!(
        String::from_utf8_lossy(&none.stderr).contains("one-way delay percentile"),
        "{}",
        String::from_utf8_lossy(&none.stderr)
    );
    std::fs::write(&summary_path, text).unwrap();

    let missing = tfrc()
        .args(["plot", directory.join("nowhere").to_str().unwrap(), "--out"])
        .arg(directory.join("x.png"))
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("nowhere: not a run directory"));
    let unknown = tfrc()
        .arg("plot")
        .args(&runs)
        .args(["--flow", "zz", "--out"])
        .arg(directory.join("x.png"))
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("--flow zz"));
}

/// Runs `tfrc sim --pcap` on one TFRC flow `a` over the 50 ms dumbbell for `duration`, in a
/// scratch directory (`out/`, `pcap/`); returns the directory and the scenario file.
fn sim_with_pcap(duration: &str) -> (tfrc_test_support::Scratch, std::path::PathBuf) {
    let scratch = tfrc_test_support::Scratch::new();
    let scenario = scratch.write(
        "p.toml",
        &format!(
            "name = \"p\"\nduration = \"{duration}\"\n{}{}",
            tfrc_test_support::DUMBBELL_1MBPS_50MS,
            tfrc_test_support::flow("a", "tfrc", &[])
        ),
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrc"))
        .arg("sim")
        .arg(&scenario)
        .arg("--out")
        .arg(scratch.join("out"))
        .arg("--pcap")
        .arg(scratch.join("pcap"))
        .arg("-q")
        .output()
        .unwrap();
    tfrc_test_support::succeeded(output);
    (scratch, scenario)
}

/// `tfrc sim --pcap DIR` writes one capture per flow, in the pcap format (nanosecond magic,
/// raw IP link type), and a bad directory is named in the error.
#[test]
fn sim_pcap_writes_one_capture_per_flow() {
    let (scratch, scenario) = sim_with_pcap("2s");
    let bytes = std::fs::read(scratch.join("pcap").join("a.pcap")).unwrap();
    // Big-endian whatever the machine, so that a run's files are the same everywhere.
    assert_eq!(
        &bytes[..4],
        &0xa1b2_3c4du32.to_be_bytes(),
        "nanosecond pcap magic"
    );
    assert_eq!(
        u32::from_be_bytes(bytes[20..24].try_into().unwrap()),
        101,
        "LINKTYPE_RAW"
    );
    assert!(bytes.len() > 24 + 20 * (16 + 60), "{} bytes", bytes.len());
    // A file where the directory should be.
    let blocked = scratch.write("blocked", "");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_tfrc"))
        .arg("sim")
        .arg(&scenario)
        .arg("--out")
        .arg(scratch.join("out2"))
        .arg("--pcap")
        .arg(&blocked)
        .arg("-q")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("blocked"), "{stderr}");
}

/// The shipped Wireshark dissector (`tools/wireshark/tfrc.lua`) decodes a simulator capture:
/// tshark names TFRC data and feedback and shows their fields.
#[test]
fn the_wireshark_dissector_decodes_a_simulator_capture() {
    if !tfrc_test_support::tshark_available("the_wireshark_dissector_decodes_a_simulator_capture") {
        return;
    }
    let (scratch, _) = sim_with_pcap("3s");
    let text = tfrc_test_support::dissect(&scratch.join("pcap").join("a.pcap"));
    for field in [
        "TFRC data",
        "Sequence number: 1",
        "Send timestamp (ns)",
        "Session token",
        "TFRC feedback",
        "X_recv (bytes/s)",
        "Loss event rate p",
        "Receipt proof: packets in the run",
        "Loss interval I_0 (open)",
        "Data part (packets, proven)",
    ] {
        assert!(text.contains(field), "tshark did not show {field:?}");
    }
}
