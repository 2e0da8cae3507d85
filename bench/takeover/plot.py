"""Plots the takeover benchmark: per kill, the longest pause between results at the sink from the
kill on (bars), the longest pause before the kill in the same run (dots), against the fault-free
runs' longest pause (line, with their range as a band) and the issue's bound 100 ms above it."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
kills = doc["per_kill"]
xs = list(range(1, len(kills) + 1))
baseline = doc["baseline_gap_ms"]
calm = [r["gap_ms"] for r in doc["baseline_runs"]]

fig, ax = plt.subplots(figsize=(8, 4))
ax.bar(xs, [k["gap_ms"] for k in kills], color="C0", label="longest pause from the kill")
ax.scatter(xs, [k["gap_before_kill_ms"] for k in kills], color="C1", zorder=3, s=18,
           label="longest pause before the kill (same run)")
if calm:
    ax.axhspan(min(calm), max(calm), color="C2", alpha=0.15)
ax.axhline(baseline, color="C2", label=f"fault-free runs (median {baseline:.0f} ms, range band)")
ax.axhline(baseline + 100, color="red", linestyle="--", linewidth=0.8,
           label="fault-free + 100 ms (issue 16's bound)")
bad = [x for x, k in zip(xs, kills) if k["missing"] or k["duplicated"]]
if bad:
    ax.scatter(bad, [0] * len(bad), marker="x", color="red", s=60, label="results differ")
ax.set_xlabel("kill (SIGKILL of the window primaries' node, one per run)")
ax.set_ylabel("longest pause between results at the sink (ms)")
ax.set_xticks(xs if len(xs) <= 20 else [x for x in xs if x == 1 or x % 5 == 0])
ax.set_ylim(0, max([k["gap_ms"] for k in kills] + [baseline + 100]) * 1.25)
ax.set_title(f"takeover: {doc['kills']} kills, p50 {doc['gap_p50_ms']:.0f} ms, max "
             f"{doc['gap_max_ms']:.0f} ms; missing {doc['missing']}, duplicated "
             f"{doc['duplicated']}", fontsize=10)
ax.legend(fontsize=7, loc="upper right")
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
path = os.path.join(outdir, "takeover.png")
fig.savefig(path, dpi=120)
print("wrote", path)
