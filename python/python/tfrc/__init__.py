"""TCP-Friendly Rate Control (RFC 5348) toolkit, from Python.

The same code as the ``tfrc`` command (a Rust extension, ``tfrc._core``): the throughput
equation, scenario files, the simulator, ns-2.35 runs, the reproduction of the papers and
parameter sweeps, locally or on a Dask cluster. Tables are pandas DataFrames built from Arrow
record batches; their columns are those of ``docs/output-format.md``.

>>> import tfrc
>>> scenario = tfrc.Scenario.from_toml("scenarios/e000-loss.toml").set("duration", "20s")
>>> result = tfrc.simulate(scenario, seed=1)
>>> result.flows.groupby("flow").recv_kbps.mean()
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd
import pyarrow as pa

from . import _core
from ._core import Scenario, ScenarioError, SweepError

__all__ = [
    "Scenario",
    "ScenarioError",
    "SweepError",
    "Result",
    "Sweep",
    "equation",
    "loss_event_rate",
    "simulate",
    "ns2",
    "reproduce",
    "sweep",
    "__version__",
]

#: This build: version and the git commit it was built from.
__version__ = _core.version()


def _frame(batch: pa.RecordBatch) -> pd.DataFrame:
    # Arrow's thread pool costs about a millisecond to start, more than it saves on small tables.
    return batch.to_pandas(use_threads=batch.num_rows > 200_000)


def _broadcast(*values):
    arrays = np.broadcast_arrays(*(np.asarray(value, dtype=np.float64) for value in values))
    shape = arrays[0].shape
    return shape, [np.ascontiguousarray(array).ravel() for array in arrays]


def _shaped(values: np.ndarray, shape):
    values = values.reshape(shape)
    return values.item() if shape == () else values


def equation(s, rtt, p, t_rto=None):
    """Allowed sending rate X in **bytes/s** by the equation of RFC 5348 §3.1 (b = 1).

    ``s`` segment size (bytes), ``rtt`` round-trip time (s), ``p`` loss event rate and
    ``t_rto`` (s, default 4·rtt), each a number or an array; arrays broadcast as in numpy. A
    scalar gives a float. NaN where an input is outside its domain; ``inf`` for p = 0.
    """
    if t_rto is None:
        shape, (s, rtt, p) = _broadcast(s, rtt, p)
        return _shaped(_core.equation(s, rtt, p), shape)
    shape, (s, rtt, p, t_rto) = _broadcast(s, rtt, p, t_rto)
    return _shaped(_core.equation(s, rtt, p, t_rto), shape)


def loss_event_rate(x, s, rtt):
    """The inverse of :func:`equation` (t_RTO = 4·rtt): the loss event rate that allows ``x``
    bytes/s. NaN where no p in [1e-12, 1] gives it (the rate is out of the equation's range)."""
    shape, (x, s, rtt) = _broadcast(x, s, rtt)
    return _shaped(_core.loss_event_rate(x, s, rtt), shape)


def _scenario(scenario: Union[Scenario, str, os.PathLike]) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    return Scenario.from_toml(scenario)


class Result:
    """One run: its tables ``flows``, ``state`` and ``links`` (pandas DataFrames with the columns
    of ``flows.csv``, ``state.csv`` and ``links.csv``) and its ``summary`` (``summary.json`` as a
    dict). The rows stay in Rust until a table is first used; each table is built once."""

    def __init__(self, run):
        self._run = run
        self._tables = {}
        self._summary = None

    def _table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            self._tables[name] = _frame(self._run.table(name))
        return self._tables[name]

    @property
    def flows(self) -> pd.DataFrame:
        """``flows.csv``: bytes, packets and rates per flow per interval."""
        return self._table("flows")

    @property
    def state(self) -> pd.DataFrame:
        """``state.csv``: sampled protocol state of the TFRC and TCP flows."""
        return self._table("state")

    @property
    def links(self) -> pd.DataFrame:
        """``links.csv``: queue, arrivals, departures and drops per link direction."""
        return self._table("links")

    @property
    def summary(self) -> dict:
        """``summary.json``: the run's and every flow's figures."""
        if self._summary is None:
            self._summary = json.loads(self._run.summary_json())
        return self._summary

    @property
    def wall_time_s(self) -> Optional[float]:
        """Wall time of the simulation itself (s); None for ns-2 runs."""
        return self._run.wall_time_s

    @property
    def events(self) -> Optional[int]:
        """Events the simulator processed; None for ns-2 runs."""
        return self._run.events

    def __repr__(self) -> str:
        return f"Result(scenario={self.summary['scenario']!r}, seed={self.summary['seed']})"


def simulate(scenario, seed: Optional[int] = None) -> Result:
    """Runs a scenario (a :class:`Scenario`, a path or TOML text) in the simulator, as
    ``tfrc sim`` does; ``seed`` overrides its seed. The GIL is released while it runs."""
    return Result(_core.simulate(_scenario(scenario), seed))


def ns2(scenario, seed: Optional[int] = None, ns_path=None, directory=None) -> Result:
    """Runs a scenario in ns-2.35 (``apt-get install ns2``), as ``tfrc ns2`` does, and returns
    its output converted to the simulator's tables. ns-2's files go to ``directory`` (default:
    a temporary directory, removed). Raises ``OSError`` when ns-2 is not installed."""
    scenario = _scenario(scenario)
    if directory is not None:
        return Result(_core.ns2(scenario, os.fspath(directory), seed, ns_path))
    with tempfile.TemporaryDirectory(prefix="tfrc-ns2-") as temporary:
        return Result(_core.ns2(scenario, temporary, seed, ns_path))


def reproduce(
    ids: Optional[Sequence[str]] = None,
    replications: Optional[int] = None,
    quick: bool = False,
    out=None,
    jobs: Optional[int] = None,
    ns2: bool = True,
    progress: bool = False,
    scenarios=None,
) -> pd.DataFrame:
    """Runs the papers' experiments (``tfrc reproduce``; all of them, or ``ids``) with
    ``replications`` replications each, writes the report into ``out`` (default: a temporary
    directory, removed) and returns the claims table (``claims.csv``): one row per claim with
    the paper's figure, ours with its 95 % interval, and the verdict. ``scenarios`` is the
    folder of experiment files (default: ./scenarios, else the source tree's)."""
    ids = list(ids) if ids is not None else None
    arguments = dict(
        ids=ids,
        replications=replications,
        quick=quick,
        jobs=jobs,
        no_ns2=not ns2,
        quiet=not progress,
        scenarios=os.fspath(scenarios) if scenarios is not None else None,
    )
    if out is not None:
        return _frame(_core.reproduce(os.fspath(out), **arguments))
    with tempfile.TemporaryDirectory(prefix="tfrc-reproduce-") as temporary:
        return _frame(_core.reproduce(temporary, **arguments))


@dataclass
class Sweep:
    """A sweep's Parquet dataset (``tfrc sweep``'s layout, docs/sweeps.md) and what the last
    call did. The tables are read when asked for."""

    path: str
    #: Runs run by this call.
    ran: int = 0
    #: Runs that were already in the dataset.
    skipped: int = 0
    #: Runs that failed: (run id, why).
    failed: list = field(default_factory=list)

    def table(self, name: str) -> pd.DataFrame:
        """One table: ``runs`` (a row per run and flow), ``flows``, ``state`` or ``links``."""
        return pd.read_parquet(os.path.join(self.path, name))

    @property
    def runs(self) -> pd.DataFrame:
        """A row per run and flow: the run's id, seed and grid parameters, then the flow's
        entry of ``summary.json``."""
        return self.table("runs")

    @property
    def flows(self) -> pd.DataFrame:
        """``flows.csv`` of every run, with the run's id, seed and parameters in front."""
        return self.table("flows")

    @property
    def state(self) -> pd.DataFrame:
        """``state.csv`` of every run."""
        return self.table("state")

    @property
    def links(self) -> pd.DataFrame:
        """``links.csv`` of every run."""
        return self.table("links")


def _seeds(seeds) -> list:
    if seeds is None:
        return []
    if isinstance(seeds, str):
        return _core.parse_seeds(seeds)
    if isinstance(seeds, (int, np.integer)):
        return [int(seeds)]
    return [int(seed) for seed in seeds]


def sweep(
    scenario,
    out="sweep",
    seeds: Union[None, str, int, Iterable[int]] = None,
    jobs: Optional[int] = None,
    client=None,
    allow_mixed_versions: bool = False,
    progress: bool = True,
) -> Sweep:
    """Runs every point of the scenario's ``[sweep]`` grid with every seed (``seeds``: a list,
    a range or ``"1-20"``; default the scenario's seed) into the Parquet dataset ``out``, as
    ``tfrc sweep`` does. Runs already in ``out`` are skipped, so an interrupted sweep resumes.

    Without ``client`` the runs share this machine's cores (``jobs``, default all); with a
    ``distributed.Client`` each run is one Dask task and the results are written here, in the
    same layout. A dataset of another build of the toolkit is refused unless
    ``allow_mixed_versions``. Raises :class:`SweepError` after the other runs finished when
    some failed (they are listed in ``.failed`` of the exception's ``sweep`` attribute)."""
    scenario = _scenario(scenario)
    out = os.fspath(out)
    seeds = _seeds(seeds)
    if client is None:
        ran, skipped, failed = _core.sweep_local(
            scenario, out, seeds, jobs, allow_mixed_versions, not progress
        )
        result = Sweep(out, ran, skipped, failed)
    else:
        from ._dask import sweep_on_dask

        result = sweep_on_dask(
            scenario, out, seeds, client, allow_mixed_versions, progress
        )
    if result.failed:
        error = SweepError(
            f"{len(result.failed)} runs failed (the {result.ran + result.skipped} others are "
            f"in {out}; call again to retry): "
            + "; ".join(f"{run}: {why}" for run, why in result.failed)
        )
        error.sweep = result
        raise error
    return result
