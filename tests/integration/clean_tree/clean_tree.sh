#!/usr/bin/env bash
# clean_tree.sh SOURCE_DIR BUILD_DIR TIDEMARK_EXE [BENCH_STALENESS_EXE]
# Runs, from the source root, a short riot-etl job with default options (no --out) and the
# staleness benchmark through bench/run, then checks that the checkout is exactly as it was: no new,
# changed or rewritten file. Uses git when SOURCE_DIR is the top of a git work tree, else (an
# exported tarball) a listing of every file with size and modification time. Each run must also
# have written its output where it said, so the test cannot pass by running nothing.
set -euo pipefail
src="$(cd "$1" && pwd)"
build="$(cd "$2" && pwd)"
tidemark="$3"
bench="${4:-}"
fail() { echo "clean_tree: FAIL: $*" >&2; exit 1; }

scratch="$(mktemp -d "${TMPDIR:-/tmp}/tidemark-clean-tree.XXXXXX")"
job_out=""
cleanup() {
  rm -rf "$scratch"
  # only the job's own fresh directory, never a path it might have printed by mistake
  [[ "$(basename "$job_out")" == tidemark-riot-etl-?????? ]] && rm -rf "$job_out"
  return 0
}
trap cleanup EXIT

# What "as it was" means: the status and the size and mtime of every file git knows (a rewrite with
# the same bytes counts), or, without git, of every file outside the build directory.
if git -C "$src" rev-parse --show-toplevel >/dev/null 2>&1 &&
   [[ "$(cd "$(git -C "$src" rev-parse --show-toplevel)" && pwd)" == "$src" ]]; then
  mode=git
  # a build directory inside the checkout that git does not ignore changes while tests run
  in_build="^(\?\? |!! )?${build#"$src"/}/"
  [[ "$build" == "$src"/* ]] || in_build='^$'
  snapshot() {
    {
      git -C "$src" status --porcelain=v1 --untracked-files=all --ignored=matching
      git -C "$src" ls-files -z --cached --others --exclude-standard |
        (cd "$src" && xargs -0 -r stat -c '%n %s %.9Y' --)
    } | grep -E -v "$in_build" || true
  }
else
  [[ -e "$src/.git" ]] && fail "$src/.git exists but git cannot read it"
  mode=listing
  echo "clean_tree: $src is not a git work tree; comparing a listing of its files instead"
  snapshot() {
    (cd "$src" && find . -path "./${build#"$src"/}" -prune -o -printf '%p %s %T@\n' | LC_ALL=C sort)
  }
fi
before="$(snapshot)"
[[ "$before" == *CMakeLists.txt* ]] || fail "the $mode snapshot of $src does not list CMakeLists.txt"

# 1. A job with default options, run from the source root: it must say where it writes, outside.
cd "$src"
"$tidemark" run --linger-ms 1 riot-etl --messages 400 --rate 4000 >"$scratch/job.log" 2>&1 ||
  { cat "$scratch/job.log"; fail "tidemark run riot-etl failed"; }
job_out="$(sed -n 's/^no --out given: writing to //p' "$scratch/job.log")"
[[ -n "$job_out" ]] || { cat "$scratch/job.log"; fail "the job did not say where it writes"; }
[[ "$job_out" == /* && "$job_out/" != "$src/"* ]] || fail "the job writes to $job_out, inside the checkout"
grep -q -F "report: $job_out/report.json" "$scratch/job.log" || fail "no report line for $job_out/report.json"
grep -q '"messages_in": *400' "$job_out/report.json" ||
  fail "$job_out/report.json does not count the 400 messages sent"

# 2. A benchmark through bench/run (JSON and plot), in a scratch build layout so that the real
#    build/bench results stay as they are.
if [[ -n "$bench" ]]; then
  mkdir -p "$scratch/build/bench/staleness"
  ln -s "$bench" "$scratch/build/bench/staleness/bench_staleness"
  "$src/bench/run" "$scratch/build" staleness >"$scratch/bench.log" 2>&1 ||
    { cat "$scratch/bench.log"; fail "bench/run staleness failed"; }
  for f in staleness.json staleness_fig9.png staleness_cleanup.png; do
    [[ -s "$scratch/build/bench/$f" ]] || { cat "$scratch/bench.log"; fail "bench/run wrote no $f into the build"; }
  done
else
  echo "clean_tree: benchmarks are not built (TIDEMARK_BUILD_BENCH=OFF); checked the job only"
fi

after="$(snapshot)"
if [[ "$before" != "$after" ]]; then
  diff <(echo "$before") <(echo "$after") >&2 || true
  fail "the checkout changed (lines above: < before, > after)"
fi
echo "clean_tree: the checkout is unchanged ($mode check); the job wrote $job_out"
