#!/usr/bin/env python3
"""Plots bench_replication's JSON like figures 4 and 5 of the heuristic replication paper.

usage: plot.py REPORT.json OUTDIR
  replication_heuristics.png  running queries vs host failure probability per heuristic at 50 %
                              spare, with 100 % spare for reference (the paper's figure 4)
  replication_spare.png       running queries vs host failure probability per spare level for
                              the product heuristic (the paper's figure 5)
  replication_spare_curve.png running queries vs spare level at p = 2 % for every strategy
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        report = json.load(f)
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    ps = [100 * p for p in report["failure_probabilities"]]
    spare = report["spare_percent"]
    series = {s["name"]: s for s in report["series"]}

    def running(name, level):
        return [100 * x for x in series[name]["running"][spare.index(level)]]

    title = (f"{report['runs']} runs, {report['hosts']} hosts, "
             f"{report['workload']['queries']:.0f} queries")

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(ps, running("product", 100), "k--", marker="o", label="product (100%)")
    for name in ["product", "low-utilization", "out-degree", "random"]:
        ax.plot(ps, running(name, 50), marker="o", label=f"{name} (50%)")
    ax.set_xlabel("Host crash probability (%)")
    ax.set_ylabel("Running queries (%)")
    ax.set_title("Heuristics at 50 % spare (paper fig. 4)\n" + title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "replication_heuristics.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6, 4))
    for level in [100, 90, 50, 10, 1, 0]:
        if level in spare:
            ax.plot(ps, running("product", level), marker="o", label=f"{level}%")
    ax.set_xlabel("Host crash probability (%)")
    ax.set_ylabel("Running queries (%)")
    ax.set_title("Spare resources, product heuristic (paper fig. 5)\n" + title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title="spare")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "replication_spare.png"), dpi=120)

    k = report["failure_probabilities"].index(0.02)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, s in series.items():
        ax.plot(spare, [100 * row[k] for row in s["running"]], marker=".", label=name)
    ax.set_xlabel("Spare resources (% of load)")
    ax.set_ylabel("Running queries (%) at p = 2 %")
    ax.set_title("Every strategy by spare level\n" + title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "replication_spare_curve.png"), dpi=120)


if __name__ == "__main__":
    main()
