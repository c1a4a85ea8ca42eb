"""What the Python package adds (issue 19): run by bench/python/run.sh, which builds it first.

1. `tfrc.simulate` beyond the simulation itself: the wall time of the call minus the
   simulator's own wall time (`Result.wall_time_s`: build, run, rows), for a small run
   (examples/dumbbell.toml: 2 flows, 10 s) and an e003-sized one (64 TFRC flows, 300 s),
   median of CALLS calls.
   Target: under 5 ms.
   Also reported: building the three DataFrames when first used (the rows stay in Rust until
   then), which a caller that needs only the summary never pays.
2. A 200-run sweep of e003-sized runs (bench/sim-speed/e003-speed.toml: 20 buffer sizes × seeds
   1-10) on 2 cores: `tfrc sweep` (the CLI), `tfrc.sweep` (local) and `tfrc.sweep` on a 2-worker
   Dask LocalCluster, each into a new dataset, REPEAT times (default 2) in turn; the shortest of
   each counts. Target: Python within 10 % of the CLI's wall time.

Prints a Markdown table; writes the figures as JSON to the path given as the first argument.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import tfrc

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SPEED = os.path.join(ROOT, "bench", "sim-speed", "e003-speed.toml")
TFRC = os.environ.get("TFRC", os.path.join(ROOT, "target", "release", "tfrc"))
RUNS_SEEDS = os.environ.get("SWEEP_SEEDS", "1-10")
CALLS = int(os.environ.get("CALLS", "30"))

SMALL = open(os.path.join(ROOT, "examples", "dumbbell.toml")).read()


def overhead(scenario, calls):
    """Medians (ms) of: the call's time beyond the simulation, the simulation, and building the
    three DataFrames on first use (the rows stay in Rust until then)."""
    extra, inside, tables = [], [], []
    tfrc.simulate(scenario)  # warm up (page cache, allocator)
    for _ in range(calls):
        started = time.perf_counter()
        result = tfrc.simulate(scenario)
        total = time.perf_counter() - started
        extra.append(total - result.wall_time_s)
        inside.append(result.wall_time_s)
        started = time.perf_counter()
        rows = len(result.flows) + len(result.state) + len(result.links)
        tables.append(time.perf_counter() - started)
    median = lambda values: statistics.median(values) * 1000
    return median(extra), median(inside), median(tables), rows


def grid():
    text = open(SPEED).read()
    return tfrc.Scenario.from_toml(
        text
        + '\n[sweep]\n"link.1.queue.limit" = [' + ", ".join(str(10 + 2 * i) for i in range(20)) + "]\n"
    )


def timed(label, function):
    started = time.perf_counter()
    function()
    seconds = time.perf_counter() - started
    print(f"  {label}: {seconds:.1f} s", file=sys.stderr, flush=True)
    return seconds


#: Each sweep runs this many times, the three kinds alternating, each into a new dataset; the
#: shortest time of each kind counts (the machine is shared: the others were slowed).
REPEAT = int(os.environ.get("REPEAT", "2"))


def main():
    figures = {"tool": tfrc.__version__}
    small = overhead(tfrc.Scenario.from_toml(SMALL), CALLS)
    big = overhead(tfrc.Scenario.from_toml(SPEED), max(3, CALLS // 10))
    figures["simulate"] = {
        "small_added_ms": small[0], "small_simulation_ms": small[1], "small_tables_ms": small[2],
        "e003_added_ms": big[0], "e003_simulation_ms": big[1], "e003_tables_ms": big[2],
        "e003_rows": big[3],
    }
    scenario = grid()
    toml = os.path.join(tempfile.mkdtemp(), "grid.toml")
    open(toml, "w").write(scenario.to_toml())
    runs = len(tfrc._core.parse_seeds(RUNS_SEEDS)) * scenario.variant_count
    work = tempfile.mkdtemp(prefix="tfrc-bench-python-")
    print(f"sweeps of {runs} runs into {work}, {REPEAT} times each", file=sys.stderr)
    from distributed import Client, LocalCluster

    times = {"cli": [], "local": [], "dask": []}
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster, Client(cluster) as client:
        client.run(lambda: __import__("tfrc"))  # workers import the package before the clock starts
        for round in range(REPEAT):
            out = lambda kind: os.path.join(work, f"{kind}-{round}")
            times["cli"].append(timed("tfrc sweep (CLI)", lambda: subprocess.run(
                [TFRC, "sweep", toml, "--seeds", RUNS_SEEDS, "--out", out("cli"), "--jobs", "2", "--quiet"],
                check=True)))
            times["local"].append(timed("tfrc.sweep (local)", lambda: tfrc.sweep(
                scenario, out("local"), seeds=RUNS_SEEDS, jobs=2, progress=False)))
            times["dask"].append(timed("tfrc.sweep (Dask LocalCluster, 2 workers)", lambda: tfrc.sweep(
                scenario, out("dask"), seeds=RUNS_SEEDS, client=client, progress=False)))
            for kind in times:
                shutil.rmtree(out(kind), ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    cli, local, dask = (min(times[kind]) for kind in ("cli", "local", "dask"))
    figures["sweep"] = {"runs": runs, "times_s": times, "cli_s": cli, "python_local_s": local,
                        "python_dask_s": dask, "local_vs_cli": local / cli, "dask_vs_cli": dask / cli}
    s, w = figures["simulate"], figures["sweep"]
    every = lambda kind: ", ".join(f"{t:.1f}" for t in times[kind])
    print("| measure | figure | target |\n|---|---|---|")
    print(f"| `tfrc.simulate` added, examples/dumbbell.toml (2 flows, 10 s) (simulation {s['small_simulation_ms']:.1f} ms) | {s['small_added_ms']:.2f} ms | < 5 ms |")
    print(f"| its three DataFrames, built on first use | {s['small_tables_ms']:.2f} ms | — |")
    print(f"| `tfrc.simulate` added, e003-speed 64 flows 300 s (simulation {s['e003_simulation_ms']:.0f} ms) | {s['e003_added_ms']:.2f} ms | < 5 ms |")
    print(f"| its three DataFrames ({s['e003_rows']} rows), built on first use | {s['e003_tables_ms']:.1f} ms | — |")
    print(f"| {runs}-run sweep, `tfrc sweep` (CLI), 2 jobs (each try: {every('cli')} s) | {w['cli_s']:.1f} s | — |")
    print(f"| same, `tfrc.sweep` local, 2 jobs ({every('local')} s) | {w['python_local_s']:.1f} s ({w['local_vs_cli']:.3f} × CLI) | ≤ 1.10 × |")
    print(f"| same, `tfrc.sweep` on a 2-worker Dask LocalCluster ({every('dask')} s) | {w['python_dask_s']:.1f} s ({w['dask_vs_cli']:.3f} × CLI) | ≤ 1.10 × |")
    if len(sys.argv) > 1:
        json.dump(figures, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
