"""The example notebook runs top to bottom (its code cells, in order, in one namespace)."""

import json
import os

import matplotlib

matplotlib.use("Agg")

from conftest import ROOT

NOTEBOOK = os.path.join(ROOT, "examples", "friendliness.ipynb")


def test_the_friendliness_notebook_runs_and_measures_every_loss_rate(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cells = json.load(open(NOTEBOOK))["cells"]
    code = [cell for cell in cells if cell["cell_type"] == "code"]
    lines = sum(len("".join(cell["source"]).strip().splitlines()) for cell in code)
    namespace = {}
    for cell in code:
        exec(compile("".join(cell["source"]), NOTEBOOK, "exec"), namespace)
    ratio = namespace["ratio"]
    assert list(ratio.index) == [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1]
    assert ratio["mean"].notna().all() and (ratio["mean"] > 0).all()
    assert (tmp_path / "friendliness-sweep" / "runs").is_dir()
    figure = namespace["ax"].figure
    assert len(namespace["ax"].lines) >= 2
    figure.savefig(tmp_path / "friendliness.png")
    # The code besides the scenario text stays short.
    toml = "".join(code[0]["source"]).count("\n")
    assert lines - toml <= 25, lines - toml
