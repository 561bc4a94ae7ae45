"""Differential tests of the native DEFLATE / zlib / gzip decompressor (cpp/src/codec) against
Python's zlib and gzip modules, through the test bindings ``_core.inflate`` (InflateAll) and
``_core.inflate_stream`` (the streaming Inflater fed in pieces).

- hypothesis-generated data compressed at every level, strategy (Z_FILTERED, Z_HUFFMAN_ONLY,
  Z_RLE, Z_FIXED), window size, memory level and flush pattern, in raw / zlib / gzip framing:
  the same bytes as the input, at any chunking of input and output;
- multi-member gzip files with zero padding, as Python's gzip.decompress reads them;
- corrupted input: every single-byte mutation and every truncation of small streams gives
  exactly zlib's bytes or a TraceFormatError (raw and zlib: accepted exactly when zlib accepts;
  gzip: never accepting what Python's gzip refuses, and the same bytes when both accept);
- random bytes as raw deflate: the same verdict and bytes as zlib;
- the output limits.
"""

from __future__ import annotations

import gzip
import os
import random
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracecore import TraceFormatError, _core

pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning")

DATA = Path(__file__).parent / "data"
SEED_TEXT = (DATA / "seed000_stepstats.pbtxt").read_bytes()

HYPOTHESIS = settings(
    max_examples=int(os.environ.get("TRACECORE_HYPOTHESIS_EXAMPLES", "100")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

STRATEGIES = {
    "default": zlib.Z_DEFAULT_STRATEGY,
    "filtered": zlib.Z_FILTERED,
    "huffman_only": zlib.Z_HUFFMAN_ONLY,
    "rle": zlib.Z_RLE,
    "fixed": zlib.Z_FIXED,
}
FLUSHES = [zlib.Z_NO_FLUSH, zlib.Z_SYNC_FLUSH, zlib.Z_FULL_FLUSH, zlib.Z_BLOCK,
           zlib.Z_PARTIAL_FLUSH]


def make_payload(kind: str, size: int, seed: int) -> bytes:
    """Deterministic data of a given flavour: trace text, JSON events, runs, random bytes."""
    rng = random.Random(seed)
    if kind == "random":
        return rng.randbytes(size)
    if kind == "seed_text":
        start = rng.randrange(max(1, len(SEED_TEXT) - size))
        return SEED_TEXT[start:start + size]
    if kind == "runs":
        out = bytearray()
        while len(out) < size:
            out += bytes([rng.randrange(256)]) * rng.choice([1, 2, 3, 7, 300, 5000])
        return bytes(out[:size])
    if kind == "json":
        out = bytearray(b'{"traceEvents": [')
        while len(out) < size:
            out += (b'{"ph": "X", "name": "op_%d", "ts": %d, "dur": %d, "pid": %d, "tid": %d},\n'
                    % (rng.randrange(300), rng.randrange(10**12), rng.randrange(10**4),
                       rng.randrange(4), rng.randrange(16)))
        return bytes(out[:size])
    # mixed: text pieces, random bytes and long repeats with far distances
    out = bytearray()
    while len(out) < size:
        choice = rng.randrange(3)
        if choice == 0:
            start = rng.randrange(len(SEED_TEXT) - 2000)
            out += SEED_TEXT[start:start + rng.randrange(1, 2000)]
        elif choice == 1:
            out += rng.randbytes(rng.randrange(1, 300))
        elif len(out) > 10:
            back = rng.randrange(1, min(len(out), 40000) + 1)
            piece = out[len(out) - back:len(out) - back + rng.randrange(3, 600)]
            out += piece
    return bytes(out[:size])


def compress(data: bytes, level: int, strategy: int, wbits: int, mem_level: int,
             cuts: list[tuple[int, int]]) -> bytes:
    c = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    out = bytearray()
    prev = 0
    for cut, flush in sorted(cuts):
        cut = min(cut, len(data))
        out += c.compress(data[prev:cut])
        prev = cut
        if flush != zlib.Z_NO_FLUSH:
            out += c.flush(flush)
    out += c.compress(data[prev:]) + c.flush()
    return bytes(out)


def inflate(data: bytes, fmt: str = "auto", **kw: object) -> bytes:
    return bytes(_core.inflate(data, format=fmt, **kw))


def zlib_reference(data: bytes, wbits: int) -> bytes | None:
    """zlib's output for a complete stream with nothing after it, else None."""
    d = zlib.decompressobj(wbits)
    try:
        out = d.decompress(data) + d.flush()
    except zlib.error:
        return None
    if not d.eof or d.unused_data:
        return None
    return out


def gzip_reference(data: bytes) -> bytes | None:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):
        return None


def ours(data: bytes, fmt: str) -> bytes | None:
    try:
        return inflate(data, fmt)
    except TraceFormatError:
        return None


# ---- round trips -------------------------------------------------------------------------

payloads = st.builds(
    make_payload,
    st.sampled_from(["random", "seed_text", "runs", "json", "mixed"]),
    st.one_of(st.integers(0, 300), st.integers(0, 70000)),
    st.integers(0, 2**32),
)


@HYPOTHESIS
@given(
    data=payloads,
    level=st.integers(0, 9),
    strategy=st.sampled_from(sorted(STRATEGIES)),
    framing=st.sampled_from(["raw", "zlib", "gzip"]),
    window=st.integers(9, 15),
    mem_level=st.integers(1, 9),
    cuts=st.lists(st.tuples(st.integers(0, 70000), st.sampled_from(FLUSHES)), max_size=4),
)
def test_round_trip_every_level_strategy_and_window(data: bytes, level: int, strategy: str,
                                                   framing: str, window: int, mem_level: int,
                                                   cuts: list[tuple[int, int]]) -> None:
    wbits = {"raw": -window, "zlib": window, "gzip": 16 + window}[framing]
    comp = compress(data, level, STRATEGIES[strategy], wbits, mem_level, cuts)
    fmt = "raw" if framing == "raw" else "auto"
    assert inflate(comp, fmt) == data
    assert inflate(comp, framing) == data


@HYPOTHESIS
@given(data=payloads, level=st.sampled_from([1, 6, 9]),
       strategy=st.sampled_from(sorted(STRATEGIES)),
       framing=st.sampled_from(["raw", "zlib", "gzip"]),
       in_chunk=st.one_of(st.integers(1, 20), st.integers(1, 70000)),
       out_chunk=st.one_of(st.integers(1, 20), st.integers(1, 70000)),
       in_place=st.booleans())
def test_streaming_at_any_chunking(data: bytes, level: int, strategy: str, framing: str,
                                   in_chunk: int, out_chunk: int, in_place: bool) -> None:
    wbits = {"raw": -15, "zlib": 15, "gzip": 31}[framing]
    comp = compress(data, level, STRATEGIES[strategy], wbits, 8, [])
    out, length = _core.inflate_stream(comp, framing, in_chunk, out_chunk, in_place)
    assert out == data
    assert length == len(comp)


def test_large_trace_like_streams() -> None:
    # Long streams at every output piece size: the fast loop's bounds, matches reaching back
    # into the window, 32 KiB distances.
    data = make_payload("mixed", 3_000_000, 1) + make_payload("json", 2_000_000, 2)
    for level in (1, 6, 9):
        comp = gzip.compress(data, level)
        assert inflate(comp) == data
        for in_chunk, out_chunk in ((1 << 20, 1000), (4096, 65536), (100_000, 333_333)):
            out, length = _core.inflate_stream(comp, "gzip", in_chunk, out_chunk)
            assert out == data and length == len(comp)


def test_highly_compressible_output_and_buffer() -> None:
    # The last member's ISIZE (1 byte) is the first guess: the output mapping grows many times.
    data = b"\0" * (64 << 20) + b"x"
    comp = gzip.compress(data[:-1], 9) + gzip.compress(b"x")
    out = _core.inflate(comp)
    assert len(out) == len(data)
    assert memoryview(out) == data  # buffer protocol, no copy
    assert memoryview(out).readonly


# ---- gzip members ------------------------------------------------------------------------

@HYPOTHESIS
@given(parts=st.lists(st.tuples(payloads, st.integers(0, 9), st.integers(0, 3)), min_size=1,
                      max_size=5))
def test_multi_member_gzip_with_padding(parts: list[tuple[bytes, int, int]]) -> None:
    comp = b"".join(gzip.compress(data, level) + b"\0" * pad for data, level, pad in parts)
    expect = gzip.decompress(comp)
    assert inflate(comp) == expect
    assert inflate(comp, "gzip") == expect
    out, length = _core.inflate_stream(comp, "gzip", 7, 1000)
    assert out == expect and length == len(comp)


def test_gzip_header_fields_and_first_member_only() -> None:
    text = SEED_TEXT[:5000]
    sub = b"TC" + struct.pack("<H", 3) + b"abc"
    extra = struct.pack("<H", len(sub)) + sub
    header = b"\x1f\x8b\x08\x1e" + b"\0\0\0\0\0\x03" + extra + b"name.pbtxt\0comment\0"
    header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    member = header + raw.compress(text) + raw.flush() + struct.pack(
        "<II", zlib.crc32(text), len(text))
    assert inflate(member) == text
    both = member + gzip.compress(b"second")
    assert inflate(both) == text + b"second"
    assert inflate(both, multi_member=False, allow_trailing_data=True) == text
    out, length = _core.inflate_stream(both, "gzip", 3, 50, False, False, True)
    assert out == text and length == len(member)
    with pytest.raises(TraceFormatError, match="trailing data after the end of the gzip stream"):
        inflate(both, multi_member=False)


# ---- corrupted input ---------------------------------------------------------------------

def small_streams() -> dict[str, bytes]:
    text = SEED_TEXT[:700] + bytes(range(40)) + SEED_TEXT[3000:3300]
    raw_fixed = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_FIXED)
    raw_dyn = zlib.compressobj(9, zlib.DEFLATED, -15)
    raw_stored = zlib.compressobj(0, zlib.DEFLATED, -15)
    return {
        "raw_dynamic": raw_dyn.compress(text) + raw_dyn.flush(),
        "raw_fixed": raw_fixed.compress(text[:300]) + raw_fixed.flush(),
        "raw_stored": raw_stored.compress(text[:100]) + raw_stored.flush(),
        "zlib": zlib.compress(text, 6),
        "gzip": gzip.compress(text[:600], 9) + gzip.compress(text[:50], 1),
    }


def check_verdict(name: str, data: bytes) -> None:
    if name.startswith("raw"):
        ref, got = zlib_reference(data, -15), ours(data, "raw")
        assert got == ref, (name, data.hex())
    elif name == "zlib":
        ref, got = zlib_reference(data, 15), ours(data, "zlib")
        assert got == ref, (name, data.hex())
        assert ours(data, "auto") in (None, ref)
    else:
        ref, got = gzip_reference(data), ours(data, "gzip")
        # Stricter than Python's gzip (header CRC, reserved flags), never laxer.
        assert got is None or got == ref, (name, data.hex())
    # The streaming path gives the same verdict and bytes.
    fmt = "raw" if name.startswith("raw") else name
    try:
        streamed = _core.inflate_stream(data, fmt, 5, 77)[0]
    except TraceFormatError:
        streamed = None
    assert streamed == got, (name, data.hex())


@pytest.mark.parametrize("name", sorted(small_streams()))
def test_every_single_byte_mutation(name: str) -> None:
    data = small_streams()[name]
    rng = random.Random(name)
    for i in range(len(data)):
        values = {data[i] ^ 1, data[i] ^ 0x80, data[i] ^ 0x10, 0, 0xFF, rng.randrange(256)}
        values.discard(data[i])
        for v in sorted(values):
            check_verdict(name, data[:i] + bytes([v]) + data[i + 1:])


@pytest.mark.parametrize("name", sorted(small_streams()))
def test_every_truncation_and_extension(name: str) -> None:
    data = small_streams()[name]
    for n in range(len(data)):
        check_verdict(name, data[:n])
    for tail in (b"\0", b"\0\0\0", b"x", b"\x1f", b"\x1f\x8b"):
        check_verdict(name, data + tail)


@HYPOTHESIS
@given(data=st.binary(max_size=400))
def test_random_bytes_as_raw_deflate(data: bytes) -> None:
    check_verdict("raw", data)


@HYPOTHESIS
@given(prefix=st.binary(min_size=1, max_size=3), data=st.binary(max_size=300))
def test_random_bytes_after_a_valid_start(prefix: bytes, data: bytes) -> None:
    # A dynamic-block header start (BFINAL=1, BTYPE=2) or a fixed one, then noise.
    for first in (0x05, 0x03):
        check_verdict("raw", bytes([first]) + prefix + data)


def test_error_names_offset_and_cause() -> None:
    with pytest.raises(TraceFormatError, match=r"^byte offset 0 of the gzip or zlib data: "
                                               r"neither gzip nor zlib") as e:
        inflate(b'{"traceEvents": []}')
    assert e.value.offset == 0
    comp = gzip.compress(SEED_TEXT[:2000])
    bad = comp[:-8] + bytes([comp[-8] ^ 1]) + comp[-7:]
    with pytest.raises(TraceFormatError, match="gzip CRC-32 mismatch") as e:
        inflate(bad)
    assert e.value.offset == len(comp) - 8
    with pytest.raises(TraceFormatError, match="truncated gzip data") as e:
        inflate(comp[:100])
    assert e.value.offset == 100


# ---- limits ------------------------------------------------------------------------------

def test_limits() -> None:
    data = b"\0" * (4 << 20)
    comp = gzip.compress(data, 9)
    assert len(_core.inflate(comp, 4 << 20)) == len(data)
    with pytest.raises(TraceFormatError,
                       match=r"exceeds the limit of 4194303 bytes \(InflateLimits::"
                             r"max_output_bytes\); raise max_output_bytes"):
        _core.inflate(comp, (4 << 20) - 1)
    with pytest.raises(TraceFormatError, match=r"InflateLimits::max_ratio"):
        _core.inflate(comp, max_ratio=100.0)
    assert len(_core.inflate(comp, max_ratio=1100.0)) == len(data)
