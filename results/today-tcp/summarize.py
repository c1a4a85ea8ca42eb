#!/usr/bin/env python3
"""Writes summary.md: per recorded cell, each TCP class's mean goodput and the bottleneck's
utilisation in the kernel (testbed), our simulator and ns-3.37, from the cells' summary.json."""
import json
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent


def classes(summary):
    """Mean goodput (Mb/s) per variant (flows are named by variant: cubic1, bbr2, ...)."""
    sums = {}
    for flow in summary["flows"]:
        match = re.fullmatch(r"([a-z]+)\d+", flow["name"])
        if not match or flow.get("goodput_bps") is None:
            continue
        sums.setdefault(match.group(1), []).append(flow["goodput_bps"] / 1e6)
    return {name: sum(values) / len(values) for name, values in sums.items()}


def main():
    print("# Today's TCP: the kernel beside our simulator and ns-3.37\n")
    print("Replication 0 of each cell of `conformance/modern.toml`, one run per side (the kernel's in real time")
    print("through the testbed). Mean goodput per flow of each class in Mb/s, and the bottleneck's utilisation.")
    print("Re-record with `results/today-tcp/record.sh` (root, ns-3).\n")
    print("| cell | class | kernel | ours | ns-3.37 |")
    print("|---|---|---|---|---|")
    for cell in sorted(path for path in HERE.iterdir() if path.is_dir()):
        sides = {}
        for side in ("kernel", "ours", "ns3"):
            path = cell / side / "summary.json"
            if path.exists():
                sides[side] = json.loads(path.read_text())
        if not sides:
            continue
        names = sorted({name for summary in sides.values() for name in classes(summary)})
        for name in names:
            cells = [
                f"{classes(sides[side]).get(name, float('nan')):.2f}" if side in sides else "–"
                for side in ("kernel", "ours", "ns3")
            ]
            print(f"| {cell.name} | {name} | " + " | ".join(cells) + " |")
        utilisation = [
            f"{sides[side]['bottleneck']['utilization']:.3f}"
            if side in sides and sides[side].get("bottleneck")
            else "–"
            for side in ("kernel", "ours", "ns3")
        ]
        print(f"| {cell.name} | utilisation | " + " | ".join(utilisation) + " |")


main()
