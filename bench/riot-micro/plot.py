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
    ax.bar([i - 1.5 * w for i in x], [t["storm_msg_s"] for t in tasks], w, label="Storm (paper, 1 thread)", color="#999999")
    ax.bar([i - 0.5 * w for i in x], [t["throughput_msg_s"] for t in tasks], w,
           label="task loop, per wall second (shared host)", color="#4c72b0")
    ax.bar([i + 0.5 * w for i in x], [t["throughput_msg_per_cpu_s"] for t in tasks], w,
           label="task loop, per CPU-second", color="#55a868")
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
