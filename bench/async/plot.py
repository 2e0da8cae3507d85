"""Plots the async benchmark: lookup join throughput by concurrency (best run per level), with
the ideal linear speedup over concurrency 1 and the 10x target at 16."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
best = {}
for run in doc["runs"]:
    c = run["concurrency"]
    best[c] = max(best.get(c, 0), run["events_per_s"])
levels = sorted(best)
rates = [best[c] for c in levels]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(levels, rates, marker="o", label="table lookup join, synchronizer on")
ax.plot(levels, [rates[0] * c for c in levels], color="gray", linestyle="--", label="linear in concurrency")
ax.axhline(rates[0] * 10, color="red", linestyle=":", label="target at 16: 10 x concurrency 1")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("lookups in flight (concurrency)")
ax.set_ylabel("events / s")
ax.set_title(f"async: {doc['elements']} lookups, {doc['latency_us'] / 1000:g} ms each, 2 cores")
ax.legend(fontsize=8)
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
fig.savefig(os.path.join(outdir, "async.png"), dpi=120)
print("wrote", os.path.join(outdir, "async.png"))
