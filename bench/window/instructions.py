#!/usr/bin/env python3
"""Instructions per event of the window benchmark's operators, counted by callgrind.

This machine has no hardware counters (perf_event_open fails), so instruction counts come from
valgrind's callgrind, which counts exactly and does not depend on the load of the host. Usage:

    bench/window/instructions.py build/bench/window/bench_window [--events N] [--batch B] [--out F]

It runs the benchmark once under callgrind (results, then results + late: every event passes the
pipeline twice) and attributes each function's own instructions, inlined code included, to the
operator whose function it is. Per event means per event of the source (N x 2); the window
operator is also given per windowed event (the filter keeps half). callgrind counts every step
of a `rep movs` / `rep stos` as an instruction, so memcpy and memset are reported apart: their
count overstates their cost.
"""
import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile

GROUPS = [
    ("assign_timestamps", "timestamp_logic"),
    ("map", "map_logic"),
    ("filter", "filter_logic"),
    ("key_by", "key_by_logic"),
    ("window", "aligned_window_logic"),
    ("source (the bench's generator)", "generator"),
    ("memcpy", "memcpy"),
    ("memset", "memset"),
    ("malloc + free", "malloc"),
    ("malloc + free", "free"),
]


def group_of(function):
    name = function.split("(")[0]
    for group, needle in GROUPS:
        if needle in name:
            return group
    return "runtime, CAF and the plain loop"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench")
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts = f"{tmp}/callgrind.out"
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={counts}", args.bench,
                        "--no-sweep", "--events", str(args.events), "--batch", str(args.batch),
                        "--repeats", "1", "--out", f"{tmp}/bench.json"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", counts],
                                check=True, capture_output=True, text=True).stdout
    total = 0
    groups = collections.Counter()
    for line in report.splitlines():
        m = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(\S.*)", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        where = m.group(2)
        if "PROGRAM TOTALS" in where:
            total = count
            continue
        groups[group_of(where.split(":", 1)[1] if ":" in where else where)] += count
    events = 2 * args.events
    result = {
        "events": args.events,
        "batch_size": args.batch,
        "instructions_total": total,
        "instructions_per_event": {g: c / events for g, c in groups.most_common()},
        "window_instructions_per_windowed_event": groups["window"] / (events / 2),
    }
    for g, c in groups.most_common():
        print(f"{g:34s} {c / events:7.1f} per event")
    print(f"{'window, per windowed event':34s} {result['window_instructions_per_windowed_event']:7.1f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
