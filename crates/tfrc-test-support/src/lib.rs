//! What the workspace's integration tests share: the rule that a test needing something the
//! machine may lack (ns-2, root and TUN for the testbed) skips with a printed reason outside CI
//! and fails in CI; a scratch directory to write scenario files into; the dumbbell topology most
//! tests run on; and reading a run's outputs back (CSV, JSON, a command's exit).
//!
//! A dev-dependency only: nothing here is part of any crate's API.

use std::path::{Path, PathBuf};
use std::process::Output;

/// Whether the tests run in CI (`CI` set to anything but empty or `false`): there every test
/// must run, and a missing tool is a failure rather than a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false")
}

/// Whether `test` can go on: `missing` is `None` when what it needs is there. Otherwise it
/// prints `skipping {test}: {reason}` and returns false, or panics in CI ([`in_ci`]).
pub fn can_run(test: &str, missing: Option<String>) -> bool {
    match missing {
        None => true,
        Some(reason) if in_ci() => panic!("{test}: CI is set but {reason}"),
        Some(reason) => {
            eprintln!("skipping {test}: {reason}");
            false
        }
    }
}

/// Where ns-2's `ns` binary is (the Debian package's `/usr/bin/ns`, or `ns` on the `PATH`).
pub fn ns2_binary() -> Option<PathBuf> {
    let debian = Path::new("/usr/bin/ns");
    if debian.is_file() {
        return Some(debian.to_path_buf());
    }
    on_path("ns")
}

/// The path of `program` if it is on the `PATH`.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|directory| directory.join(program))
        .find(|candidate| candidate.is_file())
}

/// [`can_run`] for a test that runs ns-2.35.
pub fn ns2_available(test: &str) -> bool {
    let missing = ns2_binary()
        .is_none()
        .then(|| "ns-2 is not installed (apt-get install ns2)".to_owned());
    can_run(test, missing)
}

/// [`can_run`] for a test that runs tshark.
pub fn tshark_available(test: &str) -> bool {
    let missing = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .map_or(true, |output| !output.status.success())
        .then(|| "tshark is not installed (apt-get install tshark)".to_owned());
    can_run(test, missing)
}

/// tshark's full decode (`-V`) of `capture` with the shipped Wireshark dissector
/// (`tools/wireshark/tfrc.lua`); panics with tshark's error if it fails.
pub fn dissect(capture: &Path) -> String {
    let dissector = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools/wireshark/tfrc.lua");
    let output = std::process::Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .arg("-X")
        .arg(format!("lua_script:{}", dissector.display()))
        .arg("-V")
        .output()
        .expect("tshark runs");
    succeeded(output)
}

/// The links of the dumbbell most tests use: `sender` —100 Mb/s, 1 ms— `router` —1 Mb/s,
/// 24 ms— `receiver` (base RTT 50 ms, DropTail 50 packets). Append it after `name` and
/// `duration`, then add flows.
pub const DUMBBELL_1MBPS_50MS: &str = r#"
[[link]]
between = ["sender", "router"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["router", "receiver"]
rate = "1Mbps"
delay = "24ms"
"#;

/// A `[[flow]]` of `kind` named `name` from `sender` to `receiver` (the dumbbell's ends), with
/// `extra` lines (`"target_rate = \"600kbps\""`) appended.
pub fn flow(name: &str, kind: &str, extra: &[&str]) -> String {
    let mut text = format!(
        "\n[[flow]]\nname = \"{name}\"\nkind = \"{kind}\"\nfrom = \"sender\"\nto = \"receiver\"\n"
    );
    for line in extra {
        text.push_str(line);
        text.push('\n');
    }
    text
}

/// A scratch directory, removed when dropped, to write scenario files into and run in.
pub struct Scratch {
    directory: tempfile::TempDir,
}

impl Scratch {
    /// A new empty directory under the system's temporary directory.
    pub fn new() -> Scratch {
        Scratch {
            directory: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.directory.path()
    }

    /// `name` inside the directory (not created).
    pub fn join(&self, name: &str) -> PathBuf {
        self.directory.path().join(name)
    }

    /// Writes `text` to `name` inside the directory and returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.join(name);
        std::fs::write(&path, text).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        path
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch::new()
    }
}

/// The standard output of a command that must have succeeded; otherwise the test fails with
/// its exit status and standard error.
pub fn succeeded(output: Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 standard output")
}

/// A JSON file (a run's `summary.json`), parsed.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// A CSV file's header and rows, as strings.
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut reader =
        csv::Reader::from_path(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let header = reader
        .headers()
        .expect("a CSV header")
        .iter()
        .map(str::to_owned)
        .collect();
    let rows = reader
        .records()
        .map(|record| {
            record
                .expect("a CSV row")
                .iter()
                .map(str::to_owned)
                .collect()
        })
        .collect();
    (header, rows)
}

/// Waits for `child` to exit, killing it (and failing the test with what it printed) if it
/// outlives `limit`: every process a test starts ends within a bound.
pub fn wait_bounded(mut child: std::process::Child, limit: std::time::Duration) -> Output {
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().expect("child status").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let output = child.wait_with_output().expect("killed child's output");
            panic!(
                "process did not end within {limit:?}; stdout: {}; stderr: {}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("child's output")
}

/// A UDP port on loopback that was free a moment ago (for a process that must be told its
/// port, such as `tfrc emulate --listen`).
pub fn free_udp_port() -> u16 {
    let probe = std::net::UdpSocket::bind("127.0.0.1:0").expect("a loopback UDP socket");
    probe.local_addr().expect("its address").port()
}

/// Spawns `command` (`tfrc recv --listen 127.0.0.1:0 --json …`) with its output piped and
/// returns it with the address it names in its first line on standard error ("Server listening
/// on ADDR"): the port the system chose.
pub fn spawn_listening(mut command: std::process::Command) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the command starts");
    let stderr = child.stderr.take().expect("piped standard error");
    let mut line = String::new();
    std::io::BufReader::new(stderr)
        .read_line(&mut line)
        .expect("a first line on standard error");
    let address = line
        .split_whitespace()
        .nth(3)
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_tool_skips_outside_ci_and_fails_inside() {
        assert!(can_run("present", None));
        if in_ci() {
            let result =
                std::panic::catch_unwind(|| can_run("absent", Some("x is missing".into())));
            assert!(result.is_err());
        } else {
            assert!(!can_run("absent", Some("x is missing".into())));
        }
    }

    #[test]
    fn scratch_files_and_outputs_read_back() {
        let scratch = Scratch::new();
        let csv_path = scratch.write("a.csv", "time_s,flow\n1,a\n2,b\n");
        let (header, rows) = read_csv(&csv_path);
        assert_eq!(header, ["time_s", "flow"]);
        assert_eq!(rows, [["1", "a"], ["2", "b"]]);
        let json = scratch.write("s.json", r#"{"seed": 3}"#);
        assert_eq!(read_json(&json)["seed"], 3);
        let text = format!(
            "name = \"d\"\nduration = \"1s\"\n{DUMBBELL_1MBPS_50MS}{}",
            flow("a", "tfrc", &["packet_size = 500"])
        );
        let scenario = tfrc_scenario::Scenario::from_str_named(&text, "d.toml").unwrap();
        assert_eq!(scenario.links.len(), 2);
        assert_eq!(scenario.flows[0].packet_size, 500);
        assert_eq!(
            scenario.base_rtt("sender", "receiver"),
            Some(core::time::Duration::from_millis(50))
        );
    }
}
