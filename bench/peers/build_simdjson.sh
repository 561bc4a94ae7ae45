#!/usr/bin/env bash
# Builds simdjson_parse, simdjson's own parser as a peer of bench/json_throughput.py, against
# the simdjson sources (simdjson.h, simdjson.cpp) that the pysimdjson wheel installs
# (benchmark-only: pip install pysimdjson; PYTHON picks the interpreter, default python3).
#   bench/peers/build_simdjson.sh [OUTDIR]      (default /tmp/tracecore-simdjson-peer)
#   OUTDIR/simdjson_parse FILE [REPEAT]          prints {"bytes", "events", "seconds", ...}
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/tmp/tracecore-simdjson-peer}"
src="$("${PYTHON:-python3}" -c 'import os, simdjson; print(os.path.dirname(simdjson.__file__))')"
[ -e "$src/simdjson.h" ] && [ -e "$src/simdjson.cpp" ] ||
  { echo "build_simdjson.sh: no simdjson.h / simdjson.cpp in $src (pip install pysimdjson)" >&2; exit 1; }
mkdir -p "$out"
g++ -O3 -std=c++17 -DNDEBUG -I"$src" "$here/simdjson_parse.cc" "$src/simdjson.cpp" \
  -o "$out/simdjson_parse"
echo "$out/simdjson_parse"
