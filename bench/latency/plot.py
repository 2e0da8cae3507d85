"""Plots the latency benchmark: p99 (solid) and p50 (dotted) latency against the input rate, one
line per batching mode, one panel per pipeline; the range over the repeats as a band."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
pipelines = list(doc["pipelines"])
fig, axes = plt.subplots(1, len(pipelines), figsize=(6 * len(pipelines), 4), squeeze=False)
for ax, name in zip(axes[0], pipelines):
    points = doc["pipelines"][name]
    modes = list(dict.fromkeys(p["mode"] for p in points))
    for i, mode in enumerate(modes):
        mine = [p for p in points if p["mode"] == mode]
        # the maximum rate (rate 0) is plotted at the throughput the mode reached
        xs = [p["rate"] if p["rate"] > 0 else p["events_per_s"]["median"] for p in mine]
        order = sorted(range(len(xs)), key=lambda k: xs[k])
        xs = [xs[k] for k in order]
        mine = [mine[k] for k in order]
        color = f"C{i}"
        p99 = [p["p99_ms"]["median"] for p in mine]
        ax.plot(xs, p99, marker="o", color=color, label=f"{mode} p99")
        ax.fill_between(xs, [p["p99_ms"]["min"] for p in mine], [p["p99_ms"]["max"] for p in mine],
                        color=color, alpha=0.15)
        ax.plot(xs, [p["p50_ms"]["median"] for p in mine], linestyle=":", color=color,
                label=f"{mode} p50")
        behind = [(x, y) for x, y, p in zip(xs, p99, mine) if not p["kept_up"]]
        if behind:
            ax.scatter(*zip(*behind), marker="x", s=60, color=color)
    ax.axhline(doc["targets"]["adaptive_p99_ms_at_1k"], color="red", linestyle="--", linewidth=0.8,
               label="1 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input rate (events/s; last point: as fast as it goes)")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{name} pipeline (x: fell behind its rate)")
    ax.legend(fontsize=7, ncol=2)
fig.suptitle(f"latency against rate, {doc['seconds_per_run']:g} s per run, "
             f"median of {doc['repeats']}, 2 cores", fontsize=10)
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
path = os.path.join(outdir, "latency.png")
fig.savefig(path, dpi=120)
print("wrote", path)
