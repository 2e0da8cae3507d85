#!/usr/bin/env python3
"""Plots of bench_riot-apps: latency box plots at the target multiple of the paper's rates (like
the paper's Fig. 8), the highest stable multiple per application and dataset, and the soak's RSS
over time; with --parallelism, the full-speed throughput per application, dataset and parallelism
instead.

usage: plot.py riot-apps.json OUTDIR   (Debian's /usr/bin/python3 + matplotlib)
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    report = json.load(open(sys.argv[1]))
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if report.get("scaling"):
        plot_scaling(report["scaling"], out)
        return
    if report["summary"]:  # empty when only the soak ran
        plot_runs(report, out)
    soak = report.get("soak")
    if soak:
        fig, ax = plt.subplots(figsize=(8, 3.2))
        # the input's seconds: later samples see the job wind down and close its store
        samples = [p for p in soak["samples_mb"] if p[0] <= soak["seconds"]]
        t = [p[0] for p in samples]
        ax.plot(t, [p[1] for p in samples], color="tab:blue", label="RSS")
        ax.plot(t, [p[2] for p in samples], color="tab:orange",
                label="store's WiredTiger cache (its statistics)")
        ax.plot(t, [p[1] - p[2] - p[3] for p in samples], color="tab:green",
                label="RSS beyond the cache and the latency record")
        ax.axvline(soak["warmup_seconds"], color="gray", lw=1, ls=":")
        rss0 = soak["rss_mb_after_warmup"]
        beyond0 = next(p[1] - p[2] - p[3] for p in soak["samples_mb"]
                       if p[0] >= soak["warmup_seconds"])
        ax.axhline(beyond0 + 0.1 * rss0, color="tab:red", lw=1, ls="--",
                   label="issue 19's bound: + 10 % of the RSS after the first minute")
        ax.set_xlabel("seconds")
        ax.set_ylabel("MB")
        ax.set_ylim(bottom=0)
        ax.set_title(f"ETL CITY at {soak['rate']} msg/s for {soak['seconds']} s", fontsize=9)
        ax.legend(loc="upper left", fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "riot-apps-soak.png"), dpi=110)


def plot_runs(report, out):
    target = report.get("target_multiple", 10)
    at_target = [r for r in report["runs"] if r["multiple"] == target]
    apps = []
    for r in at_target:
        if r["app"] not in apps:
            apps.append(r["app"])
    fig, axes = plt.subplots(1, len(apps), figsize=(3.2 * len(apps), 3.8), squeeze=False)
    for ax, app in zip(axes[0], apps):
        runs = [r for r in at_target if r["app"] == app]
        ax.boxplot([r.get("latency_sample_ms") or [0] for r in runs],
                   labels=[r["dataset"].upper() for r in runs], whis=(5, 95), showfliers=False)
        ax.axhline(report.get("p99_bound_ms", 50), color="tab:red", lw=1, ls="--")
        ax.set_title(f"{app.upper()} at {target:g}x the paper's rate", fontsize=9)
        ax.set_ylabel("latency (ms), whiskers p5/p95")
        ax.set_yscale("log")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "riot-apps-latency.png"), dpi=110)

    fig, ax = plt.subplots(figsize=(8, 3.8))
    names = [f"{s['app'].upper()}\n{s['dataset'].upper()}" for s in report["summary"]]
    ax.bar(names, [s["sustainable_multiple"] for s in report["summary"]], color="tab:blue")
    ax.axhline(target, color="tab:red", lw=1, ls="--", label=f"target {target:g}x")
    ax.set_ylabel("stable multiple of the paper's rate")
    ax.set_yscale("symlog", linthresh=1)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "riot-apps-sustainable.png"), dpi=110)


def plot_scaling(runs, out):
    groups = []
    for r in runs:
        if (r["app"], r["dataset"]) not in groups:
            groups.append((r["app"], r["dataset"]))
    levels = sorted({r["parallelism"] for r in runs})
    width = 0.8 / len(levels)
    fig, ax = plt.subplots(figsize=(8, 3.8))
    for i, p in enumerate(levels):
        xs, ys = [], []
        for g, (app, ds) in enumerate(groups):
            for r in runs:
                if (r["app"], r["dataset"], r["parallelism"]) == (app, ds, p):
                    xs.append(g + i * width)
                    ys.append(r["throughput"])
        ax.bar(xs, ys, width, label=f"parallelism {p}")
    ax.set_xticks([g + width * (len(levels) - 1) / 2 for g in range(len(groups))])
    ax.set_xticklabels([f"{a.upper()}\n{d.upper()}" for a, d in groups])
    ax.set_ylabel("messages/s, first emit to last output")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "riot-apps-parallelism.png"), dpi=110)


if __name__ == "__main__":
    main()
