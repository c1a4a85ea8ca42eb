//! The conformance matrix (`conformance/matrix.toml`): cells described by factors (flows,
//! bottleneck, RTT, queue, loss, cross traffic, TFRC and TCP profiles) or by a scenario file, and the
//! scenario of each replication of a cell.
//!
//! A factor cell becomes a dumbbell written in the scenario format (docs/scenario-format.md),
//! so that every run is a scenario file `tfrc sim` and `tfrc ns2` run alike:
//!
//! - flow i has its own access links `s<i> — r1` and `r2 — d<i>` at 10 × the bottleneck rate,
//!   whose one-way delays replication k draws uniformly in [1, 5] ms (both ends, per flow);
//! - the bottleneck `r1 — r2` has the cell's rate and the one-way delay rtt/2 − 6 ms (at least
//!   1 ms), so that with the mean access delays (3 ms at each end) the base RTT is the cell's;
//! - its queue, both ways: DropTail of `buffer_bdp` × BDP packets (BDP = rate × rtt / 8 /
//!   packet size, at least 2), or RED with min_th = max(5, BDP/4), max_th = 3 min_th, limit =
//!   max(2 BDP, 4 min_th), max_p 0.1, weight 0.002 (ns-2's classic values otherwise);
//! - `ecn = true` (RED only): the RED queues mark ECT packets instead of dropping them early
//!   (ns-2's `setbit_`) and the TFRC flows send ECT (ns-2's `ecn_`);
//! - Bernoulli loss at rate `loss` on the bottleneck's forward direction;
//! - `cross = "pareto"`: one Pareto on/off UDP source (`x0 → y0`, own access links) at half the
//!   bottleneck rate while on (500 ms on, 500 ms off, shape 1.5: ns-2's defaults);
//! - every flow starts uniformly in [0, 1) s; the seed is [`replication_seed`] of the cell's.
//!
//! A scenario cell (`scenario = "…"`, with `set = […]` overrides) runs that file; replication k
//! is [`Scenario::replicate`] (another seed, starts jittered by up to one base RTT), since its
//! topology is the paper's and has no access links of ours to vary.
//!
//! The matrix names its reference (`reference = "ns2"`, the default, or `"ns3"`): ns-2.35 for the
//! papers' TCPs and TFRC (`conformance/matrix.toml`), ns-3.37 for today's TCPs
//! (`conformance/modern.toml`). In an ns-3 matrix a cell may hold two TCP classes (`tcp` flows of
//! `tcp_variant` and `tcp2` flows of `tcp2_variant`), whose flows are named by their variant
//! (`cubic1`, `bbr1`, …) so the metrics find each class.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;
use tfrc_output::FlowKind;
use tfrc_scenario::units::{parse_duration, parse_rate};
use tfrc_scenario::{replication_seed, Scenario};

/// The factors of a cell; in `[defaults]` and in each `[[cell]]`, where a cell's value wins.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFactors {
    name: Option<String>,
    group: Option<String>,
    tfrc: Option<u32>,
    tcp: Option<u32>,
    tcp_variant: Option<String>,
    tcp2: Option<u32>,
    tcp2_variant: Option<String>,
    profile: Option<String>,
    tcp_profile: Option<String>,
    delayed_ack: Option<bool>,
    rate: Option<String>,
    rtt: Option<String>,
    queue: Option<String>,
    ecn: Option<bool>,
    buffer_bdp: Option<f64>,
    loss: Option<f64>,
    cross: Option<String>,
    duration: Option<String>,
    packet_size: Option<u32>,
    seed: Option<u64>,
    scenario: Option<String>,
    set: Option<Vec<String>>,
    variant: Option<String>,
    quick: Option<bool>,
    expect: Option<String>,
    note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatrix {
    /// The reference simulator: `ns2` (default) or `ns3`.
    reference: Option<String>,
    #[serde(default)]
    defaults: RawFactors,
    cell: Vec<RawFactors>,
}

/// The simulator a matrix compares ours with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// ns-2.35 through `tfrc ns2` (the papers' TCPs and TFRC).
    Ns2,
    /// ns-3.37 through `tfrc ns3` (today's TCPs).
    Ns3,
}

impl Reference {
    /// The directory and column prefix: `ns2`, `ns3`.
    pub fn key(self) -> &'static str {
        match self {
            Reference::Ns2 => "ns2",
            Reference::Ns3 => "ns3",
        }
    }

    /// The name in prose: `ns-2.35`, `ns-3.37`.
    pub fn label(self) -> &'static str {
        match self {
            Reference::Ns2 => "ns-2.35",
            Reference::Ns3 => "ns-3.37",
        }
    }
}

/// A matrix file: its reference and its cells.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// What ours is compared with.
    pub reference: Reference,
    /// The cells, in file order.
    pub cells: Vec<Cell>,
}

/// The queue of a factor cell's bottleneck.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum QueueKind {
    /// DropTail of `buffer_bdp` × BDP packets.
    DropTail,
    /// RED sized from the BDP (module docs).
    Red,
}

/// What a cell runs.
#[derive(Debug, Clone)]
pub enum CellSetup {
    /// A dumbbell from factors (module docs).
    Factors(Factors),
    /// A scenario file (resolved path) with `--set` overrides.
    Scenario {
        /// The file.
        path: PathBuf,
        /// Overrides, in `--set` syntax.
        set: Vec<String>,
        /// For a file with a sweep, the variant to run: a label of its name
        /// (`protocol=tfrc` picks `e000-af-exact[protocol=tfrc]`).
        variant: Option<String>,
    },
}

/// The factors of a dumbbell cell.
#[derive(Debug, Clone)]
pub struct Factors {
    /// TFRC flows.
    pub tfrc: u32,
    /// TCP flows of the first class.
    pub tcp: u32,
    /// Their variant: `reno`, `newreno`, `sack`, `cubic` or `bbr`.
    pub tcp_variant: String,
    /// TCP flows of the second class (an ns-3 matrix).
    pub tcp2: u32,
    /// Their variant (another than `tcp_variant`).
    pub tcp2_variant: String,
    /// TCP flows are named by their variant (`cubic1`) rather than `tcp1` (an ns-3 matrix).
    pub named_by_variant: bool,
    /// The TFRC flows' profile: `ns2` or `rfc5348`.
    pub profile: String,
    /// The TCP flows' profile: `ns2` or `rfc`.
    pub tcp_profile: String,
    /// The TCP sinks delay their ACKs (one per two segments or 100 ms).
    pub delayed_ack: bool,
    /// Bottleneck rate, bits/s.
    pub rate_bps: u64,
    /// Base round-trip time.
    pub rtt: core::time::Duration,
    /// The bottleneck's queue.
    pub queue: QueueKind,
    /// RED marks ECT packets and the TFRC flows send ECT.
    pub ecn: bool,
    /// DropTail size in bandwidth-delay products.
    pub buffer_bdp: f64,
    /// Bernoulli loss rate on the bottleneck.
    pub loss: f64,
    /// Pareto on/off cross traffic.
    pub pareto_cross: bool,
    /// Run length.
    pub duration: core::time::Duration,
    /// Packet size of every flow, bytes.
    pub packet_size: u32,
}

/// One cell of the matrix.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Unique name (`[a-z0-9.-]`).
    pub name: String,
    /// The factor it varies (for the page's grouping).
    pub group: String,
    /// The cell's seed (replication seeds derive from it).
    pub seed: u64,
    /// What it runs.
    pub setup: CellSetup,
    /// Part of `--quick`.
    pub quick: bool,
    /// Expected to agree (`expect = "agrees"`): a disagreement fails the command (the
    /// regression gate). `expect = "differs"` cells carry their cause in `note`.
    pub expect_agree: bool,
    /// Why the cell is expected to differ, or what it shows.
    pub note: Option<String>,
}

/// The matrix file, checked: its reference, unique cell names, known factor values.
pub fn load(path: &Path) -> Result<Matrix> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let raw: RawMatrix =
        toml::from_str(&text).with_context(|| format!("{}: not a matrix file", path.display()))?;
    let reference = match raw.reference.as_deref() {
        None | Some("ns2") => Reference::Ns2,
        Some("ns3") => Reference::Ns3,
        Some(other) => bail!(
            "{}: `reference` {other:?}: one of \"ns2\", \"ns3\"",
            path.display()
        ),
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let mut cells: Vec<Cell> = Vec::new();
    for (index, cell) in raw.cell.iter().enumerate() {
        let merged = merge(&raw.defaults, cell);
        let label = merged
            .name
            .clone()
            .unwrap_or_else(|| format!("#{}", index + 1));
        let built = build(&merged, base, reference)
            .with_context(|| format!("{}: cell {label}", path.display()))?;
        if cells.iter().any(|other| other.name == built.name) {
            bail!("{}: cell {label} is named twice", path.display());
        }
        cells.push(built);
    }
    if cells.is_empty() {
        bail!("{}: no [[cell]]", path.display());
    }
    Ok(Matrix { reference, cells })
}

fn merge(defaults: &RawFactors, cell: &RawFactors) -> RawFactors {
    macro_rules! pick {
        ($($field:ident),*) => {
            RawFactors { $($field: cell.$field.clone().or_else(|| defaults.$field.clone()),)* }
        };
    }
    let mut merged = pick!(
        name,
        group,
        tfrc,
        tcp,
        tcp_variant,
        tcp2,
        tcp2_variant,
        profile,
        tcp_profile,
        delayed_ack,
        rate,
        rtt,
        queue,
        ecn,
        buffer_bdp,
        loss,
        cross,
        duration,
        packet_size,
        seed,
        scenario,
        set,
        variant,
        quick,
        expect,
        note
    );
    // A name, a note and a scenario belong to one cell.
    merged.name.clone_from(&cell.name);
    merged.note.clone_from(&cell.note);
    merged.scenario.clone_from(&cell.scenario);
    merged
}

fn build(raw: &RawFactors, base: &Path, reference: Reference) -> Result<Cell> {
    let name = raw.name.clone().context("`name` is required")?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    {
        bail!("`name` {name:?}: use lowercase letters, digits, '-' and '.'");
    }
    let expect_agree = match raw.expect.as_deref() {
        None => false,
        Some("agrees") => true,
        // A cell known to differ says why: the documented cause.
        Some("differs") if raw.note.is_some() => false,
        Some("differs") => bail!("`expect = \"differs\"` needs a `note` naming the cause"),
        Some(other) => bail!("`expect` {other:?}: one of \"agrees\", \"differs\""),
    };
    let setup = match &raw.scenario {
        Some(file) => CellSetup::Scenario {
            path: base.join(file),
            set: raw.set.clone().unwrap_or_default(),
            variant: raw.variant.clone(),
        },
        None => CellSetup::Factors(factors(raw, reference)?),
    };
    Ok(Cell {
        name,
        group: raw.group.clone().unwrap_or_else(|| "other".to_string()),
        seed: raw.seed.unwrap_or(1),
        setup,
        quick: raw.quick.unwrap_or(false),
        expect_agree,
        note: raw.note.clone(),
    })
}

/// The TCP variants a factor cell may name.
const TCP_VARIANTS: [&str; 5] = ["reno", "newreno", "sack", "cubic", "bbr"];

/// `value` (the first of `allowed` when absent) if `allowed` has it, else an error naming `key`.
fn one_of(key: &str, value: Option<&str>, allowed: &[&str]) -> Result<String> {
    let value = value.unwrap_or(allowed[0]);
    if !allowed.contains(&value) {
        bail!("`{key}` {value:?}: one of {}", allowed.join(", "));
    }
    Ok(value.to_string())
}

/// A cell's TCP classes: `tcp` flows of `tcp_variant`, `tcp2` flows of `tcp2_variant`.
struct TcpClasses {
    tcp: u32,
    tcp_variant: String,
    tcp2: u32,
    tcp2_variant: String,
}

/// The cell's TCP classes, checked: known variants, two different ones, a second class only
/// against ns-3.
fn tcp_classes(raw: &RawFactors, reference: Reference) -> Result<TcpClasses> {
    let tcp_variant = raw.tcp_variant.clone().unwrap_or_else(|| "sack".into());
    let tcp2_variant = raw.tcp2_variant.clone().unwrap_or_else(|| "newreno".into());
    for (key, variant) in [
        ("tcp_variant", &tcp_variant),
        ("tcp2_variant", &tcp2_variant),
    ] {
        if !TCP_VARIANTS.contains(&variant.as_str()) {
            bail!("`{key}` {variant:?}: one of {}", TCP_VARIANTS.join(", "));
        }
    }
    let tcp2 = raw.tcp2.unwrap_or(0);
    if tcp2 > 0 && tcp2_variant == tcp_variant {
        bail!("`tcp2_variant` {tcp2_variant:?} is `tcp_variant`'s: the two classes differ");
    }
    if tcp2 > 0 && reference == Reference::Ns2 {
        bail!("`tcp2`: two TCP classes are a matrix with `reference = \"ns3\"`");
    }
    Ok(TcpClasses {
        tcp: raw.tcp.unwrap_or(0),
        tcp_variant,
        tcp2,
        tcp2_variant,
    })
}

/// The TCP profiles a matrix may run (`tcp_profile`): those of `tfrc_scenario::TcpProfile`.
const TCP_PROFILES: [&str; 3] = ["ns2", "rfc", "ns3"];

fn factors(raw: &RawFactors, reference: Reference) -> Result<Factors> {
    let tfrc = raw.tfrc.unwrap_or(0);
    let classes = tcp_classes(raw, reference)?;
    let flows = tfrc + classes.tcp + classes.tcp2;
    if flows == 0 || flows > 64 {
        bail!("`tfrc` + `tcp` + `tcp2` is {flows}: give 1 to 64 flows");
    }
    let TcpClasses {
        tcp,
        tcp_variant,
        tcp2,
        tcp2_variant,
    } = classes;
    let profile = one_of("profile", raw.profile.as_deref(), &["ns2", "rfc5348"])?;
    let tcp_profile = one_of("tcp_profile", raw.tcp_profile.as_deref(), &TCP_PROFILES)?;
    let rate_text = raw.rate.as_deref().unwrap_or("10Mbps");
    let rate_bps = parse_rate(rate_text)
        .map_err(|error| anyhow::anyhow!("`rate` {rate_text:?}: {error}"))?
        .bits_per_second();
    let rtt_text = raw.rtt.as_deref().unwrap_or("80ms");
    let rtt =
        parse_duration(rtt_text).map_err(|error| anyhow::anyhow!("`rtt` {rtt_text:?}: {error}"))?;
    if rtt < core::time::Duration::from_millis(14) {
        bail!("`rtt` {rtt_text:?}: at least 14 ms (2 × 1 ms bottleneck + 4 access links)");
    }
    let queue = match raw.queue.as_deref().unwrap_or("droptail") {
        "droptail" => QueueKind::DropTail,
        "red" => QueueKind::Red,
        other => bail!("`queue` {other:?}: one of droptail, red"),
    };
    let ecn = raw.ecn.unwrap_or(false);
    if ecn && queue != QueueKind::Red {
        bail!("`ecn` = true needs `queue` = \"red\" (only RED marks here)");
    }
    let buffer_bdp = raw.buffer_bdp.unwrap_or(1.0);
    if !(buffer_bdp.is_finite() && buffer_bdp > 0.0 && buffer_bdp <= 100.0) {
        bail!("`buffer_bdp` {buffer_bdp}: in (0, 100]");
    }
    let loss = raw.loss.unwrap_or(0.0);
    if !(0.0..1.0).contains(&loss) {
        bail!("`loss` {loss}: in [0, 1)");
    }
    let pareto_cross = match raw.cross.as_deref().unwrap_or("none") {
        "none" => false,
        "pareto" => true,
        other => bail!("`cross` {other:?}: one of none, pareto"),
    };
    let duration_text = raw.duration.as_deref().unwrap_or("40s");
    let duration = parse_duration(duration_text)
        .map_err(|error| anyhow::anyhow!("`duration` {duration_text:?}: {error}"))?;
    if duration < core::time::Duration::from_secs(5) {
        bail!("`duration` {duration_text:?}: at least 5 s (flows start in the first second)");
    }
    let packet_size = raw.packet_size.unwrap_or(1000);
    if !(100..=9000).contains(&packet_size) {
        bail!("`packet_size` {packet_size}: 100 … 9000 bytes");
    }
    Ok(Factors {
        delayed_ack: raw.delayed_ack.unwrap_or(false),
        tfrc,
        tcp,
        tcp_variant,
        tcp2,
        tcp2_variant,
        named_by_variant: reference == Reference::Ns3,
        profile,
        tcp_profile,
        rate_bps,
        rtt,
        queue,
        ecn,
        buffer_bdp,
        loss,
        pareto_cross,
        duration,
        packet_size,
    })
}

impl Factors {
    /// The bandwidth-delay product in packets.
    pub fn bdp_packets(&self) -> f64 {
        self.rate_bps as f64 * self.rtt.as_secs_f64() / 8.0 / f64::from(self.packet_size)
    }

    /// The scenario of replication `replication` (module docs), in the scenario format.
    pub fn scenario_text(&self, name: &str, seed: u64, replication: u32) -> String {
        let seed = replication_seed(seed, replication);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut text = format!(
            "# Conformance cell {name}, replication {replication} (written by `tfrc conformance`).\n\
             name = \"{name}\"\nduration = \"{}s\"\nseed = {seed}\n\n[output]\ninterval = \"100ms\"\n",
            self.duration.as_secs_f64()
        );
        text.push_str(&self.bottleneck_text());
        // The access links draw their delays first, then the flows their starts: one stream.
        text.push_str(&self.access_links_text(&mut rng));
        text.push_str(&self.flows_text(&mut rng));
        text
    }

    /// The bottleneck link r1–r2: its rate, the delay that makes up the RTT with the access
    /// links, its queue (drop-tail of `buffer_bdp` BDPs, or RED scaled to the BDP) and loss.
    fn bottleneck_text(&self) -> String {
        let bdp = self.bdp_packets();
        let queue = match self.queue {
            QueueKind::DropTail => format!(
                "{{ kind = \"droptail\", limit = {} }}",
                ((self.buffer_bdp * bdp).round() as u64).max(2)
            ),
            QueueKind::Red => {
                let min_th = (bdp / 4.0).max(5.0);
                format!(
                    "{{ kind = \"red\", limit = {}, min_th = {:.3}, max_th = {:.3}, max_p = 0.1, weight = 0.002, ecn = {} }}",
                    ((2.0 * bdp).max(4.0 * min_th)).round() as u64,
                    min_th,
                    3.0 * min_th,
                    self.ecn
                )
            }
        };
        let bottleneck_delay_us = (self.rtt.as_micros() as u64 / 2)
            .saturating_sub(6_000)
            .max(1_000);
        let mut text = format!(
            "\n[[link]]\nbetween = [\"r1\", \"r2\"]\nrate = \"{}bps\"\ndelay = \"{}us\"\nqueue = {queue}\n",
            self.rate_bps, bottleneck_delay_us
        );
        if self.loss > 0.0 {
            text.push_str(&format!(
                "loss = {{ kind = \"bernoulli\", rate = {} }}\n",
                self.loss
            ));
        }
        text
    }

    /// An access link per end host (senders to r1, receivers from r2, the Pareto cross
    /// traffic's ends), ten times the bottleneck's rate, each with a delay drawn from `rng`.
    fn access_links_text(&self, rng: &mut ChaCha8Rng) -> String {
        let mut text = String::new();
        let access_rate = self.rate_bps.saturating_mul(10);
        let mut access = |text: &mut String, node: &str, router: &str| {
            let delay_us: u64 = rng.gen_range(1_000..=5_000);
            text.push_str(&format!(
                "\n[[link]]\nbetween = [\"{node}\", \"{router}\"]\nrate = \"{access_rate}bps\"\ndelay = \"{delay_us}us\"\nqueue = {{ kind = \"droptail\", limit = 1000 }}\n"
            ));
        };
        for i in 0..self.tfrc + self.tcp + self.tcp2 {
            access(&mut text, &format!("s{i}"), "r1");
            access(&mut text, &format!("d{i}"), "r2");
        }
        if self.pareto_cross {
            access(&mut text, "x0", "r1");
            access(&mut text, "y0", "r2");
        }
        text
    }

    /// The TFRC flows, then the TCP flows (each starting within the first second, drawn from
    /// `rng`), then the Pareto cross traffic.
    fn flows_text(&self, rng: &mut ChaCha8Rng) -> String {
        let mut text = String::new();
        for i in 0..self.tfrc + self.tcp + self.tcp2 {
            let start_ms: u64 = rng.gen_range(0..1000);
            let (name, kind, variant) = if i < self.tfrc {
                (format!("tfrc{}", i + 1), FlowKind::Tfrc, "")
            } else if i < self.tfrc + self.tcp {
                let number = i - self.tfrc + 1;
                let name = if self.named_by_variant {
                    format!("{}{number}", self.tcp_variant)
                } else {
                    format!("tcp{number}")
                };
                (name, FlowKind::Tcp, self.tcp_variant.as_str())
            } else {
                let number = i - self.tfrc - self.tcp + 1;
                let name = format!("{}{number}", self.tcp2_variant);
                (name, FlowKind::Tcp, self.tcp2_variant.as_str())
            };
            text.push_str(&format!(
                "\n[[flow]]\nname = \"{name}\"\nkind = \"{kind}\"\nfrom = \"s{i}\"\nto = \"d{i}\"\nstart = \"{start_ms}ms\"\npacket_size = {}\n",
                self.packet_size
            ));
            if kind == FlowKind::Tfrc {
                text.push_str(&format!(
                    "profile = \"{}\"\necn = {}\n",
                    self.profile, self.ecn
                ));
            } else {
                text.push_str(&format!(
                    "variant = \"{variant}\"\nprofile = \"{}\"\n",
                    self.tcp_profile
                ));
                if self.delayed_ack {
                    text.push_str("delayed_ack = true\n");
                }
            }
        }
        if self.pareto_cross {
            text.push_str(&format!(
                "\n[[flow]]\nname = \"cross\"\nkind = \"pareto\"\nfrom = \"x0\"\nto = \"y0\"\nrate = \"{}bps\"\npacket_size = {}\n",
                self.rate_bps / 2,
                self.packet_size
            ));
        }
        text
    }
}

impl Cell {
    /// The concrete scenario of replication `replication`.
    pub fn scenario(&self, replication: u32) -> Result<Scenario> {
        match &self.setup {
            CellSetup::Factors(factors) => {
                let text = factors.scenario_text(&self.name, self.seed, replication);
                Scenario::from_str_named(&text, &format!("{}.toml", self.name))
                    .map_err(anyhow::Error::new)
                    .with_context(|| format!("cell {}: generated scenario", self.name))
            }
            CellSetup::Scenario { path, set, variant } => {
                let mut scenario = Scenario::from_path(path)
                    .map_err(anyhow::Error::new)
                    .with_context(|| format!("cell {}", self.name))?;
                scenario
                    .apply_sets(set.iter().map(String::as_str))
                    .map_err(anyhow::Error::new)
                    .with_context(|| format!("cell {}: set", self.name))?;
                let variants = scenario
                    .expand()
                    .map_err(anyhow::Error::new)
                    .with_context(|| format!("cell {}", self.name))?;
                let chosen: Vec<&Scenario> = variants
                    .iter()
                    .filter(|candidate| {
                        variant.as_ref().is_none_or(|label| {
                            candidate.name.contains(&format!("[{label}]"))
                                || candidate.name.contains(&format!("[{label},"))
                                || candidate.name.contains(&format!(",{label}]"))
                                || candidate.name.contains(&format!(",{label},"))
                        })
                    })
                    .collect();
                let [variant] = chosen[..] else {
                    bail!(
                        "cell {}: {} gives {} variants{}; a cell is one scenario (pick one with `variant`: {})",
                        self.name,
                        path.display(),
                        chosen.len(),
                        variant
                            .as_ref()
                            .map_or(String::new(), |label| format!(" for variant {label:?}")),
                        variants
                            .iter()
                            .map(|v| v.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                };
                let mut replicated = variant.replicate(replication);
                replicated.name.clone_from(&self.name);
                Ok(replicated)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(extra: &str) -> Result<Vec<Cell>> {
        let directory = tempfile::tempdir()?;
        let path = directory.path().join("matrix.toml");
        std::fs::write(
            &path,
            format!("[defaults]\ntfrc = 2\ntcp = 2\n\n[[cell]]\nname = \"c\"\n{extra}"),
        )?;
        load(&path).map(|matrix| matrix.cells)
    }

    #[test]
    fn a_factor_cell_is_a_dumbbell_with_drawn_access_delays_and_starts() {
        let cells = cell("rate = \"10Mbps\"\nrtt = \"80ms\"\nbuffer_bdp = 0.5\n").unwrap();
        let scenario = cells[0].scenario(3).unwrap();
        assert_eq!(scenario, cells[0].scenario(3).unwrap(), "reproducible");
        assert_ne!(scenario.seed, cells[0].scenario(4).unwrap().seed);
        assert_eq!(scenario.flows.len(), 4);
        assert_eq!(
            scenario.output.interval,
            core::time::Duration::from_millis(100)
        );
        // BDP = 10 Mb/s × 80 ms / 8000 bit = 100 packets; half of it.
        let text = match &cells[0].setup {
            CellSetup::Factors(factors) => {
                assert!((factors.bdp_packets() - 100.0).abs() < 1e-9);
                factors.scenario_text("c", 1, 3)
            }
            CellSetup::Scenario { .. } => unreachable!(),
        };
        assert!(text.contains("limit = 50 }"), "{text}");
        // Bottleneck 40 − 6 = 34 ms one way; access delays within [1, 5] ms; base RTTs
        // within 68 + [4, 20] ms.
        assert!(text.contains("delay = \"34000us\""), "{text}");
        for flow in &scenario.flows {
            let rtt = scenario
                .base_rtt(&flow.from, &flow.to)
                .unwrap()
                .as_secs_f64();
            assert!((0.072..=0.088).contains(&rtt), "{rtt}");
            assert!(flow.start < core::time::Duration::from_secs(1));
        }
        let starts: Vec<_> = scenario.flows.iter().map(|flow| flow.start).collect();
        assert!(
            starts.windows(2).any(|pair| pair[0] != pair[1]),
            "{starts:?}"
        );
    }

    #[test]
    fn an_ns3_matrix_holds_two_classes_named_by_variant() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("modern.toml");
        let write = |text: &str| {
            std::fs::write(&path, text).unwrap();
            load(&path)
        };
        let matrix = write(
            "reference = \"ns3\"\n[[cell]]\nname = \"m\"\ntcp = 2\ntcp_variant = \"cubic\"\n\
             tcp2 = 1\ntcp2_variant = \"bbr\"\n",
        )
        .unwrap();
        assert_eq!(matrix.reference, Reference::Ns3);
        let scenario = matrix.cells[0].scenario(0).unwrap();
        let flows: Vec<(&str, String)> = scenario
            .flows
            .iter()
            .map(|flow| (flow.name.as_str(), format!("{:?}", flow.kind)))
            .collect();
        assert_eq!(
            flows.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            ["cubic1", "cubic2", "bbr1"]
        );
        assert!(flows[2].1.contains("Bbr"), "{flows:?}");
        // Errors: an unknown reference, two classes against ns-2, the same variant twice.
        let error = format!(
            "{:#}",
            write("reference = \"ns4\"\n[[cell]]\nname = \"m\"\ntcp = 1\n").unwrap_err()
        );
        assert!(error.contains("`reference` \"ns4\""), "{error}");
        let error = format!(
            "{:#}",
            write("[[cell]]\nname = \"m\"\ntcp = 1\ntcp2 = 1\n").unwrap_err()
        );
        assert!(error.contains("reference = \"ns3\""), "{error}");
        let error = format!(
            "{:#}",
            write("reference = \"ns3\"\n[[cell]]\nname = \"m\"\ntcp = 1\ntcp2 = 1\ntcp_variant = \"bbr\"\ntcp2_variant = \"bbr\"\n")
                .unwrap_err()
        );
        assert!(error.contains("the two classes differ"), "{error}");
    }

    #[test]
    fn the_committed_modern_matrix_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/modern.toml");
        let matrix = load(&path).unwrap();
        assert_eq!(matrix.reference, Reference::Ns3);
        assert_eq!(matrix.cells.len(), 30);
        for cell in &matrix.cells {
            cell.scenario(0).unwrap();
        }
    }

    #[test]
    fn bad_cells_are_errors_naming_the_cell_and_key() {
        for (extra, expected) in [
            ("tcp_variant = \"vegas\"\n", "`tcp_variant` \"vegas\""),
            ("rate = \"fast\"\n", "`rate` \"fast\""),
            ("queue = \"codel\"\n", "`queue` \"codel\""),
            ("loss = 1.5\n", "`loss` 1.5"),
            ("rtt = \"5ms\"\n", "`rtt` \"5ms\""),
            ("expect = \"maybe\"\n", "`expect` \"maybe\""),
            ("expect = \"differs\"\n", "needs a `note`"),
        ] {
            let error = format!("{:#}", cell(extra).unwrap_err());
            assert!(error.contains("cell c"), "{error}");
            assert!(error.contains(expected), "{extra}: {error}");
        }
        // An unknown key is a TOML error with its line.
        let error = format!("{:#}", cell("colour = \"red\"\n").unwrap_err());
        assert!(
            error.contains("unknown field `colour`") && error.contains("line 7"),
            "{error}"
        );
    }
}
