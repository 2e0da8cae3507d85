#!/usr/bin/env bash
# install_example: installs this build into a fresh prefix, builds examples/out-of-tree against it
# with find_package(Tidemark), runs the example's own tool on its own job and compares the window
# counts with this script's arithmetic, and checks the example's node binary. Every step that
# fails (install, find_package, build, run, a wrong count) fails the test.
#   install_example.sh CMAKE BUILD_DIR SOURCE_DIR WORK_DIR [SANITIZERS]
set -euo pipefail
cmake=$1 build=$2 source=$3 work=$4 sanitize=${5:-}
prefix=$work/prefix app=$work/build
fail() { echo "install_example: $*" >&2; exit 1; }

# A fresh prefix each time; the example's build folder stays, so ccache and make reuse it.
rm -rf "$prefix" "$app/CMakeCache.txt"
mkdir -p "$work"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
for f in lib/cmake/Tidemark/TidemarkConfig.cmake lib/cmake/Tidemark/TidemarkConfigVersion.cmake \
         lib/cmake/Tidemark/FindCAF.cmake include/tidemark/cli/main.hpp include/tidemark/tidemark.hpp \
         bin/tidemark bin/tidemark-node share/tidemark/riotbench/SYS_sample_data_senml.csv; do
  [[ -e $prefix/$f ]] || fail "cmake --install did not install $f"
done
"$prefix/bin/tidemark" jobs >"$work/jobs.txt" || fail "installed tidemark failed"
grep -q '^example-window-count$' "$work/jobs.txt" || fail "installed tidemark lists no example job"

options=()
if command -v ccache >/dev/null; then options+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
# libraries built with sanitizers (TIDEMARK_SANITIZE) need their runtimes in the user's binaries
if [[ -n $sanitize ]]; then
  options+=("-DCMAKE_CXX_FLAGS=-fsanitize=$sanitize" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=$sanitize")
fi
"$cmake" -S "$source/examples/out-of-tree" -B "$app" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "${options[@]}" >"$work/configure.log" \
  || { cat "$work/configure.log"; fail "configuring the example failed"; }
# the package found must be the one just installed, not another on the system
grep -qx "Tidemark_DIR:PATH=$prefix/lib/cmake/Tidemark" "$app/CMakeCache.txt" \
  || fail "find_package(Tidemark) did not find $prefix: $(grep Tidemark_DIR "$app/CMakeCache.txt")"
"$cmake" --build "$app" -j2 || fail "building the example failed"

# Every exported target resolves in a user's project: one that links them all configures (a
# dependency missing from TidemarkConfig.cmake fails the generate step naming the target).
# (Tidemark::log is internal: Tidemark::stream links it whole, it is not linked on its own)
targets=$(sed -n 's/^add_library(\(Tidemark::[a-z0-9_]*\) .*/\1/p' "$prefix/lib/cmake/Tidemark/TidemarkTargets.cmake" \
  | grep -vx 'Tidemark::log')
[[ $(wc -w <<<"$targets") -ge 13 ]] || fail "only these targets are exported: $targets"
mkdir -p "$work/all_targets"
echo 'int main() {}' >"$work/all_targets/main.cpp"
cat >"$work/all_targets/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.24)
project(all_targets CXX)
find_package(Tidemark REQUIRED)
add_executable(all_targets main.cpp)
target_link_libraries(all_targets PRIVATE $(echo $targets))
EOF
"$cmake" -S "$work/all_targets" -B "$work/all_targets/build" -DCMAKE_PREFIX_PATH="$prefix" \
  >"$work/all_targets.log" 2>&1 || { cat "$work/all_targets.log"; fail "linking every exported target does not configure"; }

# sensor-window-count: reading i at i ms from sensor i % keys, counted per (sensor, window)
events=20000 keys=7 window=300
"$app/my-tidemark" jobs >"$work/my-jobs.txt" || fail "my-tidemark jobs failed"
grep -q '^sensor-window-count$' "$work/my-jobs.txt" || fail "my-tidemark does not list its job"
rm -f "$work/counts.txt"
"$app/my-tidemark" run --threads 2 sensor-window-count --events $events --keys $keys \
  --window-ms $window --parallelism 3 --out "$work/counts.txt" >"$work/run.log" \
  || { cat "$work/run.log"; fail "my-tidemark run failed"; }
awk -v e=$events -v k=$keys -v w=$window \
  'BEGIN { for (i = 0; i < e; ++i) n[(i % k) " " int(i / w) * w]++; for (x in n) print x, n[x] }' \
  | sort >"$work/expected.txt"
sort "$work/counts.txt" >"$work/actual.txt"
diff "$work/expected.txt" "$work/actual.txt" >"$work/diff.txt" \
  || { head -20 "$work/diff.txt"; fail "window counts differ from the expected ones (< expected, > actual)"; }
results=$(wc -l <"$work/expected.txt")
grep -q "^sensor-window-count: $results window results$" "$work/run.log" \
  || { cat "$work/run.log"; fail "the job's report does not say $results window results"; }

"$app/my-tidemark-node" --help >"$work/node-help.txt" || fail "my-tidemark-node --help failed"
grep -q -- '--listen' "$work/node-help.txt" || fail "my-tidemark-node --help lists no --listen"
if "$app/my-tidemark-node" --id n1 --listen tcp://127.0.0.1:1 --data-dir "$work/node" 2>"$work/node.err"; then
  fail "my-tidemark-node without --keys or --insecure started"
fi
grep -q 'error my-tidemark-node: --keys DIR is required' "$work/node.err" \
  || fail "my-tidemark-node's error does not name itself: $(cat "$work/node.err")"

rm -rf "$prefix"  # ~250 MB of static libraries
echo "install_example: $results window results as expected; my-tidemark-node answers"
