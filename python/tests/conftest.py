"""Shared scenarios and helpers of the Python package's tests."""

import os
import shutil

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

#: TFRC and TCP on a dumbbell (1 Mb/s, base RTT 50 ms, 1 % loss) for 10 s, seed 3: one run in
#: tens of ms (examples/dumbbell.toml).
DUMBBELL = open(os.path.join(ROOT, "examples", "dumbbell.toml")).read()

#: The dumbbell with a grid of 5 loss rates × 2 buffers (10 points).
GRID = (
    DUMBBELL
    + """
[sweep]
"link.1.loss.rate" = [0.0, 0.005, 0.01, 0.02, 0.05]
"link.1.queue.limit" = [10, 40]
"""
)


def in_ci() -> bool:
    return os.environ.get("CI") == "true"


def need(program: str, why: str):
    """Skips (outside CI) or fails (under CI=true) when `program` is not installed."""
    if shutil.which(program) is None:
        if in_ci():
            pytest.fail(f"{program} is required under CI=true: {why}")
        pytest.skip(f"{program} is not installed: {why}")
