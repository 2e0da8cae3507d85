#!/usr/bin/env python3
"""Plots of bench_aion's JSON like the Aion paper's figures: resident memory per past windows
against the memory budget (fig. 2), ingestion rate (fig. 3), processing rate (fig. 5), and the
ablation of the average workload (fig. 8) with the on-time result delay."""
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
budget_mb = report["state_budget_bytes"] / 2**20
workloads = [w for w in ["aion-average", "aion-bigrams", "aion-stock", "aion-linear-road"]
             if any(p["workload"] == w for p in points)]


def series(workload, state, variant, field):
    ps = sorted((p for p in points if p["workload"] == workload and p["state"] == state
                 and p["variant"] == variant), key=lambda p: p["k"])
    return [p["k"] for p in ps], [p[field] for p in ps]


def ranges(workload, state, field):
    """The distance from the median to the lowest and the highest of the repeated runs."""
    ks, spreads = series(workload, state, "full", field + "s")
    return [[s["median"] - s["min"] for s in spreads], [s["max"] - s["median"] for s in spreads]]


def figure(name, field, ylabel):
    fig, axes = plt.subplots(1, len(workloads), figsize=(4 * len(workloads), 3.6), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        for state, style in (("memory", "o-"), ("tiered", "s-")):
            ks, ys = series(w, state, "full", field)
            if not ks:
                continue
            label = "baseline (memory)" if state == "memory" else "tiered (Aion)"
            if field in ("ingestion_rate", "processing_rate"):
                ax.errorbar(ks, ys, yerr=ranges(w, state, field), fmt=style, capsize=3, label=label)
            else:
                ax.plot(ks, ys, style, label=label)
        if field == "peak_rss_mb":
            for state, style in (("memory", "o:"), ("tiered", "s:")):
                ks, ys = series(w, state, "full", "median_rss_mb")
                if ks:
                    ax.plot(ks, ys, style, alpha=0.6, label=f"{state} median")
            ax.axhline(budget_mb, color="red", linestyle="--", label=f"budget {budget_mb:.0f} MB")
            ax.set_yscale("log")
        ax.set_title(w.replace("aion-", ""))
        ax.set_xlabel("past windows K")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"windows of {report['window_mb']:.0f} MB")
    fig.tight_layout()
    fig.savefig(out / f"aion_{name}.png", dpi=90)


figure("memory", "peak_rss_mb", "resident MB (peak; dotted: median)")
figure("ingestion", "ingestion_rate", "events/s into the window (median, range)")
figure("processing", "processing_rate", "events/s of window busy time (median, range)")

ablation = sorted({p["k"] for p in points if p["workload"] == "aion-average" and p["variant"] != "full"})
if ablation:
    variants = [("full", "aion-full"), ("full-cold", "aion-full, cold cache"),
                ("no-prestaging-cold", "no pre-staging, cold cache"),
                ("eager-destage", "destage at expiry"),
                ("one-serialization-thread", "1 serialization thread"),
                ("unprioritized-io", "4 I/O actors, no priorities"), ("window-order", "windows in window order")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 3.8))
    width = 0.8 / len(variants)
    for ax, (field, label) in zip(axes[:2], [("processing_rate", "processing events/s"),
                                             ("peak_rss_mb", "resident MB (peak)")]):
        for i, (v, name) in enumerate(variants):
            ys = []
            for k in ablation:
                p = [q for q in points if q["workload"] == "aion-average" and q["state"] == "tiered"
                     and q["variant"] == v and q["k"] == k]
                ys.append(p[0][field] if p else 0)
            ax.bar([j + i * width for j in range(len(ablation))], ys, width, label=name)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(ablation))], [f"K = {k}" for k in ablation])
        ax.set_ylabel(label)
        ax.grid(alpha=0.3, axis="y")
    axes[0].legend(fontsize=7)
    delays = report.get("on_time_delay", [])
    for i, (key, name) in enumerate([("on_time_first", "on-time first"), ("window_order", "window order")]):
        axes[2].bar([j + i * 0.4 for j in range(len(delays))], [d[key + "_ms_max"] for d in delays], 0.4,
                    label=name + " (max)")
        axes[2].plot([j + i * 0.4 for j in range(len(delays))], [d[key + "_ms_mean"] for d in delays], "k_",
                     markersize=20)
    axes[2].set_xticks([j + 0.2 for j in range(len(delays))], [f"K = {d['k']}" for d in delays])
    axes[2].set_ylabel("on-time result delay ms (bar: max, line: mean)")
    axes[2].legend(fontsize=7)
    axes[2].grid(alpha=0.3, axis="y")
    fig.suptitle("average workload: effect of each optimization")
    fig.tight_layout()
    fig.savefig(out / "aion_ablation.png", dpi=90)
