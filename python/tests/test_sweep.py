"""Sweeps: local, on a 2-worker Dask LocalCluster, resumed, guarded, and hostile cases."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import tfrc
from conftest import GRID

distributed = pytest.importorskip("distributed") if os.environ.get("CI") != "true" else __import__("distributed")

#: 10 grid points × 2 seeds = 20 runs.
SEEDS = [1, 2]

#: How each table's rows are ordered for comparison (a dataset's files have no order).
ORDER = {
    "runs": ["run_id", "name"],
    "flows": ["run_id", "time_s", "flow"],
    "state": ["run_id", "time_s", "flow"],
    "links": ["run_id", "time_s", "from", "to"],
}


def tables(path):
    done = tfrc.Sweep(os.fspath(path))
    return {
        name: done.table(name).sort_values(ORDER[name]).reset_index(drop=True)
        for name in ORDER
    }


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as local, distributed.Client(local) as client:
        yield local, client


@pytest.fixture(scope="module")
def local_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("local") / "sweep"
    done = tfrc.sweep(GRID, out, seeds=SEEDS, progress=False)
    assert (done.ran, done.skipped, done.failed) == (20, 0, [])
    return out


def test_a_local_sweep_has_a_row_per_run_and_flow_with_the_grid_as_columns(local_sweep):
    runs = tfrc.Sweep(os.fspath(local_sweep)).runs
    assert len(runs) == 20 * 2
    assert runs.run_id.nunique() == 20
    assert list(runs.columns[:5]) == ["run_id", "scenario_hash", "seed", "rate", "limit"]
    assert runs["rate"].dtype == "float64" and runs["limit"].dtype == "int64"
    assert sorted(runs["rate"].unique()) == [0.0, 0.005, 0.01, 0.02, 0.05]
    assert runs.groupby("scenario_hash").seed.nunique().eq(2).all()
    assert runs.tool.str.startswith("tfrc ").all()
    manifest = json.load(open(local_sweep / "sweep.json"))
    assert manifest["tool"] == "tfrc " + tfrc.__version__
    # A run of the dataset is the same run as tfrc.simulate of its grid point and seed.
    row = runs[(runs["rate"] == 0.02) & (runs.limit == 10) & (runs.seed == 2) & (runs.name == "a")].iloc[0]
    alone = tfrc.simulate(
        tfrc.Scenario.from_toml(GRID.split("[sweep]")[0])
        .set("link.1.loss.rate", 0.02)
        .set("link.1.queue.limit", 10),
        seed=2,
    )
    assert row.goodput_bps == alone.summary["flows"][0]["goodput_bps"]
    # The grid reached the runs: the loss model drops in proportion to its rate.
    links = tfrc.Sweep(os.fspath(local_sweep)).links
    bottleneck = links[(links["from"] == "router") & (links.to == "receiver")]
    share = bottleneck.groupby("rate").drops_loss_model.sum() / bottleneck.groupby("rate").arrivals.sum()
    assert share[0.0] == 0
    for rate in [0.005, 0.01, 0.02, 0.05]:
        assert 0.5 * rate < share[rate] < 1.5 * rate, share
    flows = tfrc.Sweep(os.fspath(local_sweep)).flows
    assert len(flows) == 20 * 2 * 10
    assert set(flows.columns[:5]) == {"run_id", "scenario_hash", "seed", "rate", "limit"}


def test_the_dask_sweep_equals_the_local_sweep_number_for_number(local_sweep, cluster, tmp_path):
    _, client = cluster
    done = tfrc.sweep(GRID, tmp_path / "dask", seeds=SEEDS, client=client, progress=False)
    assert (done.ran, done.skipped, done.failed) == (20, 0, [])
    local, remote = tables(local_sweep), tables(tmp_path / "dask")
    for name in ORDER:
        assert len(remote[name]) > 0
        pd.testing.assert_frame_equal(local[name], remote[name], check_exact=True)
    again = tfrc.sweep(GRID, tmp_path / "dask", seeds=SEEDS, client=client, progress=False)
    assert (again.ran, again.skipped) == (0, 20)
    # Workers that do not see the dataset send the files back to the client.
    from tfrc._dask import sweep_on_dask

    sent = sweep_on_dask(
        tfrc.Scenario.from_toml(GRID), os.fspath(tmp_path / "sent"), SEEDS, client,
        False, False, direct_writes=False,
    )
    assert (sent.ran, sent.failed) == (20, [])
    remote = tables(tmp_path / "sent")
    for name in ORDER:
        pd.testing.assert_frame_equal(local[name], remote[name], check_exact=True)


def test_a_sweep_resumes_after_an_interruption(tmp_path):
    out = tmp_path / "sweep"
    tfrc.sweep(GRID, out, seeds=[1], progress=False)
    files = sorted((out / "runs").iterdir())
    files[3].unlink()
    (out / "flows" / "junk.parquet.tmp").write_bytes(b"half a file")
    done = tfrc.sweep(GRID, out, seeds="1", progress=False)
    assert (done.ran, done.skipped) == (1, 9)
    assert not (out / "flows" / "junk.parquet.tmp").exists()
    assert len(done.runs) == 10 * 2


def test_another_build_is_refused_unless_allowed(tmp_path):
    out = tmp_path / "sweep"
    tfrc.sweep(GRID, out, seeds=[1], progress=False)
    manifest = json.load(open(out / "sweep.json"))
    manifest["tool"] = "tfrc 0.0.1 (git 000000000000)"
    json.dump(manifest, open(out / "sweep.json", "w"))
    with pytest.raises(tfrc.SweepError) as raised:
        tfrc.sweep(GRID, out, seeds=[2], progress=False)
    assert "0.0.1" in str(raised.value) and "allow" in str(raised.value)
    done = tfrc.sweep(GRID, out, seeds=[2], allow_mixed_versions=True, progress=False)
    assert (done.ran, done.skipped) == (10, 0)


def test_bad_grids_and_seeds_are_clear_errors(tmp_path):
    with pytest.raises(tfrc.ScenarioError) as raised:
        tfrc.sweep(GRID.replace("[10, 40]", "[]"), tmp_path / "a", progress=False)
    assert "limit" in str(raised.value)
    with pytest.raises(ValueError) as raised:
        tfrc.sweep(GRID, tmp_path / "b", seeds="3-1", progress=False)
    assert "backwards" in str(raised.value)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_failed_run_is_reported_and_the_others_kept(tmp_path, monkeypatch):
    import tfrc._dask

    scenario = tfrc.Scenario.from_toml(GRID)
    _, runs = tfrc._core.plan(scenario, [1])
    doomed = tfrc._core.run_id(runs[4])
    real = tfrc._dask.run_task

    def failing(run, *rest):
        if tfrc._core.run_id(run) == doomed:
            raise RuntimeError("the machine caught fire")
        return real(run, *rest)

    monkeypatch.setattr(tfrc._dask, "run_task", failing)
    out = tmp_path / "sweep"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as local, distributed.Client(local) as client:
        with pytest.raises(tfrc.SweepError) as raised:
            tfrc.sweep(scenario, out, seeds=[1], client=client, progress=False)
    assert doomed in str(raised.value) and "caught fire" in str(raised.value)
    assert raised.value.sweep.ran == 9
    assert [run for run, _ in raised.value.sweep.failed] == [doomed]
    assert len(list((out / "runs").glob("*.parquet"))) == 9
    # A planned run edited into an invalid scenario is a scenario error on the worker.
    broken = json.loads(runs[0])
    broken["scenario_toml"] = broken["scenario_toml"].replace("duration", "duration_typo", 1)
    with pytest.raises(tfrc.ScenarioError):
        tfrc._core.execute(json.dumps(broken))


def test_a_worker_that_dies_mid_sweep_does_not_lose_runs(tmp_path):
    out = tmp_path / "sweep"
    scenario = tfrc.Scenario.from_toml(GRID).set("duration", "40s")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
    ) as local, distributed.Client(local) as client:
        pids = client.run(os.getpid)
        victim = list(pids.values())[0]
        killed = threading.Event()

        def kill_after_first_runs():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                stored = out / "runs"
                if stored.is_dir() and len(list(stored.glob("*.parquet"))) >= 3:
                    os.kill(victim, signal.SIGKILL)
                    killed.set()
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_after_first_runs)
        killer.start()
        done = tfrc.sweep(scenario, out, seeds=SEEDS, client=client, progress=False)
        killer.join()
    assert killed.is_set(), "the sweep ended before a worker could be killed"
    assert (done.ran, done.failed) == (20, [])
    assert len(list((out / "runs").glob("*.parquet"))) == 20


def test_the_command_line_sweeps_on_dask_and_names_a_dead_scheduler(tmp_path, cluster):
    local, _ = cluster
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(GRID)
    out = tmp_path / "cli"
    ran = subprocess.run(
        [sys.executable, "-m", "tfrc", "sweep", str(grid_file), "--out", str(out),
         "--seeds", "1", "--dask", local.scheduler_address, "--quiet"],
        capture_output=True, text=True, timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert len(list((out / "runs").glob("*.parquet"))) == 10
    dead = subprocess.run(
        [sys.executable, "-m", "tfrc", "sweep", str(grid_file), "--out", str(tmp_path / "dead"),
         "--dask", "tcp://127.0.0.1:9", "--timeout", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert dead.returncode == 1
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in dead.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "tfrc", "sweep", str(grid_file), "--set", "flow.a.colour=red"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert bad.returncode == 1 and "colour" in bad.stderr


def test_tfrc_sweep_dask_runs_the_package_and_names_a_dead_scheduler(tmp_path, cluster):
    """The Rust command's `--dask` hands over to `python -m tfrc sweep` (needs the `tfrc`
    binary: target/debug/tfrc after `cargo test`, or TFRC=path)."""
    from conftest import ROOT, in_ci

    binary = os.environ.get("TFRC") or os.path.join(ROOT, "target", "debug", "tfrc")
    if not os.path.exists(binary):
        if in_ci():
            pytest.fail(f"no tfrc binary at {binary} under CI=true")
        pytest.skip(f"no tfrc binary at {binary} (cargo build -p tfrc-cli, or set TFRC)")
    local, _ = cluster
    grid_file = tmp_path / "grid.toml"
    grid_file.write_text(GRID)
    ran = subprocess.run(
        [binary, "sweep", str(grid_file), "--out", str(tmp_path / "out"), "--seeds", "4",
         "--dask", local.scheduler_address, "--python", sys.executable, "--quiet"],
        capture_output=True, text=True, timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    assert len(list((tmp_path / "out" / "runs").glob("*.parquet"))) == 10
    dead = subprocess.run(
        [binary, "sweep", str(grid_file), "--out", str(tmp_path / "dead"),
         "--dask", "tcp://127.0.0.1:9", "--dask-timeout", "2", "--python", sys.executable],
        capture_output=True, text=True, timeout=300,
    )
    assert dead.returncode != 0
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9" in dead.stderr


def test_ctrl_c_stops_a_local_sweep_and_a_rerun_finishes_it(tmp_path):
    from conftest import ROOT

    speed = os.path.join(ROOT, "bench", "sim-speed", "e003-speed.toml")
    out = tmp_path / "sweep"
    script = (
        "import sys, tfrc\n"
        f"s = tfrc.Scenario.from_toml({speed!r}).set('duration', '100s')\n"
        "try:\n"
        f"    tfrc.sweep(s, {os.fspath(out)!r}, seeds='1-30', jobs=1, progress=False)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(130)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and child.poll() is None:
        if (out / "runs").is_dir() and any((out / "runs").glob("*.parquet")):
            break
        time.sleep(0.01)
    interrupted_at = time.monotonic()
    child.send_signal(signal.SIGINT)
    stdout, _ = child.communicate(timeout=60)
    stopped_after = time.monotonic() - interrupted_at
    assert child.returncode == 130 and "interrupted" in stdout, (child.returncode, stdout)
    stored = len(list((out / "runs").glob("*.parquet")))
    assert 1 <= stored < 30
    # The run under way finishes (about a tenth of a second), no further run starts.
    assert stopped_after < 10, stopped_after
    speed_scenario = tfrc.Scenario.from_toml(speed).set("duration", "100s")
    done = tfrc.sweep(speed_scenario, out, seeds="1-30", progress=False)
    assert (done.ran, done.skipped) == (30 - stored, stored)
