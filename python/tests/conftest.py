"""Shared scenarios and helpers of the Python package's tests."""

import os
import shutil

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

#: TFRC and TCP on a dumbbell (1 Mb/s, base RTT 50 ms) for 10 s: one run in tens of ms.
DUMBBELL = """
name = "dumbbell"
duration = "10s"
seed = 3

[[link]]
between = ["sender", "router"]
rate = "100Mbps"
delay = "1ms"

[[link]]
between = ["router", "receiver"]
rate = "1Mbps"
delay = "24ms"
loss = { kind = "bernoulli", rate = 0.01 }

[[flow]]
name = "a"
kind = "tfrc"
from = "sender"
to = "receiver"

[[flow]]
name = "t"
kind = "tcp"
from = "sender"
to = "receiver"
"""

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
