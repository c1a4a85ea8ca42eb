"""``python -m tfrc sweep``: a sweep from the command line, locally or on Dask.

``tfrc sweep --dask ADDRESS`` (the Rust command) runs this; its arguments are the same.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    import tfrc

    parser = argparse.ArgumentParser(prog="python -m tfrc")
    commands = parser.add_subparsers(dest="command", required=True)
    sweep = commands.add_parser(
        "sweep", help="run a scenario's [sweep] grid × seeds into one Parquet dataset"
    )
    sweep.add_argument("scenario", help="scenario file (TOML)")
    sweep.add_argument("--out", "-o", default="sweep", help="dataset directory (resumed)")
    sweep.add_argument("--seeds", help="seeds and ranges, e.g. 1-20 or 1,2,10-12")
    sweep.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a key"
    )
    sweep.add_argument("--jobs", "-j", type=int, help="local runs in parallel")
    sweep.add_argument("--dask", metavar="ADDRESS", help="Dask scheduler, tcp://HOST:8786")
    sweep.add_argument(
        "--timeout", type=float, default=20.0, help="seconds to reach the scheduler"
    )
    sweep.add_argument("--allow-mixed-versions", action="store_true")
    sweep.add_argument("--quiet", "-q", action="store_true")
    args = parser.parse_args(argv)

    try:
        scenario = tfrc.Scenario.from_toml(args.scenario)
        for assignment in args.set:
            key, separator, value = assignment.partition("=")
            if not separator:
                raise tfrc.ScenarioError(f"--set {assignment}: expected KEY=VALUE")
            scenario.set(key, value)
        seeds = tfrc._core.parse_seeds(args.seeds) if args.seeds else None
        client = None
        if args.dask:
            from distributed import Client

            try:
                client = Client(args.dask, timeout=args.timeout)
            except OSError as error:
                print(
                    f"python -m tfrc sweep: cannot reach the Dask scheduler at {args.dask}: "
                    f"{error}",
                    file=sys.stderr,
                )
                return 1
        try:
            done = tfrc.sweep(
                scenario,
                args.out,
                seeds=seeds,
                jobs=args.jobs,
                client=client,
                allow_mixed_versions=args.allow_mixed_versions,
                progress=not args.quiet,
            )
        finally:
            if client is not None:
                client.close()
    except (tfrc.ScenarioError, tfrc.SweepError, ValueError) as error:
        print(f"python -m tfrc sweep: {error}", file=sys.stderr)
        return 1
    if not args.quiet:
        print(
            f"{done.ran + done.skipped} runs: {done.ran} run now, {done.skipped} already in "
            f"{done.path}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
