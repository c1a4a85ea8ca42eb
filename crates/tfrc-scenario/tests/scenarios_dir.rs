//! The repository's `scenarios/` folder: one file per experiment id of the papers
//! (EXPERIMENTS.md), each parsing and expanding to the number of runs its README says, with a
//! working `quick` version, and `claims.toml` naming only existing ids, metrics, sweep labels and
//! flows. Also bounds the simulated work of the whole default suite.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use tfrc_scenario::{Capacity, FlowKind, Scenario};

/// Every experiment id of EXPERIMENTS.md (the shared experiment list), in its order.
const IDS: &[&str] = &[
    "e000-const-bw",
    "e000-loss",
    "e000-udp",
    "e000-af-exact",
    "e000-af-over20",
    "e000-af-over40",
    "e000-af-tcp",
    "e002-grid",
    "e002-rtt",
    "e002-arrivals",
    "e002-geo",
    "e003-single",
    "e003-multi",
    "e003-ratio",
    "e003-cov",
    "e003-fairness",
    "e003-friendliness",
    "e004-single",
    "e004-reverse",
    "e004-shared",
    "e004-burstiness",
];

/// Packet-hops (data and ACK/feedback packets × links crossed) the whole default suite may
/// take: at ~2 events per packet-hop, well within 10 minutes of a simulator doing a few million
/// events per second on 2 cores.
const SUITE_PACKET_HOP_BUDGET: f64 = 400e6;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

fn load(id: &str) -> Scenario {
    let path = scenarios_dir().join(format!("{id}.toml"));
    Scenario::from_path(&path).unwrap_or_else(|error| panic!("{error}"))
}

fn expand(id: &str) -> Vec<Scenario> {
    load(id).expand().unwrap_or_else(|error| panic!("{error}"))
}

/// `id → runs` from the first table of scenarios/README.md whose header starts `| id | file | runs |`.
fn readme_runs() -> BTreeMap<String, usize> {
    let text =
        std::fs::read_to_string(scenarios_dir().join("README.md")).expect("scenarios/README.md");
    let mut runs = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() > 4 && cells[1] == "id" && cells[2] == "file" && cells[3] == "runs" {
            in_table = true;
            continue;
        }
        if in_table {
            if !line.starts_with('|') {
                break;
            }
            if cells[1].starts_with("---") {
                continue;
            }
            if cells[1] == "**total**" {
                let total: usize = cells[3]
                    .trim_matches('*')
                    .parse()
                    .expect("README total runs");
                assert_eq!(total, runs.values().sum::<usize>(), "README total runs");
                continue;
            }
            let id = cells[1].trim_matches('`').to_owned();
            let count: usize = cells[3].parse().unwrap_or_else(|_| {
                panic!("README runs cell of {id} is not a number: {:?}", cells[3])
            });
            runs.insert(id, count);
        }
    }
    runs
}

#[test]
fn every_experiment_id_has_a_file_and_no_file_is_unknown() {
    for id in IDS {
        let path = scenarios_dir().join(format!("{id}.toml"));
        assert!(path.is_file(), "missing scenario file {}", path.display());
    }
    for entry in std::fs::read_dir(scenarios_dir()).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".toml") {
            assert!(
                stem == "claims" || IDS.contains(&stem),
                "scenarios/{name} is not an experiment id of EXPERIMENTS.md"
            );
        }
    }
}

#[test]
fn the_id_list_matches_experiments_md_when_it_is_available() {
    let path = std::env::var_os("EXPERIMENTS_MD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/work/shared/EXPERIMENTS.md"));
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "skipped: {} not found (set EXPERIMENTS_MD to check the id list against it)",
            path.display()
        );
        return;
    };
    // Ids are the first cell of the experiment tables: | `e000-const-bw` | …
    let mut found = Vec::new();
    for line in text.lines() {
        let Some(cell) = line.split('|').nth(1) else {
            continue;
        };
        let cell = cell.trim();
        if let Some(id) = cell.strip_prefix('`').and_then(|c| c.strip_suffix('`')) {
            if id.starts_with('e')
                && id
                    .as_bytes()
                    .get(1..4)
                    .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            {
                found.push(id.to_owned());
            }
        }
    }
    assert_eq!(
        found, IDS,
        "EXPERIMENTS.md ids differ from this test's list"
    );
}

#[test]
fn every_file_parses_expands_and_has_the_runs_readme_says() {
    let runs = readme_runs();
    assert_eq!(
        runs.keys().map(String::as_str).collect::<BTreeSet<_>>(),
        IDS.iter().copied().collect::<BTreeSet<_>>(),
        "the README table lists every id once"
    );
    for id in IDS {
        let scenario = load(id);
        assert_eq!(scenario.name, *id, "the scenario name is the id");
        let variants = scenario.expand().unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(variants.len(), runs[*id], "{id}: runs in README.md");
        assert_eq!(variants.len(), scenario.variant_count());
        for variant in &variants {
            assert!(
                !variant.flows.is_empty(),
                "{}: a run without flows",
                variant.name
            );
            // Recordable: the resolved form parses back to the same run.
            let again = Scenario::from_str_named(&variant.to_toml_string(), "again").unwrap();
            assert_eq!(again, *variant);
            for link in &variant.links {
                for direction in [&link.forward, &link.reverse] {
                    if let Capacity::Trace { path, .. } = &direction.capacity {
                        assert!(
                            path.is_file(),
                            "{}: trace {} is missing",
                            variant.name,
                            path.display()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn every_quick_version_applies_expands_and_is_shorter() {
    for id in IDS {
        let full = load(id);
        assert!(!full.quick.is_empty(), "{id} has no quick overrides");
        let mut quick = full.clone();
        quick
            .apply_quick()
            .unwrap_or_else(|error| panic!("{error}"));
        assert!(
            quick.duration < full.duration,
            "{id}: quick run is not shorter"
        );
        let variants = quick.expand().unwrap_or_else(|error| panic!("{error}"));
        assert!(
            !variants.is_empty() && variants.len() <= full.variant_count(),
            "{id}"
        );
        let work: f64 = variants.iter().map(packet_hops).sum();
        let full_work: f64 = full.expand().unwrap().iter().map(packet_hops).sum();
        assert!(
            work <= full_work / 2.0,
            "{id}: quick work {work:.0} vs full {full_work:.0}"
        );
    }
}

/// A run with its name and sweep record cleared: equal runs are the same simulation.
fn content(run: &Scenario) -> Scenario {
    let mut run = run.clone();
    run.name.clear();
    run.variant.clear();
    run
}

#[test]
fn aggregate_experiments_are_the_runs_of_the_experiments_they_summarise() {
    for (aggregate, parts) in [
        ("e003-ratio", &["e003-single", "e003-multi"][..]),
        (
            "e004-burstiness",
            &["e004-single", "e004-reverse", "e004-shared"][..],
        ),
    ] {
        let mine: Vec<Scenario> = expand(aggregate).iter().map(content).collect();
        let theirs: Vec<Scenario> = parts
            .iter()
            .flat_map(|id| expand(id))
            .map(|r| content(&r))
            .collect();
        assert_eq!(mine.len(), theirs.len(), "{aggregate}");
        for run in &theirs {
            assert!(
                mine.contains(run),
                "{aggregate} lacks a run of {parts:?}: {}",
                run.to_toml_string()
            );
        }
    }
}

// claims.toml is checked where it is defined: crates/tfrc-cli/src/reproduce/claims.rs (its schema,
// its selectors against these scenario files, its quotes against the papers).

// ---------------------------------------------------------------------------------------------
// Simulated work

/// Mean rate in bits/s of a Mahimahi trace: one 1500-byte packet per line, over its last time.
fn trace_rate(path: &Path, cache: &mut HashMap<PathBuf, f64>) -> f64 {
    *cache.entry(path.to_path_buf()).or_insert_with(|| {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let times: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
        let span_ms = times.last().copied().unwrap_or(1).max(1) as f64;
        times.len() as f64 * 1500.0 * 8.0 / (span_ms / 1000.0)
    })
}

thread_local! {
    static TRACE_RATES: std::cell::RefCell<HashMap<PathBuf, f64>> = std::cell::RefCell::new(HashMap::new());
}

/// The link directions `(from, to)` on the route between two nodes ([`Scenario::route`]).
fn path(run: &Scenario, from: &str, to: &str) -> Vec<(String, String)> {
    let route = run
        .route(from, to)
        .unwrap_or_else(|error| panic!("{}: {error}", run.name));
    let directions = run.link_directions();
    route
        .hops
        .iter()
        .map(|hop| {
            let (a, b) = directions[hop.direction_index()];
            (a.to_owned(), b.to_owned())
        })
        .collect()
}

/// Elastic flows sharing one bottleneck direction: sums over the flows, and their active span.
#[derive(Default)]
struct ElasticGroup {
    size_bits: f64,
    hops: f64,
    acks: f64,
    flows: f64,
    start: f64,
    stop: f64,
}

/// Rough packet-hops of one run: open-loop sources at their mean rate; elastic flows (TFRC,
/// TCP) fill their bottleneck direction for as long as any of them is active; TCP adds one ACK
/// per data packet (one per two with delayed ACKs) on the way back; TFRC feedback is neglected.
fn packet_hops(run: &Scenario) -> f64 {
    let duration = run.duration.as_secs_f64();
    let capacity = |from: &str, to: &str| -> f64 {
        let direction = run.link_direction(from, to).expect("path direction exists");
        match &direction.capacity {
            Capacity::Rate(rate) => rate.bits_per_second() as f64,
            Capacity::Trace { path, .. } => {
                TRACE_RATES.with(|cache| trace_rate(path, &mut cache.borrow_mut()))
            }
        }
    };
    let mut groups: BTreeMap<(String, String), ElasticGroup> = BTreeMap::new();
    let mut total = 0.0;
    for flow in &run.flows {
        let hops = path(run, &flow.from, &flow.to);
        let start = flow.start.as_secs_f64();
        let stop = flow.stop_time(run.duration).as_secs_f64().min(duration);
        let active = (stop - start).max(0.0);
        let size_bits = f64::from(flow.packet_size) * 8.0;
        let open_loop = match &flow.kind {
            FlowKind::Cbr { rate } => Some(rate.bits_per_second() as f64),
            FlowKind::Pareto(on_off) | FlowKind::ExponentialOnOff(on_off) => {
                let on = on_off.burst.as_secs_f64();
                let off = on_off.idle.as_secs_f64();
                Some(on_off.rate.bits_per_second() as f64 * on / (on + off))
            }
            FlowKind::Tfrc(_) | FlowKind::Tcp(_) => None,
        };
        if let Some(rate) = open_loop {
            total += rate * active / size_bits * hops.len() as f64;
            continue;
        }
        let acks = match &flow.kind {
            FlowKind::Tcp(tcp) if tcp.delayed_ack => 0.5,
            FlowKind::Tcp(_) => 1.0,
            _ => 0.0,
        };
        let bottleneck = hops
            .iter()
            .min_by(|a, b| capacity(&a.0, &a.1).total_cmp(&capacity(&b.0, &b.1)))
            .cloned()
            .expect("a flow crosses a link");
        let group = groups.entry(bottleneck).or_insert(ElasticGroup {
            start: f64::MAX,
            ..ElasticGroup::default()
        });
        group.size_bits += size_bits;
        group.hops += hops.len() as f64;
        group.acks += acks;
        group.flows += 1.0;
        group.start = group.start.min(start);
        group.stop = group.stop.max(stop);
    }
    for ((from, to), group) in groups {
        let n = group.flows;
        let packets =
            capacity(&from, &to) * (group.stop - group.start).max(0.0) / (group.size_bits / n);
        total += packets * (group.hops / n) * (1.0 + group.acks / n);
    }
    total
}

/// Files of the default `tfrc reproduce` that are no experiment id: the "Today's TCP" section
/// (docs/today-tcp.md), which runs with the experiments and so counts against their budget.
const BEYOND: &[&str] = &["beyond/today-tcp"];

fn suite_work() -> Vec<(&'static str, usize, f64)> {
    IDS.iter()
        .chain(BEYOND)
        .map(|id| {
            let runs = expand(id);
            (*id, runs.len(), runs.iter().map(packet_hops).sum())
        })
        .collect()
}

#[test]
fn the_default_suite_stays_within_its_simulation_budget() {
    let work = suite_work();
    let total: f64 = work.iter().map(|(_, _, hops)| hops).sum();
    assert!(
        total < SUITE_PACKET_HOP_BUDGET,
        "the default suite takes ≈{:.0} M packet-hops, over the budget of {:.0} M: {work:?}",
        total / 1e6,
        SUITE_PACKET_HOP_BUDGET / 1e6
    );
    // The estimate sees the work: a grid of 36 runs of 500 s at 1 Mb/s is millions of packet-hops.
    let grid = work.iter().find(|(id, _, _)| *id == "e002-grid").unwrap().2;
    assert!(grid > 1e6, "e002-grid estimate {grid}");
}

/// Prints the work table of scenarios/README.md:
/// `cargo test -p tfrc-scenario --test scenarios_dir -- --ignored --nocapture`.
#[test]
#[ignore = "prints the README's work table"]
fn print_work_table() {
    let work = suite_work();
    println!("| id | runs | packet-hops (M) |\n|---|---|---|");
    for (id, runs, hops) in &work {
        println!("| `{id}` | {runs} | {:.2} |", hops / 1e6);
    }
    let total: f64 = work.iter().map(|(_, _, hops)| hops).sum();
    let runs: usize = work.iter().map(|(_, runs, _)| runs).sum();
    println!("| total | {runs} | {:.1} |", total / 1e6);
}
