#!/usr/bin/env bash
# Builds the protobuf C++ peer of the XSpace benchmark (benchmark-only dependency: Debian's
# protoc and libprotobuf-dev, installed with apt-get when missing and running as root).
#   bench/peers/build.sh [OUTDIR]      (default /tmp/tracecore-xspace-peer)
#   OUTDIR/xplane_parse FILE [REPEAT]  prints {"bytes", "events", "seconds", "mb_per_s", ...}
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-/tmp/tracecore-xspace-peer}"
if ! command -v protoc >/dev/null || [ ! -e /usr/include/google/protobuf/message.h ]; then
  [ "$(id -u)" = 0 ] || { echo "build.sh: needs protoc and libprotobuf-dev (apt-get install -y libprotobuf-dev protobuf-compiler)" >&2; exit 1; }
  apt-get install -y -qq libprotobuf-dev protobuf-compiler >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null && apt-get install -y -qq libprotobuf-dev protobuf-compiler >/dev/null; }
fi
mkdir -p "$out"
protoc --proto_path="$here" --cpp_out="$out" "$here/xplane.proto"
g++ -O2 -std=c++17 -I"$out" "$here/xplane_parse.cc" "$out/xplane.pb.cc" -lprotobuf -pthread \
  -o "$out/xplane_parse"
echo "$out/xplane_parse"
