#!/usr/bin/env python3
"""Real (testbed) vs simulated runs: mean receiver throughput per flow from summary.json.

Usage: bench/emu/compare.py REAL_DIR:SIM_DIR [REAL_DIR:SIM_DIR ...]
Prints a Markdown table: scenario, flow, real and simulated goodput (kb/s), difference (%).
"""
import json
import sys


def load(directory):
    with open(f"{directory}/summary.json") as handle:
        return json.load(handle)


def main(pairs):
    print("| run | flow | real (kb/s) | simulated (kb/s) | difference |")
    print("|---|---|---|---|---|")
    for pair in pairs:
        real_dir, sim_dir = pair.split(":")
        real, sim = load(real_dir), load(sim_dir)
        sim_flows = {flow["name"]: flow for flow in sim["flows"]}
        for flow in real["flows"]:
            other = sim_flows.get(flow["name"])
            if other is None:
                continue
            r, s = flow["goodput_bps"] / 1000, other["goodput_bps"] / 1000
            difference = (r / s - 1) * 100 if s else float("nan")
            print(f"| {real_dir.rstrip('/').split('/')[-1]} | {flow['name']} | {r:.1f} | {s:.1f} | {difference:+.1f} % |")


if __name__ == "__main__":
    main(sys.argv[1:])
