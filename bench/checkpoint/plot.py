#!/usr/bin/env python3
"""Plots of bench_checkpoint's JSON: results per 100 ms around the SIGKILL (the killed process and
the resumed one; the kill at 0 s) and the durations of the checkpoints (throughput runs and the
recovery job)."""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report = json.load(open(sys.argv[1]))
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
recovery = report["recovery"]


def per_100ms(marks):
    """(bucket start s, results in the bucket) from one process's cumulative (t_s, results)."""
    buckets = {}
    prev_t, prev_n = None, 0
    for m in marks:
        b = int(m["t_s"] * 10 // 1)
        buckets[b] = buckets.get(b, 0) + m["results"] - prev_n
        prev_n = m["results"]
    return sorted(buckets.items())


fig, axes = plt.subplots(1, 2, figsize=(13, 4))
ax = axes[0]
for process, label, color in ((1, "killed process", "tab:blue"), (2, "resumed process", "tab:green")):
    marks = [m for m in recovery["timeline"] if m["process"] == process]
    pts = per_100ms(marks)
    if pts:
        ax.bar([b / 10 for b, _ in pts], [n for _, n in pts], width=0.1, align="edge", color=color,
               alpha=0.8, label=label)
ax.axvline(0, color="red", linestyle="--", label="SIGKILL")
ax.axvline(recovery["recovery_s"], color="black", linestyle=":",
           label=f"first new result ({recovery['recovery_s']:.2f} s)")
ax.set_xlabel("s from the kill")
ax.set_ylabel("results per 100 ms")
ax.set_title(f"recovery with {recovery['state_bytes_at_kill'] / 1e6:.0f} MB of window state")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)

ax = axes[1]
series = []
for name, section in report.get("throughput", {}).items():
    series.append((name, [c["duration_ms"] for c in section["checkpoint_list"]]))
series.append(("recovery job (resumed)", [c["duration_ms"] for c in recovery["resumed_checkpoints"]]))
for name, ds in series:
    if ds:
        ax.plot(range(1, len(ds) + 1), ds, "o-", markersize=3, label=name)
ax.set_xlabel("checkpoint (in order, over the runs)")
ax.set_ylabel("duration ms")
ax.set_yscale("log")
ax.set_title(f"checkpoint durations (interval {report['interval_ms']} ms)")
ax.legend(fontsize=8)
ax.grid(alpha=0.3)
fig.tight_layout()
fig.savefig(out / "checkpoint.png", dpi=90)
