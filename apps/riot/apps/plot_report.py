#!/usr/bin/env python3
"""Plots of RIoTBench application runs (report.json files written by riot-etl/-stats/-train/-pred):
latency and jitter box plots like the paper's Fig. 8-9, input/output rate and CPU/memory over time.

usage: plot_report.py OUTDIR REPORT.json [REPORT.json ...]   (Debian's /usr/bin/python3 + matplotlib)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def label(r):
    return f"{r['app'].upper()}\n{r['dataset']}"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    reports = [json.load(open(p)) for p in sys.argv[2:]]

    # latency box plots (whiskers at the 5th and 95th percentile, as box plots of the paper)
    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(reports), 4))
    data = [r["outputs"][r["primary_output"]]["latency_sample_ms"] for r in reports]
    ax.boxplot(data, labels=[label(r) for r in reports], whis=(5, 95), showfliers=False)
    ax.set_ylabel("end-to-end latency (ms)")
    ax.set_title("latency, source emit to sink")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "latency.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(1.8 + 1.6 * len(reports), 4))
    ax.boxplot([r.get("jitter", []) or [0] for r in reports], labels=[label(r) for r in reports],
               whis=(5, 95), showfliers=False)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_ylabel("jitter per second")
    ax.set_title("output rate jitter (paper's J_t)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "jitter.png"), dpi=110)

    fig, axes = plt.subplots(len(reports), 2, figsize=(10, 2.6 * len(reports)), squeeze=False)
    for row, r in zip(axes, reports):
        o = r["outputs"][r["primary_output"]]
        whole = max(1, int(r["input_seconds"]))  # the last, partial second would look like a drop
        row[0].plot(r["rate_in_per_second"][:whole], label="in")
        row[0].plot(o["rate_per_second"][:whole], label=f"out ({r['primary_output']})")
        row[0].set_ylabel("msg/s")
        row[0].set_title(f"{r['app'].upper()} {r['dataset']}: throughput")
        row[0].legend(fontsize=8)
        t = [s["t"] for s in r["resources"]]
        row[1].plot(t, [s["cpu_percent"] for s in r["resources"]], color="tab:red")
        row[1].set_ylabel("CPU %", color="tab:red")
        twin = row[1].twinx()
        twin.plot(t, [s["rss_mb"] for s in r["resources"]], color="tab:blue")
        twin.set_ylabel("RSS MB", color="tab:blue")
        row[1].set_title("CPU and memory")
    for a in axes[-1]:
        a.set_xlabel("seconds")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "timeline.png"), dpi=110)
    print("plots: " + ", ".join(os.path.join(out, f) for f in ("latency.png", "jitter.png", "timeline.png")))


if __name__ == "__main__":
    main()
