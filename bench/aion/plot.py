#!/usr/bin/env python3
"""Plots of bench_aion's JSON like the Aion paper's figures: resident memory per past windows
(fig. 2), on-time ingestion rate (fig. 3), processing rate (fig. 5), and the ablation (fig. 8)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report = json.load(open(sys.argv[1]))
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
points = report["points"]
workloads = ["aion-average", "aion-bigrams", "aion-stock", "aion-linear-road"]


def series(workload, state, variant, field):
    ps = sorted((p for p in points if p["workload"] == workload and p["state"] == state
                 and p["variant"] == variant), key=lambda p: p["k"])
    return [p["k"] for p in ps], [p[field] for p in ps]


def figure(name, field, ylabel, budget_line=False):
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    for ax, w in zip(axes, workloads):
        for state, style in (("memory", "o-"), ("tiered", "s-")):
            ks, ys = series(w, state, "full", field)
            if ks:
                ax.plot(ks, ys, style, label="baseline (memory)" if state == "memory" else "tiered (Aion)")
        if field == "peak_rss_mb":
            for state, style in (("memory", "o:"), ("tiered", "s:")):
                ks, ys = series(w, state, "full", "median_rss_mb")
                if ks:
                    ax.plot(ks, ys, style, alpha=0.6, label=f"{state} median")
        ax.set_title(w.replace("aion-", ""))
        ax.set_xlabel("past windows K")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"aion_{name}.png", dpi=90)


figure("memory", "peak_rss_mb", "resident MB (peak; dotted: median)")
figure("ingestion", "ingestion_rate_on_time", "on-time events/s")
figure("processing", "processing_rate", "events/s of window busy time")

fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
variants = [("full", "aion-full"), ("no-prestaging", "no pre-staging"),
            ("one-serialization-thread", "1 serialization thread"), ("unprioritized-io", "4 I/O threads, no priorities")]
for ax, (field, label) in zip(axes, [("peak_rss_mb", "resident MB (peak)"),
                                      ("ingestion_rate_all", "events/s (all)"),
                                      ("processing_rate", "processing events/s")]):
    for v, name in variants:
        ks, ys = series("aion-average", "tiered", v, field)
        if ks:
            ax.plot(ks, ys, "o-", label=name)
    ax.set_xlabel("past windows K")
    ax.set_ylabel(label)
    ax.grid(alpha=0.3)
axes[0].legend(fontsize=7)
fig.suptitle("average workload: effect of each optimization")
fig.tight_layout()
fig.savefig(out / "aion_ablation.png", dpi=90)
