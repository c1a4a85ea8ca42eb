//! The host side of a testbed: network namespaces made and removed with `ip netns`, threads
//! moved into one (`setns`), process signals, and the state files that list what a testbed
//! made so that `down`, a crash watchdog or the next `up` can remove it.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

use serde::{Deserialize, Serialize};

use super::{NAME_PREFIX, STATE_DIRECTORY};
use crate::error::{failed, Error, IoContext, Result};

/// One host of a running testbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostInfo {
    /// Host name.
    pub name: String,
    /// Its network namespace.
    pub namespace: String,
    /// Its address.
    pub address: Ipv4Addr,
}

/// The state file of a testbed: what to remove.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StateFile {
    /// The process serving the testbed.
    pub pid: u32,
    /// The namespace prefix.
    pub prefix: String,
    /// The hosts.
    pub hosts: Vec<HostInfo>,
}

/// Why the root-only parts cannot run here, or `None` when they can (root, `/dev/net/tun`,
/// `ip`).
pub fn unavailable_reason() -> Option<String> {
    if effective_uid() != 0 {
        return Some("the testbed needs root (network namespaces and TUN devices)".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(output) if output.status.success() => None,
        _ => Some("the `ip` command (iproute2) is missing".into()),
    }
}

/// The effective user id of this process.
#[allow(unsafe_code)]
fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::geteuid() }
}

/// Sends `signal` to process `pid`. Only a single process is signalled: a pid of 0 or above
/// `i32::MAX` (which `kill` would read as a process group, or all processes) is refused.
#[allow(unsafe_code)]
pub fn signal_process(pid: u32, signal: libc::c_int) -> std::io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&pid| pid > 0)
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: kill takes plain integers and touches no memory of ours; at worst the process
    // is gone (ESRCH).
    if unsafe { libc::kill(pid, signal) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `ip` with these arguments; an error quotes the command and its stderr.
pub(super) fn ip(arguments: &[&str]) -> Result<()> {
    let output = Command::new("ip")
        .args(arguments)
        .stdin(Stdio::null())
        .output()
        .context("cannot run `ip` (iproute2)")?;
    if !output.status.success() {
        failed!(
            "`ip {}` failed: {}",
            arguments.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Names of the existing network namespaces.
pub fn list_namespaces() -> Vec<String> {
    let Ok(output) = Command::new("ip").args(["netns", "list"]).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Kills every process inside `namespace`, then deletes it. Errors are ignored (it may be gone).
pub fn remove_namespace(namespace: &str) {
    if let Ok(output) = Command::new("ip")
        .args(["netns", "pids", namespace])
        .output()
    {
        for pid in String::from_utf8_lossy(&output.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<u32>() {
                // A pid read from the kernel; at worst the process is gone.
                let _ = signal_process(pid, libc::SIGKILL);
            }
        }
    }
    let _ = Command::new("ip")
        .args(["netns", "del", namespace])
        .stderr(Stdio::null())
        .status();
}

fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid embedded in a namespace name `tfrcemu<pid>-<host>`, if any.
pub(super) fn pid_of_namespace(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Removes the leftovers of testbeds whose serving process is dead: their state files and
/// namespaces. Returns the namespaces removed.
pub fn remove_stale() -> Vec<String> {
    let mut removed = Vec::new();
    if let Ok(entries) = std::fs::read_dir(STATE_DIRECTORY) {
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(state) = serde_json::from_str::<StateFile>(&text) else {
                continue;
            };
            if !process_alive(state.pid) {
                for host in &state.hosts {
                    remove_namespace(&host.namespace);
                    removed.push(host.namespace.clone());
                }
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    for namespace in list_namespaces() {
        if let Some(pid) = pid_of_namespace(&namespace) {
            if !process_alive(pid) {
                remove_namespace(&namespace);
                removed.push(namespace);
            }
        }
    }
    removed
}

/// The state files of running testbeds.
pub fn running_testbeds() -> Vec<(PathBuf, StateFile)> {
    let mut found = Vec::new();
    if let Ok(entries) = std::fs::read_dir(STATE_DIRECTORY) {
        for entry in entries.flatten() {
            let path = entry.path();
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Ok(state) = serde_json::from_str::<StateFile>(&text) {
                    if process_alive(state.pid) {
                        found.push((path, state));
                    }
                }
            }
        }
    }
    found.sort_by(|a, b| a.1.prefix.cmp(&b.1.prefix));
    found
}

/// Runs `work` on a new thread that has entered the network namespace `namespace`; sockets it
/// opens live there. Returns what `work` returns.
pub fn in_namespace<T: Send + 'static>(
    namespace: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>> {
    let path = format!("/var/run/netns/{namespace}");
    let file = File::open(&path).with_context(|| format!("no network namespace {namespace}"))?;
    let (ready_sender, ready) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name(format!("ns-{namespace}"))
        .spawn(move || {
            if let Err(error) = enter_network_namespace(&file) {
                let _ = ready_sender.send(Err(error));
                panic!("setns failed");
            }
            let _ = ready_sender.send(Ok(()));
            work()
        })?;
    match ready.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(error)) => Err(Error::Failed(format!(
            "cannot enter namespace {namespace}: {error}"
        ))),
        Err(_) => Err(Error::Failed(format!("cannot enter namespace {namespace}"))),
    }
}

/// Moves the calling thread into the network namespace that `namespace` (an open
/// `/var/run/netns/…` file) refers to.
#[allow(unsafe_code)]
fn enter_network_namespace(namespace: &File) -> std::io::Result<()> {
    // SAFETY: setns takes a descriptor, valid for the call since `namespace` is borrowed, and a
    // constant; it touches no memory of ours and changes only the calling thread's namespace.
    if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
