"""Builds the C++ unit tests (cpp/tests) with CMake and runs them through CTest.

They check the core without Python: small inputs in, expected rows out. The build goes to
build/cpp-tests in the source tree (reused between runs); set TRACECORE_CPP_TESTS=0 to skip
when no C++ toolchain is at hand (CI always runs them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "cpp-tests"
# How build/cpp-tests is configured, by every test that builds there (test_xspace_decoder's
# xspace_dump too: one configuration, so the tree is built once per run). No optimisation, no
# debug info, no link-time optimisation: the tests are small, and the default test run's budget
# is the build's time.
CONFIGURE = ("-DTRACECORE_BUILD_TESTS=ON", "-DCMAKE_BUILD_TYPE=", "-DTRACECORE_IPO=OFF")


def _cmake() -> str:
    found = shutil.which("cmake")
    if found:
        return found
    # The PyPI cmake package installs next to this interpreter.
    candidate = Path(sys.executable).with_name("cmake")
    if candidate.exists():
        return str(candidate)
    pytest.fail("cmake is needed to build the C++ unit tests (pip install cmake)")


def _ctest(cmake: str) -> str:
    return str(Path(cmake).with_name("ctest"))


@pytest.fixture(scope="module")
def unit_build() -> Path:
    if os.environ.get("TRACECORE_CPP_TESTS") == "0":
        pytest.skip("TRACECORE_CPP_TESTS=0")
    if not (ROOT / "cpp" / "tests" / "CMakeLists.txt").exists():
        pytest.skip("not a source checkout")
    cmake = _cmake()
    subprocess.run([cmake, "-S", str(ROOT), "-B", str(BUILD), *CONFIGURE],
                   check=True, capture_output=True, text=True)
    jobs = str(os.cpu_count() or 2)
    build = subprocess.run(
        [cmake, "--build", str(BUILD), "-j", jobs], capture_output=True, text=True
    )
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return BUILD


def test_ctest_runs_every_unit_test(unit_build: Path) -> None:
    ctest = _ctest(_cmake())
    run = subprocess.run(
        [ctest, "--test-dir", str(unit_build), "--output-on-failure", "-j", "2"],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "100% tests passed" in run.stdout
    listed = subprocess.run(
        [ctest, "--test-dir", str(unit_build), "-N"], capture_output=True, text=True, check=True
    )
    names = {line.split(":", 1)[1].strip() for line in listed.stdout.splitlines()
             if line.strip().startswith("Test") and ":" in line}
    expected = {p.stem for p in (ROOT / "cpp" / "tests").glob("*_test.cc")}
    assert names == expected
