#!/usr/bin/env bash
# Bounded-time fuzz campaign over tracecore's parsers (ASan + UBSan).
#
#   fuzz/run_fuzz.sh [-t SECONDS] [-b BUILD_DIR] [-o OUT_DIR] [-s SOURCE_DIR] [TARGET...]
#
#   TARGET      text | binary | auto | queries | json | tfevents | inflate | xspace (default: text binary); targets run one after
#               the other, each for SECONDS (default 60), at nice 10
#   BUILD_DIR   where fuzz/ is built (default /tmp/tracecore-fuzz-build); configured and built
#               when missing: clang++ with libFuzzer if it works, else g++ and the standalone
#               mutation driver (fuzz/standalone_main.cc)
#   OUT_DIR     seeds, growing corpora, logs and crash artifacts (default BUILD_DIR/campaign)
#   SOURCE_DIR  the checkout whose cpp/ is fuzzed (default: this script's repository)
#
# Environment: FUZZ_CXX (compiler, overrides the choice above), FUZZ_MAX_LEN (default 65536),
# FUZZ_TIMEOUT (seconds per input before it counts as a hang, default 10), FUZZ_RSS_MB (default
# 2048), FUZZ_SEED (mutation seed; default random), FUZZ_KEEP_GOING=1 (libFuzzer only: fork
# mode with -ignore_crashes, so the campaign keeps running after a finding and collects every
# crash artifact instead of stopping at the first).
#
# Prints one summary line per target (executions, cov, ft, corpus size, findings) and writes
# OUT_DIR/summary.txt. Exit status 1 when any target left a crash/timeout/oom artifact.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
seconds=60
build="/tmp/tracecore-fuzz-build"
out=""
source_dir="$repo"
while getopts "t:b:o:s:h" opt; do
  case "$opt" in
    t) seconds="$OPTARG" ;;
    b) build="$OPTARG" ;;
    o) out="$OPTARG" ;;
    s) source_dir="$OPTARG" ;;
    *) sed -n '2,20p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(text binary)
out="${out:-$build/campaign}"
max_len="${FUZZ_MAX_LEN:-65536}"
per_input_timeout="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"

pick_cxx() {
  if [ -n "${FUZZ_CXX:-}" ]; then echo "$FUZZ_CXX"; return; fi
  if command -v clang++ >/dev/null 2>&1; then
    local probe; probe="$(mktemp -d)"
    printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$probe/p.cc"
    if clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1; then
      rm -rf "$probe"; echo clang++; return
    fi
    rm -rf "$probe"
  fi
  echo "${CXX:-g++}"
}

if [ ! -x "$build/fuzz_text" ] || [ ! -x "$build/trace_file_driver" ] || [ ! -x "$build/fuzz_xspace" ]; then
  cxx="$(pick_cxx)"
  echo "== configuring $build with $cxx (sources: $source_dir)"
  cmake -S "$source_dir/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" \
        -DTRACECORE_SOURCE_DIR="$source_dir" >"$build.configure.log" 2>&1 || {
    cat "$build.configure.log"; exit 1; }
fi
echo "== building fuzz targets"
nice -n 10 cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >"$build.build.log" 2>&1 || {
  tail -50 "$build.build.log"; exit 1; }
engine="$(cat "$build/fuzz_engine.txt" 2>/dev/null || echo unknown)"

mkdir -p "$out/artifacts" "$out/logs"
if [ ! -d "$out/seeds/text" ] || [ ! -d "$out/seeds/json" ] || [ ! -d "$out/seeds/tfevents" ] \
   || [ ! -d "$out/seeds/inflate" ] || [ ! -d "$out/seeds/xspace" ]; then
  python3 "$here/make_corpus.py" "$out/seeds" >/dev/null
fi

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"

summary="$out/summary.txt"
: >"$summary"
status=0
for t in "${targets[@]}"; do
  case "$t" in
    text) seeds=("$out/seeds/text"); dict="$here/text.dict" ;;
    binary) seeds=("$out/seeds/binary"); dict="$here/binary.dict" ;;
    auto|queries) seeds=("$out/seeds/text" "$out/seeds/binary"); dict="$here/text.dict" ;;
    json) seeds=("$out/seeds/json"); dict="$here/json.dict" ;;
    tfevents) seeds=("$out/seeds/tfevents"); dict="$here/tfevents.dict" ;;
    inflate) seeds=("$out/seeds/inflate"); dict="$here/inflate.dict" ;;
    xspace) seeds=("$out/seeds/xspace"); dict="$here/xspace.dict" ;;
    *) echo "unknown target '$t'"; exit 2 ;;
  esac
  corpus="$out/corpus_$t"
  mkdir -p "$corpus"
  log="$out/logs/$t.log"
  before="$(ls "$out/artifacts" | grep -c "^$t-" || true)"
  echo "== fuzz_$t for ${seconds}s ($engine) -> $log"
  set +e
  seed_flag=()
  [ -n "${FUZZ_SEED:-}" ] && seed_flag=(-seed="$FUZZ_SEED")
  if [ -n "${FUZZ_KEEP_GOING:-}" ] && [ "$engine" = libfuzzer ]; then
    seed_flag+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  timeout -k 10 $((seconds + 120)) nice -n 10 "$build/fuzz_$t" \
    -max_total_time="$seconds" -timeout="$per_input_timeout" -rss_limit_mb="$rss_mb" \
    -max_len="$max_len" -dict="$dict" -artifact_prefix="$out/artifacts/$t-" \
    -print_final_stats=1 "${seed_flag[@]}" "$corpus" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  set -e
  # libFuzzer and the standalone driver both end with "Done N runs"; after a crash, take the
  # last status line instead.
  execs="$(grep -o 'Done [0-9]* runs' "$log" | tail -1 | grep -o '[0-9]*' || true)"
  [ -n "$execs" ] || execs="$(grep -o 'number_of_executed_units: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*$' || true)"
  [ -n "$execs" ] || execs="$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#' || true)"
  last="$(grep -E 'cov: [0-9]+' "$log" | tail -1 || true)"
  cov="$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || true)"
  ft="$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || true)"
  corp="$(echo "$last" | grep -o 'corp: [0-9]*' | grep -o '[0-9]*' || true)"
  after="$(ls "$out/artifacts" | grep -c "^$t-" || true)"
  findings=$((after - before))
  line="fuzz_$t: engine=$engine seconds=$seconds execs=${execs:-?} cov=${cov:-?} ft=${ft:-?} corpus=${corp:-?} findings=$findings exit=$rc"
  echo "$line" | tee -a "$summary"
  if [ "$findings" -gt 0 ] || [ "$rc" -ne 0 ]; then
    status=1
    ls "$out/artifacts" | grep "^$t-" | head -10 | sed "s|^|    artifact: $out/artifacts/|" | tee -a "$summary"
    [ "$after" -le 10 ] || echo "    ... $((after - 10)) more in $out/artifacts/" | tee -a "$summary"
    # Distinct first report lines (sanitizer reports, harness findings), most frequent first.
    grep -a -oE 'runtime error: .{0,90}|ERROR: AddressSanitizer: [a-z-]+[^(]*|FINDING: .{0,90}|ERROR: libFuzzer: [a-z -]+' "$log" \
      | sed -E 's/line [0-9]+, column [0-9]+/L:C/; s/0x[0-9a-f]+/0x../g' | sort | uniq -c | sort -rn | head -8 \
      | sed 's/^/    /' | tee -a "$summary" || true
  fi
done
exit $status
