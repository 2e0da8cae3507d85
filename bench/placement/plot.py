"""Plots the placement benchmark: per placement (round robin, by measured load) the throughput and
the latency p99 of every run (dots) with their median (bar) and range, and the load each
placement expects per node from the profile run (stacked by stage)."""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

report, outdir = sys.argv[1], sys.argv[2]
with open(report) as f:
    doc = json.load(f)
modes = ["round_robin", "by_load"]
labels = {"round_robin": "round robin", "by_load": "by measured load"}

fig, axes = plt.subplots(1, 3, figsize=(13, 5.5))
for ax, key, unit in [(axes[0], "throughput_msgs_per_s", "input messages/s"),
                      (axes[1], "p99_ms", "latency p99 (ms)")]:
    for x, m in enumerate(modes):
        s = doc["modes"][m][key]
        ax.bar(x, s["median"], color=f"C{x}", alpha=0.6)
        ax.errorbar(x, s["median"], yerr=[[s["median"] - s["min"]], [s["max"] - s["median"]]],
                    color="black", capsize=6)
        ax.scatter([x] * len(s["runs"]), s["runs"], color="black", s=12, zorder=3)
    ax.set_xticks(range(len(modes)), [labels[m] for m in modes])
    ax.set_ylabel(unit)
    ax.set_title(f"{unit}: median, range, runs", fontsize=9)

ax = axes[2]
stages = []
for m in modes:
    for inst in doc["modes"][m]["placement"]["instances"]:
        if inst["stage"] not in stages:
            stages.append(inst["stage"])
nodes = sorted(doc["modes"][modes[0]]["placement"]["expected_node_load_cores"])
width = 0.38
for x, m in enumerate(modes):
    bottom = [0.0] * len(nodes)
    for c, stage in enumerate(stages):
        heights = [sum(i["load_cores"] for i in doc["modes"][m]["placement"]["instances"]
                       if i["stage"] == stage and i["node"] == n) for n in nodes]
        xs = [n + (x - 0.5) * width for n in range(len(nodes))]
        ax.bar(xs, heights, width * 0.95, bottom=bottom, color=plt.cm.tab20(c % 20),
               edgecolor="black" if x else "white", linewidth=0.4,
               label=stage if x == 0 else None)
        bottom = [b + h for b, h in zip(bottom, heights)]
ax.axhline(doc["settings"]["node_cpu_cores"], color="red", linestyle="--", linewidth=0.8,
           label="each node's CPU quota")
ax.set_xticks(range(len(nodes)), [f"{n}\nRR | load" for n in nodes])
ax.set_ylabel("expected load (cores, from the profile run)")
ax.set_title("per node: round robin (left), by load (right)", fontsize=9)
ax.legend(fontsize=6, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))

s = doc["settings"]
fig.suptitle(f"riot-etl on 3 nodes of {s['node_cpu_cores']} core each ({s['node_cpu_limit']}); "
             f"by load / round robin throughput "
             f"x{doc['by_load_over_round_robin_throughput']:.2f}; load average "
             f"{doc['load_average_before']:.2f} -> {doc['load_average_after']:.2f}", fontsize=10)
fig.tight_layout()
os.makedirs(outdir, exist_ok=True)
path = os.path.join(outdir, "placement.png")
fig.savefig(path, dpi=120)
print("wrote", path)
