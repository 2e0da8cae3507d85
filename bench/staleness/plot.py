"""Plots the staleness benchmark: Aion figure 9 (a) and (b), and the predictive cleanup run."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
os.makedirs(outdir, exist_ok=True)
fig9 = doc["figure9"]
names = {"aion": "staleness-bounded", "deltat": "every Δt", "deltaev": "every Δevents"}

fig, (a, b) = plt.subplots(1, 2, figsize=(11, 3.8))
xs = [p["executions"] for p in fig9["a"]]
for key, marker in (("aion", "o"), ("deltat", "s"), ("deltaev", "^")):
    a.plot(xs, [p[key] for p in fig9["a"]], marker=marker, markersize=3, label=names[key])
for bound in (0.10, 0.05, 0.01):
    a.axhline(bound, color="gray", linewidth=0.6, linestyle=":")
a.set_yscale("log")
a.set_xlabel("executions")
a.set_ylabel("max staleness")
a.set_title(f"(a) lognormal late arrivals over {fig9['period_windows']:.0f} windows")
a.legend(fontsize=8)

dists = ["lnorm", "unif", "norm", "bursts"]
bounds = [0.10, 0.05, 0.01]
width = 0.27
labels = []
for i, (bound) in enumerate(bounds):
    for j, d in enumerate(dists):
        labels.append(f"{d}\n{bound:.2f}")
positions = range(len(labels))
for k, key in enumerate(("aion", "deltat", "deltaev")):
    heights, hatches = [], []
    for bound in bounds:
        for d in dists:
            row = next(p for p in fig9["b"] if p["distribution"] == d and abs(p["bound"] - bound) < 1e-9)
            heights.append(row[key] if row[key] is not None else 31)
            hatches.append(row[key] is None)
    bars = b.bar([p + (k - 1) * width for p in positions], heights, width, label=names[key])
    for bar, failed in zip(bars, hatches):
        if failed:
            bar.set_hatch("//")
b.axhline(30, color="gray", linewidth=0.6, linestyle=":")
b.set_xticks(list(positions))
b.set_xticklabels(labels, fontsize=6)
b.set_ylabel("fewest executions (hatched: > 30)")
b.set_title("(b) executions to reach a staleness bound")
b.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(outdir, "staleness_fig9.png"), dpi=120)
print("wrote", os.path.join(outdir, "staleness_fig9.png"))

c = doc["cleanup"]
fig, (s, l) = plt.subplots(1, 2, figsize=(11, 3.5))
for key, label in (("fixed", "fixed (conservative)"), ("predictive", "predictive 99 % / 95 %")):
    series = c[key]["series"]
    t = [p["t_s"] for p in series]
    s.plot(t, [p["state_bytes"] / 1e6 for p in series], label=label)
    l.plot(t, [p["allowed_lateness_ms"] / c["window_ms"] for p in series], label=label)
s.set_xlabel("event time (s)")
s.set_ylabel("window state (MB)")
s.set_title(f"average workload, {c['rate']:.0f} events/s, {c['window_ms'] / 1000:.0f} s windows")
s.legend(fontsize=8)
l.set_xlabel("event time (s)")
l.set_ylabel("allowed lateness of new windows (windows)")
l.set_title("lateness bound")
l.legend(fontsize=8)
fig.tight_layout()
fig.savefig(os.path.join(outdir, "staleness_cleanup.png"), dpi=120)
print("wrote", os.path.join(outdir, "staleness_cleanup.png"))
