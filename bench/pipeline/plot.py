"""Plots the pipeline benchmark: throughput against batch size, with the plain loop for scale."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
sweep = sorted(doc["batch_sweep"], key=lambda p: p["batch_size"])
sizes = [p["batch_size"] for p in sweep]
rates = [p["events_per_s"] / 1e6 for p in sweep]
spreads = [p["events_per_s_spread"] for p in sweep]
below = [r - s["min"] / 1e6 for r, s in zip(rates, spreads)]
above = [s["max"] / 1e6 - r for r, s in zip(rates, spreads)]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.errorbar(sizes, rates, yerr=[below, above], marker="o", capsize=3,
            label=f"Tidemark (actor per stage): median, bar = range of {doc['repeats']} runs")
ax.axhline(doc["plain_loop_events_per_s"] / 1e6, color="gray", linestyle="--", label="plain loop")
ax.axhline(doc["target_events_per_s"] / 1e6, color="red", linestyle=":", label="target")
ax.set_xscale("log", base=2)
ax.set_xlabel("batch size (events)")
ax.set_ylabel("million events / s")
ax.set_title(f"pipeline: {doc['events'] / 1e6:.0f} M events, 2 cores")
ax.legend(fontsize=8)
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
fig.savefig(os.path.join(outdir, "pipeline.png"), dpi=120)
print("wrote", os.path.join(outdir, "pipeline.png"))
