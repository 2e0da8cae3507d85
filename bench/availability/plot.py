"""Plots the availability benchmark: left, the fraction of queries still running after the crashes,
live (observed at the sinks) against the simulator's for the same plans and crash sets, per
heuristic; right, the simulator's curve of the deployed plans over the crash probability, as the
heuristic replication paper's figure 4 plots its setting, with the live means at the measured p."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
s = doc["settings"]
names = ["product", "random"]

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
xs = range(len(names))
width = 0.27
for off, key, label, colour in [(-width, "live", "live (at the sinks)", "C0"),
                                (0, "sim", "simulated, same crash sets", "C1"),
                                (width, "predicted", f"predicted at p = {s['p']}", "C2")]:
    vals = [100 * doc[f"{key}_{n}"] for n in names]
    left.bar([x + off for x in xs], vals, width, label=label, color=colour)
    for x, v in zip(xs, vals):
        left.text(x + off, v + 0.3, f"{v:.1f}", ha="center", fontsize=7)
left.set_xticks(list(xs))
left.set_xticklabels(names)
left.set_ylim(max(0, min(100 * doc[f"{k}_{n}"] for k in ["live", "sim", "predicted"]
                         for n in names) - 10), 101)
left.set_ylabel("queries still running (%)")
left.set_title(f"{s['nodes']} nodes, {s['queries']} queries, spare {s['spare']}, "
               f"{s['trials']} trials at p = {s['p']}", fontsize=9)
left.legend(fontsize=7, loc="lower right")

for n, colour in zip(names, ["C0", "C3"]):
    curve = doc["per_heuristic"][n]["curve"]
    right.plot([100 * c["p"] for c in curve], [100 * c["running"] for c in curve], marker="o",
               color=colour, label=f"{n} (50%), simulated")
    right.scatter([100 * s["p"]], [100 * doc[f"live_{n}"]], marker="*", s=120, color=colour,
                  edgecolor="k", zorder=3, label=f"{n}, live")
right.set_xlabel("Host crash probability (%)")
right.set_ylabel("Running queries (%)")
right.set_title("the deployed plans as the paper's fig. 4 plots its setting", fontsize=9)
right.grid(alpha=0.3)
right.legend(fontsize=7)
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
path = os.path.join(outdir, "availability.png")
fig.savefig(path, dpi=120)
print("wrote", path)
