"""Sweeps on Dask distributed: each run one task, the results written by the client.

The client plans the runs (``tfrc._core.plan``: each run is self-contained TOML with its seed),
sends the ones missing from the dataset to the workers, and stores each run's four Parquet files
as it comes back, in the layout of the local sweep (``tfrc._core.Dataset``). A worker needs the
package installed (``pip install ./python``), the same build as the client's; it needs no shared
file system, except for scenarios that read trace files, which must exist at the same path.
"""

from __future__ import annotations

import sys

from . import _core


def run_task(run: str) -> list:
    """One run on a worker: its four Parquet files (flows, state, links, runs) as bytes."""
    return _core.execute(run)


def sweep_on_dask(scenario, out, seeds, client, allow_mixed_versions, progress):
    """``tfrc.sweep(..., client=client)``."""
    from distributed import as_completed

    from . import Sweep

    manifest, runs = _core.plan(scenario, seeds)
    dataset = _core.Dataset(out, manifest, allow_mixed_versions)
    ids = [_core.run_id(run) for run in runs]
    missing = [(run_id, run) for run_id, run in zip(ids, runs) if not dataset.has(run_id)]
    result = Sweep(out, skipped=len(runs) - len(missing))
    if not missing:
        return result
    futures = client.map(run_task, [run for _, run in missing], pure=False)
    run_of = {future.key: run_id for future, (run_id, _) in zip(futures, missing)}
    done = 0
    try:
        for future in as_completed(futures):
            run_id = run_of[future.key]
            try:
                dataset.store(run_id, future.result())
                result.ran += 1
            except Exception as error:  # the run failed, or its workers kept dying
                result.failed.append((run_id, f"{type(error).__name__}: {error}"))
            finally:
                future.release()
            done += 1
            if progress:
                print(
                    f"\rsweeping on Dask: {done}/{len(missing)} runs",
                    end="" if done < len(missing) else "\n",
                    file=sys.stderr,
                    flush=True,
                )
    except BaseException:
        client.cancel(futures)
        raise
    return result
