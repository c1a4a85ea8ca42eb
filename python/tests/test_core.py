"""The equation, scenarios and single runs from Python."""

import json
import math
import os
import threading

import numpy as np
import pandas as pd
import pytest

import tfrc
from conftest import DUMBBELL, GRID, ROOT, need


def rfc5348_x(s, rtt, p, t_rto=None):
    """RFC 5348 §3.1, b = 1, written out here independently of the package."""
    t_rto = 4 * rtt if t_rto is None else t_rto
    return s / (rtt * math.sqrt(2 * p / 3) + t_rto * (3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p**2)))


def test_equation_matches_the_rfc_formula_and_broadcasts():
    assert tfrc.equation(1000, 0.1, 0.01) == pytest.approx(rfc5348_x(1000, 0.1, 0.01), rel=1e-12)
    assert isinstance(tfrc.equation(1000, 0.1, 0.01), float)
    s = np.array([500.0, 1000.0, 1460.0])
    p = np.array([[0.001], [0.1]])
    x = tfrc.equation(s, 0.2, p, t_rto=1.0)
    assert x.shape == (2, 3)
    for i in range(2):
        for j in range(3):
            assert x[i, j] == pytest.approx(rfc5348_x(s[j], 0.2, p[i, 0], 1.0), rel=1e-12)
    assert tfrc.equation(1000, 0.1, 0.0) == math.inf
    for bad in [(-1, 0.1, 0.01), (1000, 0, 0.01), (1000, 0.1, 1.5), (1000, 0.1, -0.1)]:
        assert math.isnan(tfrc.equation(*bad)), bad


def test_the_inverse_gives_back_p_and_nan_out_of_range():
    p = np.logspace(-6, -0.1, 25)
    x = tfrc.equation(1000, 0.05, p)
    assert np.allclose(tfrc.loss_event_rate(x, 1000, 0.05), p, rtol=1e-6)
    assert math.isnan(tfrc.loss_event_rate(1e30, 1000, 0.05))
    assert math.isnan(tfrc.loss_event_rate(1.0, 1000, 0.05))
    assert math.isnan(tfrc.loss_event_rate(-5, 1000, 0.05))


def test_a_scenario_reads_from_text_or_file_sets_keys_and_writes_toml(tmp_path):
    from_text = tfrc.Scenario.from_toml(DUMBBELL)
    path = tmp_path / "dumbbell.toml"
    path.write_text(DUMBBELL)
    from_file = tfrc.Scenario.from_toml(path)
    assert from_text.to_toml() == from_file.to_toml()
    assert from_file.name == "dumbbell" and from_file.seed == 3
    same = from_file.set("flow.a.packet_size", 1400).set("link.1.delay", "49ms")
    assert same is from_file
    again = tfrc.Scenario.from_toml(from_file.to_toml())
    assert again.to_toml() == from_file.to_toml()
    assert "packet_size = 1400" in from_file.to_toml()
    assert tfrc.Scenario.from_toml(GRID).variant_count == 10
    assert len(tfrc.Scenario.from_toml(GRID).variants()) == 10


def test_errors_name_the_key_and_leave_the_scenario_unchanged():
    scenario = tfrc.Scenario.from_toml(DUMBBELL)
    before = scenario.to_toml()
    with pytest.raises(tfrc.ScenarioError) as raised:
        scenario.set("flow.a.packet_size", "huge")
    assert raised.value.key == "flow[a].packet_size" or "packet_size" in raised.value.key
    assert "packet_size" in str(raised.value)
    assert scenario.to_toml() == before
    with pytest.raises(tfrc.ScenarioError) as raised:
        scenario.set("flow.a.colour", 3)
    assert "colour" in str(raised.value)
    with pytest.raises(tfrc.ScenarioError) as raised:
        tfrc.Scenario.from_toml(DUMBBELL.replace('rate = "1Mbps"', 'rate = "fast"'))
    assert raised.value.key == "link[1].rate"
    with pytest.raises(tfrc.ScenarioError):
        tfrc.Scenario.from_toml(GRID.replace("[10, 40]", "[]"))
    with pytest.raises(tfrc.ScenarioError):
        tfrc.Scenario.from_toml("/no/such/scenario.toml")
    with pytest.raises(tfrc.ScenarioError) as raised:
        tfrc.simulate(GRID)
    assert "tfrc.sweep" in str(raised.value)
    assert issubclass(tfrc.ScenarioError, ValueError)


def test_simulate_gives_the_tables_of_the_output_format_and_its_summary():
    result = tfrc.simulate(DUMBBELL, seed=5)
    assert list(result.flows.columns[:5]) == ["time_s", "flow", "kind", "sent_bytes", "recv_bytes"]
    assert list(result.flows.columns) == header(os.path.join(ROOT, "docs", "output-format.md"), "flows.csv")
    assert list(result.state.columns) == header(os.path.join(ROOT, "docs", "output-format.md"), "state.csv")
    assert len(result.flows) == 2 * 10
    assert result.summary["seed"] == 5
    assert result.summary["tool"].startswith("tfrc ")
    assert result.events > 0 and result.wall_time_s > 0
    for flow in result.summary["flows"]:
        rows = result.flows[result.flows.flow == flow["name"]]
        assert rows.goodput_bytes.sum() == flow["goodput_bytes"]
        assert rows.sent_packets.sum() == flow["sent_packets"]
    tfrc_state = result.state[result.state.flow == "a"]
    assert tfrc_state.cwnd.isna().all() and tfrc_state.x_bps.notna().all()
    again = tfrc.simulate(DUMBBELL, seed=5)
    pd.testing.assert_frame_equal(result.flows, again.flows)
    pd.testing.assert_frame_equal(result.state, again.state)
    other = tfrc.simulate(DUMBBELL, seed=6)
    assert not result.flows.equals(other.flows)


def header(document, file):
    """The columns a table of docs/output-format.md lists for `file`."""
    text = open(document).read()
    section = text[text.index(f"## `{file}`"):]
    section = section[: section.index("\n## ", 4)]
    columns = []
    for line in section.splitlines():
        if line.startswith("| `"):
            for name in line.split("|")[1].replace("`", "").split(","):
                columns.append(name.strip())
    return columns


def test_simulate_releases_the_gil_while_it_runs():
    # Long enough that the run itself takes a good fraction of a second on a fast machine (the
    # check below needs a run to measure, not a speed).
    long_run = tfrc.Scenario.from_toml(DUMBBELL).set("duration", "6000s")
    ticks = 0
    running = threading.Event()
    stop = threading.Event()

    def count():
        nonlocal ticks
        running.set()
        while not stop.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    running.wait()
    before = ticks
    result = tfrc.simulate(long_run)
    during = ticks - before
    stop.set()
    counter.join()
    # Holding the GIL for the whole run would leave the counter at a handful of ticks (one
    # switch interval, 5 ms, at most before the call).
    assert result.wall_time_s > 0.05
    assert during > 10_000, f"{during} ticks in {result.wall_time_s:.2f} s"


def test_ns2_gives_the_same_tables_from_ns2(tmp_path):
    need("ns", "tfrc.ns2 runs ns-2.35 (apt-get install ns2)")
    scenario = tfrc.Scenario.from_toml(DUMBBELL).set("link.1.loss", "none")
    ours = tfrc.simulate(scenario)
    theirs = tfrc.ns2(scenario, directory=tmp_path / "ns2")
    assert list(theirs.flows.columns) == list(ours.flows.columns)
    assert list(theirs.state.columns) == list(ours.state.columns)
    assert sorted(theirs.flows.flow.unique()) == ["a", "t"]
    assert [f["name"] for f in theirs.summary["flows"]] == ["a", "t"]
    assert theirs.wall_time_s is None
    # Both fill the 1 Mb/s bottleneck.
    total = theirs.flows.groupby("time_s").recv_kbps.sum().iloc[2:].mean()
    assert 800 < total < 1010, total
    assert (tmp_path / "ns2" / "flows.csv").is_file()


def test_ns2_without_ns2_is_an_os_error():
    with pytest.raises(OSError) as raised:
        tfrc.ns2(DUMBBELL, ns_path="/nonexistent/ns")
    assert "/nonexistent/ns" in str(raised.value)


def test_reproduce_returns_the_claims_table(tmp_path):
    claims = tfrc.reproduce(["e000-loss"], replications=2, quick=True, ns2=False, out=tmp_path / "report")
    assert list(claims.columns[:8]) == [
        "experiment", "claim", "metric", "relation", "paper", "ours", "status", "replications",
    ]
    assert len(claims) > 0 and (claims.experiment == "e000-loss").all()
    assert (claims.replications == 2).all()
    assert claims.status.str.match(r"^(holds|differs|inconclusive|not run)").all()
    assert ((claims.ci_low <= claims["mean"]) & (claims["mean"] <= claims.ci_high)).all()
    from_file = pd.read_csv(tmp_path / "report" / "claims.csv")
    assert list(from_file.experiment) == list(claims.experiment)
    assert np.allclose(from_file["mean"], claims["mean"], rtol=1e-12, equal_nan=True)
    with pytest.raises(RuntimeError) as raised:
        tfrc.reproduce(["e999-none"], quick=True, ns2=False)
    assert "e999-none" in str(raised.value)


def test_today_s_tcp_variants_simulate_and_sweep(tmp_path):
    """CUBIC and BBR (``variant = "cubic" | "bbr"`` of a TCP flow) run from Python as from
    ``tfrc sim``, and a sweep over the TCP flow's variant has one run per variant, the variant
    as a column and the single runs' numbers; a variant the model lacks is a ScenarioError."""
    goodputs = {}
    for variant in ["newreno", "cubic", "bbr"]:
        scenario = tfrc.Scenario.from_toml(DUMBBELL).set("flow.t.variant", variant)
        assert f'variant = "{variant}"' in scenario.to_toml()
        result = tfrc.simulate(scenario)
        tcp = next(flow for flow in result.summary["flows"] if flow["name"] == "t")
        assert tcp["goodput_bps"] > 100e3, (variant, tcp)
        goodputs[variant] = tcp["goodput_bps"]
    assert goodputs["cubic"] != goodputs["newreno"] and goodputs["bbr"] != goodputs["cubic"]
    grid = DUMBBELL + '\n[sweep]\n"flow.t.variant" = ["cubic", "bbr"]\n'
    done = tfrc.sweep(grid, tmp_path / "sweep", progress=False)
    assert (done.ran, done.skipped, done.failed) == (2, 0, [])
    runs = done.runs
    assert sorted(runs.variant.unique()) == ["bbr", "cubic"]
    for variant in ["cubic", "bbr"]:
        tcp = runs[(runs.variant == variant) & (runs.name == "t")]
        assert len(tcp) == 1 and tcp.goodput_bps.iloc[0] == goodputs[variant]
    with pytest.raises(tfrc.ScenarioError) as raised:
        tfrc.Scenario.from_toml(DUMBBELL).set("flow.t.variant", "vegas")
    assert "variant" in str(raised.value)
