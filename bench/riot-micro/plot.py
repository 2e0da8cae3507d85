#!/usr/bin/env python3
"""plot.py JSON OUTDIR: log-scale bars of each RIoTBench task's peak throughput on one thread
(the task's own loop per wall second and per CPU-second, and source -> task -> sink through
tidemark::run when measured with --runtime) next to the paper's Apache Storm figures."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py RESULT.json OUTDIR")
    with open(sys.argv[1]) as f:
        report = json.load(f)
    tasks = report["tasks"]
    codes = [t["code"] for t in tasks]
    x = range(len(tasks))
    runtime = {r["code"]: r for r in report.get("runtime", [])}
    w = 0.21
    fig, ax = plt.subplots(figsize=(13, 5))
    ax.bar([i - 1.5 * w for i in x], [t["storm_msg_s"] for t in tasks], w, color="#999999",
           hatch=["//" if t["storm_is_floor"] else "" for t in tasks], edgecolor="white",
           label="Storm (paper, 1 thread; hatched: the paper states only a floor)")

    def bars(offset, key, label, color):
        medians = [t[key] for t in tasks]
        spreads = [t[key + "_spread"] for t in tasks]
        ax.bar([i + offset * w for i in x], medians, w, color=color, label=label,
               yerr=[[m - s["min"] for m, s in zip(medians, spreads)],
                     [s["max"] - m for m, s in zip(medians, spreads)]], capsize=2)

    runs = report.get("repeats", 1)
    bars(-0.5, "throughput_msg_s", f"task loop, per wall second (median of {runs}, bar = range)", "#4c72b0")
    bars(0.5, "throughput_msg_per_cpu_s", "task loop, per CPU-second", "#55a868")
    if runtime:
        ax.bar([i + 1.5 * w for i, t in zip(x, tasks) if t["code"] in runtime],
               [runtime[t["code"]]["throughput_msg_per_cpu_s"] for t in tasks if t["code"] in runtime], w,
               label="source -> task -> sink via tidemark::run, per CPU-second", color="#c44e52")
    ax.set_yscale("log")
    ax.set_xticks(list(x))
    ax.set_xticklabels(codes)
    ax.set_ylabel("peak throughput (msg/s, log scale)")
    ax.set_title("RIoTBench micro-benchmark: one task on one thread (%s)" % report.get("cpu", ""))
    ax.grid(axis="y", which="major", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    os.makedirs(sys.argv[2], exist_ok=True)
    out = os.path.join(sys.argv[2], "riot-micro-throughput.png")
    fig.savefig(out, dpi=120)
    print("wrote", out)


if __name__ == "__main__":
    main()
