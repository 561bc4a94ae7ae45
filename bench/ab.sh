#!/usr/bin/env bash
# Interleaved A/B of two parse_bench builds on one file: on a VM whose speed drifts by up to 2×
# within minutes, back-to-back runs of A then B compare windows, not builds. This alternates
# them (A B B A A B ...) and reports each side's median and best MB/s, and in how many rounds
# B beat A.
#
#   bench/ab.sh OLD_PARSE_BENCH NEW_PARSE_BENCH FILE [REPEAT=1] [THREADS=1] [ROUNDS=20]
#
# REPEAT 1 (one parse per process) is what a fresh `tracecore.open()` sees; larger REPEAT takes
# the best of that many parses in one process. Build each side with
#   cmake -S . -B /tmp/ab-old -DTRACECORE_BUILD_BENCH=ON -DCMAKE_BUILD_TYPE=Release
#   cmake --build /tmp/ab-old --target parse_bench
# from the two commits (git worktree), then pass the two parse_bench paths.
set -euo pipefail
if [ $# -lt 3 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
old=$1 new=$2 file=$3 repeat=${4:-1} threads=${5:-1} rounds=${6:-20}

mbps() {  # parse_bench's last line: "... best of N: S s, X MB/s, ..."
  "$1" "$file" "$repeat" "$threads" | tail -1 | sed -E 's/.* ([0-9.]+) MB\/s.*/\1/'
}

for ((r = 0; r < rounds; r++)); do
  if ((r % 2 == 0)); then
    a=$(mbps "$old"); b=$(mbps "$new")
  else
    b=$(mbps "$new"); a=$(mbps "$old")
  fi
  echo "$a $b"
done | python3 -c '
import statistics, sys
pairs = [tuple(map(float, line.split())) for line in sys.stdin]
for side, name in ((0, "A (old)"), (1, "B (new)")):
    xs = [p[side] for p in pairs]
    print(f"{name}: median {statistics.median(xs):.0f} MB/s, best {max(xs):.0f}, worst {min(xs):.0f}")
wins = sum(b > a for a, b in pairs)
print(f"B faster in {wins} of {len(pairs)} rounds")
'
