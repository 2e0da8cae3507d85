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
sizes = [p["batch_size"] for p in doc["batch_sweep"]]
rates = [p["events_per_s"] / 1e6 for p in doc["batch_sweep"]]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(sizes, rates, marker="o", label="Tidemark (actor per stage, credit 8)")
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
