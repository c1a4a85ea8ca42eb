"""Sweeps on Dask distributed: each run one task, the results written by the client.

The client plans the runs (``tfrc._core.plan``: each run is self-contained TOML with its seed)
and sends the ones missing from the dataset to the workers. A worker that sees the dataset's
directory stores the run's four Parquet files there itself; any other sends them back and the
client stores them. Either way the files are those of the local sweep (``tfrc._core.Dataset``). A worker needs the
package installed (``pip install ./python``), the same build as the client's; it needs no shared
file system, except for scenarios that read trace files, which must exist at the same path.
"""

from __future__ import annotations

import os
import sys
import uuid

from . import _core


def run_task(run: str, directory=None, probe=None) -> list:
    """One run on a worker. A worker that sees the dataset (``probe``, a file the client made in
    it, exists: a LocalCluster, or a shared file system) stores the run's files itself and
    returns ``[]``; any other returns the four Parquet files (flows, state, links, runs) as
    bytes for the client to store."""
    if directory is not None and probe is not None and os.path.exists(probe):
        return _core.execute(run, directory)
    return _core.execute(run)


def sweep_on_dask(
    scenario, out, seeds, client, allow_mixed_versions, progress, direct_writes=True
):
    """``tfrc.sweep(..., client=client)``. With ``direct_writes``, workers that see the dataset
    store their runs themselves (the same files: the bytes do not travel through the client);
    ``direct_writes=False`` sends every run back."""
    from distributed import as_completed

    from . import Sweep

    manifest, runs = _core.plan(scenario, seeds)
    dataset = _core.Dataset(out, manifest, allow_mixed_versions)
    ids = [_core.run_id(run) for run in runs]
    missing = [(run_id, run) for run_id, run in zip(ids, runs) if not dataset.has(run_id)]
    result = Sweep(out, skipped=len(runs) - len(missing))
    if not missing:
        return result
    probe = os.path.join(out, f".probe-{uuid.uuid4().hex}") if direct_writes else None
    if probe is not None:
        open(probe, "w").close()
    count = len(missing)
    futures = client.map(
        run_task, [run for _, run in missing], [out] * count, [probe] * count, pure=False
    )
    run_of = {future.key: run_id for future, (run_id, _) in zip(futures, missing)}
    done = 0
    try:
        for future in as_completed(futures):
            run_id = run_of[future.key]
            try:
                tables = future.result()
                if tables:
                    dataset.store(run_id, tables)
                elif not dataset.has(run_id):
                    raise RuntimeError("the worker stored nothing")
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
    finally:
        if probe is not None and os.path.exists(probe):
            os.remove(probe)
    return result
