#!/usr/bin/env python3
"""Plots bench_riot-io's JSON: peak rate per I/O task on one thread (log scale), with the
RIoTBench paper's Apache Storm rate where the paper states one. Usage: plot.py JSON OUTDIR"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    doc = json.load(open(sys.argv[1]))
    os.makedirs(sys.argv[2], exist_ok=True)
    tasks = doc["tasks"]
    labels = [t["label"] for t in tasks]
    rates = [t["rate"] for t in tasks]
    paper = [t["paper_storm_rate"] for t in tasks]
    fig, ax = plt.subplots(figsize=(11, 5))
    xs = range(len(tasks))
    spreads = [t["rate_spread"] for t in tasks]
    ax.bar([x - 0.2 for x in xs], rates, width=0.4,
           yerr=[[r - s["min"] for r, s in zip(rates, spreads)], [s["max"] - r for r, s in zip(rates, spreads)]],
           capsize=2, label=f"Tidemark task, 1 thread (median of {doc.get('repeats', 1)}, bar = range)")
    ax.bar([x + 0.2 for x in xs], [p if p is not None else 0 for p in paper], width=0.4,
           label="RIoTBench paper, Storm, 1 core (where stated)")
    ax.set_yscale("log")
    ax.set_ylabel("messages / s")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(labels, rotation=45, ha="right", fontsize=9)
    ax.set_title("RIoTBench I/O and plot tasks: peak rate on one thread")
    ax.legend()
    fig.tight_layout()
    out = os.path.join(sys.argv[2], "riot-io.png")
    fig.savefig(out, dpi=110)
    print("wrote", out)


if __name__ == "__main__":
    main()
