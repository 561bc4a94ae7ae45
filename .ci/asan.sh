#!/usr/bin/env bash
# CI: AddressSanitizer + UndefinedBehaviorSanitizer checks of the C++ core (called from .ci/run).
#
#  1. builds fuzz/ (the fuzz targets and trace_file_driver) with -fsanitize=address,undefined:
#     clang++ + libFuzzer when available (installed with apt-get when missing, if this runs as
#     root on a Debian-like machine), else g++ with the standalone mutation driver
#     (fuzz/standalone_main.cc, coverage feedback through -fsanitize-coverage=trace-pc);
#  2. runs trace_file_driver over every file in tests/data/ (seeds and tests/data/regressions/):
#     each opened mmap'ed and from memory, as auto/text/binary/xspace, 1 and all threads; every
#     successful parse is validated, exported and queried;
#  3. runs truncate_driver: a mapped dump truncated by another thread during the parse must
#     give TraceFormatError or a parse, never SIGBUS;
#  3b. runs radix_sort_check: the queries' radix sort against std::stable_sort,
#      varint_check: the binary parser's varint fast paths against a plain decoder, and
#      string_equal_check: the string pool's wide compares against a plain one,
#      column_arena_check: the column arena's slabs (layout, page release, unmapping, threads),
#      column_room_check: the room the parse reserves for its columns (measured rates, caps);
#  3c. builds the C++ unit tests (cpp/tests) with -DTRACECORE_SANITIZE=ON (the same
#      -fsanitize=address,undefined, no UBSan recovery) and runs them with ctest: their small
#      inputs reach error paths and corner cases the seeds may not (about 16 CPU minutes, most
#      of it compiling: 8 to 10 minutes on 2 idle cores);
#  4. runs a short fuzz campaign (TRACECORE_ASAN_FUZZ_SECONDS per target, default 25, targets
#     text binary queries auto json tfevents inflate xspace: about 4 minutes) with fuzz/run_fuzz.sh;
#  5. optionally (TRACECORE_ASAN_PYTEST=1) builds the Python extension with
#     -DTRACECORE_SANITIZE=ON into a scratch virtual environment and runs
#     TRACECORE_ASAN_PYTEST_ARGS (default: tests/test_robustness.py; tests/test_malformed.py caps
#     RLIMIT_AS in its children, which an ASan process cannot live with)
#     with the ASan runtime preloaded into python (leak detection off: CPython itself "leaks";
#     the RSS test skips itself). About 5 minutes of extra build on 2 cores.
#
# Environment: TRACECORE_ASAN_BUILD (build directory, default a temp dir), TRACECORE_ASAN_NO_APT=1
# (never apt-get), TRACECORE_ASAN_CXX (force a compiler), TRACECORE_ASAN_FUZZ_SECONDS.
# Exit status: non-zero on any sanitizer report, crash, hang or unexpected exception; crash
# inputs are left under $build/campaign/artifacts/ (minimize and add them to
# tests/data/regressions/).
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$(pwd)"

build="${TRACECORE_ASAN_BUILD:-$(mktemp -d)/asan-build}"
fuzz_seconds="${TRACECORE_ASAN_FUZZ_SECONDS:-25}"

have_libfuzzer() {
  command -v clang++ >/dev/null 2>&1 || return 1
  local probe; probe="$(mktemp -d)"
  printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$probe/p.cc"
  if clang++ -fsanitize=fuzzer,address,undefined "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1; then
    rm -rf "$probe"; return 0
  fi
  rm -rf "$probe"; return 1
}

echo "== asan: choosing a compiler"
cxx="${TRACECORE_ASAN_CXX:-}"
if [ -z "$cxx" ]; then
  if ! have_libfuzzer && [ -z "${TRACECORE_ASAN_NO_APT:-}" ] && command -v apt-get >/dev/null 2>&1 \
     && [ "$(id -u)" = 0 ]; then
    echo "   clang/libFuzzer missing: apt-get install clang"
    if (timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq clang) \
       >/dev/null 2>&1; then
      if ! have_libfuzzer; then
        major="$(clang++ -dumpversion 2>/dev/null | cut -d. -f1 || true)"
        [ -n "$major" ] && DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "libclang-rt-$major-dev" \
          >/dev/null 2>&1 || true
      fi
    else
      echo "   apt-get failed; falling back to g++"
    fi
  fi
  if have_libfuzzer; then cxx=clang++; else cxx="${CXX:-g++}"; fi
fi
echo "   compiler: $cxx"

echo "== asan: building fuzz/ in $build"
mkdir -p "$build"
cmake -S fuzz -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DTRACECORE_SOURCE_DIR="$repo" >"$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; exit 1; }
time cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" >"$build.build.log" 2>&1 \
  || { tail -60 "$build.build.log"; exit 1; }
echo "   engine: $(cat "$build/fuzz_engine.txt")"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1"

# Every step runs even when an earlier one failed; the exit status reports all of them.
failed=()
step() {
  local name="$1"; shift
  echo "== asan: $name"
  if "$@"; then echo "   ok: $name"; else echo "   FAILED: $name"; failed+=("$name"); fi
}

step "trace_file_driver over tests/data (seeds and regressions)" \
  "$build/trace_file_driver" -q tests/data
step "truncate_driver (a mapped file shrinking during the parse)" \
  "$build/truncate_driver" tests/data/seed000_stepstats.pbtxt 20
step "radix_sort_check (the queries' sort against std::stable_sort)" \
  "$build/radix_sort_check"
step "varint_check (varint fast paths against a plain decoder)" \
  "$build/varint_check"
step "string_equal_check (the string pool's wide compares against a plain one)" \
  "$build/string_equal_check"
step "column_arena_check (the column arena's slabs: layout, release, unmapping, threads)" \
  "$build/column_arena_check"
step "column_room_check (the columns' room: measured rates, caps, no doubling)" \
  "$build/column_room_check"
asan_unit_tests() {
  local units="$build/units"
  cmake -S . -B "$units" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTRACECORE_SANITIZE=ON -DTRACECORE_BUILD_TESTS=ON >"$units.configure.log" 2>&1 \
    || { cat "$units.configure.log"; return 1; }
  cmake --build "$units" -j "$(nproc 2>/dev/null || echo 2)" >"$units.build.log" 2>&1 \
    || { tail -60 "$units.build.log"; return 1; }
  ctest --test-dir "$units" --output-on-failure -j 2
}
step "C++ unit tests (cpp/tests) under ASan+UBSan" asan_unit_tests
# Bounded: each target stops after fuzz_seconds; run_fuzz.sh exits 1 on any finding.
step "short fuzz campaign (${fuzz_seconds}s per target)" \
  fuzz/run_fuzz.sh -t "$fuzz_seconds" -b "$build" -s "$repo" -o "$build/campaign" text binary queries auto json tfevents inflate xspace

asan_pytest() {
  local venv="$build/venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  CC=gcc CXX=g++ "$venv/bin/python" -m pip install --quiet \
    --config-settings=cmake.define.TRACECORE_SANITIZE=ON \
    --config-settings=cmake.build-type=RelWithDebInfo \
    --config-settings=build-dir="$build/ext" ".[test]" || return 1
  local preload tests=()
  # libstdc++ too: python does not link it, and ASan's __cxa_throw interceptor must find it at
  # start-up (else every C++ exception aborts with "CHECK failed ... real___cxa_throw").
  preload="$(g++ -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)"
  for t in ${TRACECORE_ASAN_PYTEST_ARGS:-tests/test_robustness.py}; do
    tests+=("$repo/$t")
  done
  # Run from outside the source tree so the sanitized install is imported.
  (cd "$build" && LD_PRELOAD="$preload" \
     ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:verify_asan_link_order=0" \
     "$venv/bin/python" -m pytest -p no:cacheprovider -q "${tests[@]}")
}
if [ -n "${TRACECORE_ASAN_PYTEST:-}" ]; then
  step "test suite against an ASan+UBSan build of the extension" asan_pytest
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "== asan: FAILED steps:"
  printf '   - %s\n' "${failed[@]}"
  exit 1
fi
echo "== asan: OK"
