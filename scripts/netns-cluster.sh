#!/usr/bin/env bash
# The three-node cluster test with real addresses: three network namespaces, each with a veth pair
# to a bridge in this namespace (where the coordinator runs), one tidemark-node per namespace.
# Runs example-window-count with its keyed window stage spread over the three and compares the
# result lines with the embedded run; then `tidemark chaos run` with a tc netem fault on n2 (or,
# on a kernel without netem, checks that the tool refuses it up front and says so loudly).
# Exits 77 (ctest: skipped) with the reason when namespaces cannot be made here (not root, no
# iproute2, no permission).
#   scripts/netns-cluster.sh BIN_DIR    (the folder holding tidemark and tidemark-node)
set -euo pipefail
bin="${1:?usage: netns-cluster.sh BIN_DIR}"
skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "creating network namespaces needs root"
command -v ip >/dev/null || skip "the ip command (iproute2) is missing"

tag="tm$$"
subnet="10.213.77"  # only on the bridge and in the namespaces made here
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for i in 1 2 3; do ip netns del "${tag}n$i" 2>/dev/null || true; done
  ip link del "${tag}br" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

ip netns add "${tag}n1" 2>/dev/null || skip "cannot create network namespaces here"
ip link add "${tag}br" type bridge || skip "cannot create a bridge here"
ip addr add "$subnet.254/24" dev "${tag}br"
ip link set "${tag}br" up
for i in 1 2 3; do
  ns="${tag}n$i"
  [[ $i -eq 1 ]] || ip netns add "$ns"
  ip link add "${tag}v$i" type veth peer name eth0 netns "$ns"
  ip link set "${tag}v$i" master "${tag}br" up
  ip -n "$ns" addr add "$subnet.$i/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
done

"$bin/tidemark" keygen --dir "$work/keys" n1 n2 n3 coordinator >/dev/null
{
  echo "coordinator_key: keys/coordinator.key"
  echo "nodes:"
  for i in 1 2 3; do
    echo "  - {id: n$i, endpoint: \"tcp://$subnet.$i:7100\", public_key_file: keys/n$i.pub}"
  done
  echo "pins: {gather: n3}"
} >"$work/cluster.yaml"
for i in 1 2 3; do
  ip netns exec "${tag}n$i" "$bin/tidemark-node" --id "n$i" --listen "tcp://$subnet.$i:7100" \
    --data-dir "$work/n$i" --keys "$work/keys" 2>"$work/n$i.log" &
  pids+=($!)
done

job=(example-window-count --events 120000 --keys 37 --window-ms 500 --parallelism 3 --gather true)
"$bin/tidemark" run --cluster "$work/cluster.yaml" "${job[@]}" --out "$work/cluster.txt" >/dev/null
"$bin/tidemark" run "${job[@]}" --out "$work/embedded.txt" >/dev/null
lines=$(wc -l <"$work/embedded.txt")
if [[ $lines -ne 8880 ]] || ! cmp -s <(sort "$work/cluster.txt") <(sort "$work/embedded.txt"); then
  echo "FAIL: the cluster's results differ from the embedded run ($lines embedded lines)"
  cat "$work"/n*.log
  exit 1
fi
echo "netns cluster: 3 nodes at $subnet.1-3, $lines result lines identical to the embedded run"

# tc netem under a chaos schedule: real delay, jitter and loss on n2's interface. Whether this
# kernel has netem is found out here independently of the tool (the same tc call the tool tries);
# without it the tool must refuse the schedule up front, naming the cause, and run nothing.
cat >"$work/netem.yaml" <<'YAML'
faults:
  - {at: 1s, fault: netem, targets: [n2], delay: 40ms, jitter: 10ms, loss: 0.02, duration: 3s}
YAML
if ip netns exec "${tag}n2" tc qdisc replace dev eth0 root netem >"$work/tc.out" 2>&1; then
  ip netns exec "${tag}n2" tc qdisc del dev eth0 root
  netem=yes
else
  netem=no
fi
set +e
"$bin/tidemark" chaos run --cluster "$work/cluster.yaml" --schedule "$work/netem.yaml" \
  --netns "n2=${tag}n2:eth0" --duration 5s --checkpoint-interval 250 --out "$work/chaos" \
  example-late-windows --events 24000 --rate 4000 --parallelism 3 >"$work/chaos.out" 2>&1
rc=$?
set -e
if [[ $netem == no ]]; then
  if [[ $rc -ne 1 ]] || ! grep -q "tc netem is not available on this kernel: " "$work/chaos.out" ||
    [[ -e "$work/chaos/history" ]]; then
    echo "FAIL: without netem (tc: $(cat "$work/tc.out")) the chaos run must fail up front naming"
    echo "the cause and run nothing; exit $rc:"
    cat "$work/chaos.out"
    exit 1
  fi
  echo "WARNING: tc netem could NOT be exercised here: this kernel has no netem qdisc ($(cat "$work/tc.out"))"
  echo "WARNING: checked only that chaos run refuses a netem schedule up front: $(grep -o 'tc netem is not available.*' "$work/chaos.out" | head -1)"
else
  if [[ $rc -ne 0 ]] || ! grep -q "netem n2" "$work/chaos.out"; then
    echo "FAIL: the chaos run with a netem fault on n2 did not pass (exit $rc):"
    cat "$work/chaos.out" "$work"/n*.log
    exit 1
  fi
  echo "netem: $(grep -m1 '^PASSED' "$work/chaos.out")"
fi
