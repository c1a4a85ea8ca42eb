#!/usr/bin/env python3
"""Writes summary.md: per recorded cell, each TCP class's mean goodput and the bottleneck's
utilisation in the kernel (testbed), our simulator, ns-3.37 with the two upstream BBR fixes that
`tfrc ns3` applies by default, and (cells with BBR) ns-3.37 as packaged, from the cells'
summary.json."""
import json
import math
import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
SIDES = ("kernel", "ours", "ns3", "ns3-packaged")


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
    print("Replication 0 of each cell of `conformance/modern.toml` (or, for the cells it lists, of")
    print("`outside-matrix.toml`: cells outside the matrix), one run per side (the kernel's in real time")
    print("through the testbed). Mean goodput per flow of each class in Mb/s, and the bottleneck's utilisation.")
    print("Re-record with `results/today-tcp/record.sh` (root, ns-3). \"ns-3.37 + fixes\" is `tfrc ns3`'s")
    print("default (upstream fixes #1026 and #735 applied to BBR, docs/ns3.md \"BBR\"); \"as packaged\" is")
    print("`tfrc ns3 --bbr-as-packaged`, recorded for the cells with BBR flows (the others do not change).\n")
    print("| cell | class | kernel | ours | ns-3.37 + fixes | ns-3.37 as packaged |")
    print("|---|---|---|---|---|---|")
    for cell in sorted(path for path in HERE.iterdir() if path.is_dir()):
        sides = {}
        for side in SIDES:
            path = cell / side / "summary.json"
            if path.exists():
                sides[side] = json.loads(path.read_text())
        if not sides:
            continue
        names = sorted({name for summary in sides.values() for name in classes(summary)})
        for name in names:
            cells = [
                f"{classes(sides[side]).get(name, float('nan')):.2f}" if side in sides else "–"
                for side in SIDES
            ]
            print(f"| {cell.name} | {name} | " + " | ".join(cells) + " |")
        utilisation = [
            f"{sides[side]['bottleneck']['utilization']:.3f}"
            if side in sides and sides[side].get("bottleneck")
            else "–"
            for side in SIDES
        ]
        print(f"| {cell.name} | utilisation | " + " | ".join(utilisation) + " |")

    replications()


# Two-sided 95 % quantiles of Student's t for 1..10 degrees of freedom (then the normal's 1.96
# is within 5 % from 12 on; 11-30 use 2.2-2.04 as tabulated).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131}


def mean_ci(values):
    """Mean and the half-width of its 95 % confidence interval (t distribution)."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return mean, T95.get(n - 1, 2.0) * sd / math.sqrt(n)


def jain(summary):
    rates = [f["goodput_bps"] for f in summary["flows"] if f["kind"] == "tcp" and f["goodput_bps"]]
    if len(rates) < 2:
        return None
    return sum(rates) ** 2 / len(rates) / sum(r * r for r in rates)


def per_flow(summary, key):
    values = [f[key] for f in summary["flows"] if f["kind"] == "tcp" and f.get(key) is not None]
    return sum(values) / len(values) if values else None


def replications():
    """Cells with `replications/<r>/<side>/summary.json`: means and 95 % intervals per side."""
    cells = sorted(p for p in HERE.iterdir() if (p / "replications").is_dir())
    if not cells:
        return
    print("\n## Replications\n")
    print("Cells run R times on each side with the replications' own seeds and start times (the kernel's")
    print("in real time, `REPLICATIONS=R record.sh CELL`): mean over the replications ± the half-width of")
    print("its 95 % interval. Jain's index is over every TCP flow's goodput; retransmissions and timeouts are")
    print("per flow (the kernel's `tcpi_total_retrans` and `tcpi_total_rto`). ns-3's timeouts here were recorded")
    print("before 2026-11-29, when `tfrc ns3` counted only the entries into ns-3's CA_LOSS state (one per")
    print("episode of timeouts), not every timeout as the kernel and ours count them: they undercount")
    print("wherever a resent packet is lost again (in cubic-bbr-rtt-20's replication 0, 58 of a CUBIC")
    print("flow's 112 timeouts; docs/ns3.md). The modern matrix's figures (docs/conformance.md) count them all.\n")
    sides = ("kernel", "ours", "ns3")
    print("| cell | metric | kernel | ours | ns-3.37 + fixes |")
    print("|---|---|---|---|---|")
    for cell in cells:
        runs = {side: [] for side in sides}
        for rep in sorted((cell / "replications").iterdir()):
            for side in sides:
                path = rep / side / "summary.json"
                if path.exists():
                    runs[side].append(json.loads(path.read_text()))
        metrics = {}
        for side in sides:
            for summary in runs[side]:
                for name, value in classes(summary).items():
                    metrics.setdefault(f"{name} (Mb/s per flow)", {}).setdefault(side, []).append(value)
                for label, value in (
                    ("Jain", jain(summary)),
                    ("utilisation", summary["bottleneck"]["utilization"] if summary.get("bottleneck") else None),
                    ("retransmissions per flow", per_flow(summary, "retransmissions")),
                    ("timeouts per flow", per_flow(summary, "timeouts")),
                ):
                    if value is not None:
                        metrics.setdefault(label, {}).setdefault(side, []).append(value)
        for label, by_side in metrics.items():
            texts = []
            for side in sides:
                values = by_side.get(side)
                if not values:
                    texts.append("–")
                    continue
                mean, half = mean_ci(values)
                digits = {"Jain": 3, "utilisation": 3, "retransmissions per flow": 0, "timeouts per flow": 1}.get(label, 2)
                texts.append(f"{mean:.{digits}f} ± {half:.{digits}f} (n={len(values)})")
            print(f"| {cell.name} | {label} | " + " | ".join(texts) + " |")


main()
