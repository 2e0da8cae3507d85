"""Plots the latency benchmark: p99 (solid, with the range over the repeats as a band) and p50
(dotted) latency against the input rate, one line per batching mode, one panel per pipeline; the
run as fast as it goes is a star at the throughput it reached."""
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
        color = f"C{i}"
        paced = sorted((p for p in points if p["mode"] == mode and p["rate"] > 0),
                       key=lambda p: p["rate"])
        xs = [p["rate"] for p in paced]
        p99 = [p["p99_ms"]["median"] for p in paced]
        ax.plot(xs, p99, marker="o", color=color, label=f"{mode} p99")
        ax.fill_between(xs, [p["p99_ms"]["min"] for p in paced],
                        [p["p99_ms"]["max"] for p in paced], color=color, alpha=0.12)
        ax.plot(xs, [p["p50_ms"]["median"] for p in paced], linestyle=":", color=color,
                label=f"{mode} p50")
        behind = [(x, y) for x, y, p in zip(xs, p99, paced) if not p["kept_up"]]
        if behind:
            ax.scatter(*zip(*behind), marker="x", s=60, color=color)
        # as fast as it goes: a star at the throughput the mode reached (p99), not joined
        for p in points:
            if p["mode"] == mode and p["rate"] <= 0:
                ax.scatter([p["events_per_s"]["median"]], [p["p99_ms"]["median"]], marker="*",
                           s=120, color=color, edgecolor="black", linewidth=0.5)
    ax.axhline(doc["targets"]["adaptive_p99_ms_at_1k"], color="red", linestyle="--", linewidth=0.8,
               label="1 ms")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input rate (events/s); star: as fast as it goes, at its throughput")
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
