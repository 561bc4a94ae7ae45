"""The core's JSON reader (cpp/src/importers/chrome_json) against Python's json module.

Hypothesis writes random documents (escapes of every kind, surrogate pairs, raw UTF-8,
nesting, numbers at the edges, whitespace anywhere) and the reader must give what
``json.loads`` gives, through ``tracecore._core.json_loads`` (a test helper that builds Python
objects from the reader's tokens). The documented differences are checked as such:

* integers outside int64 come back as the nearest float (json: an exact int);
* NaN, Infinity and -Infinity are errors (json accepts them);
* a lone surrogate, escaped or encoded in the bytes, is an error (json gives a str holding it);
* errors are tracecore.TraceFormatError with a line and a column in bytes.

Mutated documents and mutated real traces must give the same accept/reject verdict as json
(up to those differences) and never anything but TraceFormatError. The fixed-point decimal
reader is checked against Decimal arithmetic. Every stage-1 implementation the CPU has runs
the same documents.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import re
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracecore import TraceFormatError
from tracecore import _core as core

DATA = Path(__file__).parent / "data" / "chrome"
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EXAMPLES = int(os.environ.get("TRACECORE_HYPOTHESIS_EXAMPLES", "100"))
PROPS = settings(max_examples=EXAMPLES, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _available_stage1() -> list[str]:
    names = []
    for name in ("portable", "sse2", "ssse3", "avx2"):
        try:
            core.json_loads(b"[1]", stage1=name)
        except ValueError:
            continue
        names.append(name)
    return names


STAGE1 = _available_stage1()


# ------------------------------------------------------------------------------------------
# Comparing values
# ------------------------------------------------------------------------------------------
def _expected(value: Any) -> Any:
    """json.loads's value as the reader gives it: integers past int64 as floats."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else float(value)
    if isinstance(value, list):
        return [_expected(v) for v in value]
    return {k: _expected(v) for k, v in value.items()}


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a == b and math.copysign(1, a) == math.copysign(1, b)) or (
            math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


def _assert_reads_like_json(data: bytes, **kwargs: Any) -> None:
    expected = _expected(json.loads(data))
    for stage1 in STAGE1:
        got = core.json_loads(data, stage1=stage1, **kwargs)
        assert _same(got, expected), (stage1, data[:200], got, expected)


# ------------------------------------------------------------------------------------------
# Writing documents
# ------------------------------------------------------------------------------------------
_WS = st.sampled_from(["", "", "", " ", "\n", "\t", "\r\n", "\n    ", "  "])
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                  "\r": "\\r", "\t": "\\t", "/": "\\/"}


def _u_escape(code: int, upper: bool) -> str:
    text = f"\\u{code:04x}"
    return text.upper().replace("\\U", "\\u") if upper else text


@st.composite
def _json_string(draw: st.DrawFn, text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        must = ch in '"\\' or code < 0x20
        how = draw(st.integers(0, 5)) if must else draw(st.integers(0, 9))
        if ch in _SHORT_ESCAPES and how in (0, 1, 2):
            out.append(_SHORT_ESCAPES[ch])
        elif must or how == 3:
            upper = draw(st.booleans())
            if code >= 0x10000:  # a surrogate pair
                code -= 0x10000
                out.append(_u_escape(0xD800 + (code >> 10), upper))
                out.append(_u_escape(0xDC00 + (code & 0x3FF), upper))
            else:
                out.append(_u_escape(code, upper))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


_TEXT = st.text(st.one_of(
    st.characters(blacklist_categories=("Cs",)),
    st.sampled_from('"\\/\b\f\n\r\t\x00\x01\x1f\x7f\u00e9\u2028\ufeff\U0001f600\U0010ffff'),
), max_size=12)

_EDGE_INTS = [0, 1, -1, 2**53, 2**53 + 1, INT64_MAX, INT64_MAX + 1, INT64_MIN, INT64_MIN - 1,
              2**64, -(2**64), 10**30]
_EDGE_NUMBER_TEXTS = ["-0", "-0.0", "0e0", "0E+00", "1e308", "1.7976931348623157e308",
                      "1.7976931348623159e308", "1e400", "-1e400", "1e-400", "5e-324",
                      "2.4703282292062327e-324", "2.4703282292062328e-324", "4.9e-324",
                      "2.2250738585072011e-308", "9007199254740993", "0.1", "123456789e-5",
                      "1" + "0" * 30, "0." + "0" * 30 + "1", "9223372036854775807",
                      "9223372036854775808", "-9223372036854775808", "-9223372036854775809"]


@st.composite
def _number(draw: st.DrawFn) -> str:
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return str(draw(st.one_of(st.integers(), st.sampled_from(_EDGE_INTS))))
    if kind == 1:
        return draw(st.sampled_from(_EDGE_NUMBER_TEXTS))
    f = draw(st.floats(allow_nan=False, allow_infinity=False))
    form = draw(st.integers(0, 3))
    if form == 0:
        return repr(f)
    if form == 1:
        return f"{f:.17g}".replace("inf", "1e999")
    if form == 2:
        return f"{f:E}"
    return f"{f:.3f}"


@st.composite
def json_documents(draw: st.DrawFn, max_leaves: int = 30) -> str:
    """A random JSON text (the whole document, whitespace around every token)."""
    leaves = st.one_of(
        _number(),
        _TEXT.map(lambda t: ("str", t)),
        st.sampled_from(["true", "false", "null"]),
    )
    tree = draw(st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=5),
            st.lists(st.tuples(_TEXT, inner), max_size=5).map(lambda kv: ("obj", kv)),
        ),
        max_leaves=max_leaves,
    ))

    def render(node: Any) -> str:
        ws = draw(_WS)
        if isinstance(node, str):
            return ws + node + draw(_WS)
        if isinstance(node, tuple) and node[0] == "str":
            return ws + draw(_json_string(node[1])) + draw(_WS)
        if isinstance(node, tuple):
            items = [draw(_WS) + draw(_json_string(k)) + draw(_WS) + ":" + render(v)
                     for k, v in node[1]]
            return ws + "{" + (",".join(items) if items else draw(_WS)) + "}" + draw(_WS)
        return ws + "[" + (",".join(render(v) for v in node) if node else draw(_WS)) + "]" + ws

    return render(tree)


# ------------------------------------------------------------------------------------------
# Documents read like json.loads reads them
# ------------------------------------------------------------------------------------------
@PROPS
@given(json_documents())
def test_random_documents_read_like_json(text: str) -> None:
    _assert_reads_like_json(text.encode("utf-8"))


@PROPS
@given(json_documents(max_leaves=200))
def test_bigger_documents_read_like_json(text: str) -> None:
    _assert_reads_like_json(text.encode("utf-8"))


@pytest.mark.parametrize("text", _EDGE_NUMBER_TEXTS + [str(i) for i in _EDGE_INTS])
def test_numbers_at_the_edges(text: str) -> None:
    _assert_reads_like_json(f"[{text}, {{\"k\": {text}}}]".encode())
    value = core.json_loads(text.encode())
    if re.fullmatch(r"-?\d+", text) and INT64_MIN <= int(text) <= INT64_MAX:
        assert type(value) is int and value == int(text)
    else:
        assert type(value) is float and value == float(text)
        assert math.copysign(1, value) == math.copysign(1, float(text))


def test_duplicate_keys_keep_the_last_value_in_the_first_place() -> None:
    data = b'{"a": 1, "b": 2, "a": 3}'
    assert core.json_loads(data) == json.loads(data) == {"a": 3, "b": 2}
    assert list(core.json_loads(data)) == ["a", "b"]


def test_deep_nesting_within_the_budget() -> None:
    _assert_reads_like_json(b"[" * 200 + b"]" * 200)
    assert core.json_loads(b"[" * 1000 + b"]" * 1000) is not None
    with pytest.raises(TraceFormatError, match="nesting deeper than 1000 levels"):
        core.json_loads(b"[" * 1001 + b"]" * 1001)
    with pytest.raises(TraceFormatError, match="nesting deeper than 5 levels"):
        core.json_loads(b"[[[[[[]]]]]]", max_depth=5)


def test_byte_order_mark_is_skipped_as_json_does_for_bytes() -> None:
    _assert_reads_like_json(b'\xef\xbb\xbf{"a": 1}')


# ------------------------------------------------------------------------------------------
# Documented differences and errors
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_errors(literal: str) -> None:
    data = f'{{"x": [1, {literal}]}}'.encode()
    assert json.loads(data)  # json takes them
    with pytest.raises(TraceFormatError, match="NaN and Infinity are not JSON numbers") as e:
        core.json_loads(data)
    assert (e.value.line, e.value.column) == (1, data.index(literal.encode()) + 1)


@pytest.mark.parametrize("data", [b'["\\ud800"]', b'["a\\udc00b"]', b'["\\ud800\\u0041"]',
                                  b'["\xed\xa0\x80"]'])
def test_lone_surrogates_are_errors_or_replaced(data: bytes) -> None:
    json.loads(data)  # json takes them (a str holding the surrogate)
    with pytest.raises(TraceFormatError, match="surrogate|invalid UTF-8"):
        core.json_loads(data)
    replaced = core.json_loads(data, errors="replace")
    assert "\ufffd" in replaced[0]


@pytest.mark.parametrize(("data", "line", "column", "message"), [
    (b'{"a": 1,}', 1, 9, "trailing comma before '}'"),
    (b"[1,\n 2,\n]", 3, 1, "trailing comma before ']'"),
    (b'{"a" 1}', 1, 6, "expected ':'"),
    (b"[01]", 1, 3, "unexpected '1' after a number"),
    (b'["a\tb"]', 1, 4, "unescaped control character 0x09"),
    (b'["\xff"]', 1, 3, "invalid UTF-8"),
    (b'\n\n  {"k": [1, 2}', 3, 14, "expected ',' or ']'"),
    (b"", 1, 1, "unexpected end of input"),
    (b"[1] 2", 1, 5, "unexpected data after the JSON value"),
    (b'"abc', 1, 1, "unterminated string"),
])
def test_errors_name_line_and_column(data: bytes, line: int, column: int, message: str) -> None:
    with pytest.raises(ValueError):
        json.loads(data)
    for stage1 in STAGE1:
        with pytest.raises(TraceFormatError, match=re.escape(message)) as e:
            core.json_loads(data, stage1=stage1)
        assert (e.value.line, e.value.column) == (line, column)
        assert str(e.value).startswith(f"line {line}, column {column}: ")


@st.composite
def _utf8_with_bad_bytes(draw: st.DrawFn) -> bytes:
    """A document whose strings hold ill-formed UTF-8 (no raw control characters)."""
    pieces = []
    for _ in range(draw(st.integers(1, 4))):
        body = b""
        for _ in range(draw(st.integers(0, 6))):
            body += draw(st.one_of(
                st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=4)
                .map(lambda t: t.replace("\\", "").replace('"', "").encode()),
                st.sampled_from([b"\xff", b"\xc3", b"\xe0\xa0", b"\xe0\x80", b"\xed\xa0\x80",
                                 b"\xf0\x9f\x98", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80",
                                 b"\xc3\xa9", b"\xf0\x9f\x98\x80"]),
            ))
        pieces.append(b'"' + body + b'"')
    return b"[" + b", ".join(pieces) + b"]"


@PROPS
@given(_utf8_with_bad_bytes())
def test_replace_mode_agrees_with_decode_replace(data: bytes) -> None:
    expected = json.loads(data.decode("utf-8", "replace"))
    for stage1 in STAGE1:
        assert core.json_loads(data, errors="replace", stage1=stage1) == expected
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        with pytest.raises(TraceFormatError, match="invalid UTF-8"):
            core.json_loads(data)


def test_replace_mode_replaces_raw_control_characters() -> None:
    assert core.json_loads(b'["a\x01b\nc"]', errors="replace") == ["a\ufffdb\ufffdc"]
    with pytest.raises(ValueError, match="errors must be"):
        core.json_loads(b"[]", errors="ignore")


# ------------------------------------------------------------------------------------------
# Mutations: same verdict as json, never a crash
# ------------------------------------------------------------------------------------------
def _allowed_difference(data: bytes, message: str) -> bool:
    """json accepts what the reader rejects, for a documented reason."""
    return ("NaN and Infinity" in message or "surrogate" in message
            or ("invalid UTF-8" in message and re.search(rb"\xed[\xa0-\xbf]", data) is not None)
            or "nesting deeper" in message)


def _check_verdict(data: bytes) -> None:
    try:
        expected: Any = _expected(json.loads(data))
        json_error = None
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        json_error = e
    for stage1 in STAGE1:
        try:
            got = core.json_loads(data, stage1=stage1)
        except TraceFormatError as e:
            if json_error is None:
                assert _allowed_difference(data, str(e)), (data[:300], str(e))
            assert e.line is not None and e.line >= 1 and e.column is not None and e.column >= 1
            continue
        assert json_error is None, (data[:300], json_error)
        assert _same(got, expected), (stage1, data[:300])


def _mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        at = rng.randrange(len(b) + 1)
        if op == 0 and b:
            del b[min(at, len(b) - 1)]
        elif op == 1:
            b[at:at] = bytes([rng.choice(b'{}[]:,"\\ \n-.0123456789eEtfnu\x00\x1f\x80\xff')])
        elif op == 2 and b:
            b[min(at, len(b) - 1)] = rng.randrange(256)
        elif op == 3:
            del b[at:]
        elif op == 4 and b:
            j = rng.randrange(len(b))
            b[at:at] = b[j:j + rng.randint(1, 8)]
        else:
            b[at:at] = rng.choice([b"NaN", b"1e999", b"-0", b"\\u", b"\\ud83d", b'"', b",",
                                   b"\xed\xa0\x80", b"99999999999999999999"])
    return bytes(b)


@PROPS
@given(json_documents(), st.integers(0, 2**32))
def test_mutated_documents_get_the_verdict_json_gives(text: str, seed: int) -> None:
    _check_verdict(_mutate(text.encode(), random.Random(seed)))


def _samples() -> list[Path]:
    return sorted(p for p in DATA.iterdir() if ".json" in p.name)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


@pytest.mark.parametrize("path", _samples(), ids=lambda p: p.name)
def test_real_samples_read_like_json(path: Path) -> None:
    _assert_reads_like_json(_read(path))


@pytest.mark.parametrize("path", _samples(), ids=lambda p: p.name)
def test_mutated_samples_never_crash(path: Path) -> None:
    data = _read(path)
    rng = random.Random(path.name)
    for _ in range(60):
        mutated = _mutate(data, rng)
        _check_verdict(mutated)
        for errors in ("strict", "replace"):
            try:
                core.chrome_json_events(mutated, errors=errors)
            except TraceFormatError as e:
                assert e.line is not None and e.column is not None


# ------------------------------------------------------------------------------------------
# The fixed-point decimal reader
# ------------------------------------------------------------------------------------------
def _scaled(text: str, scale: int) -> int | None:
    value = (Decimal(text) * (Decimal(10) ** scale)).to_integral_value(rounding=ROUND_HALF_EVEN)
    return int(value) if INT64_MIN <= value <= INT64_MAX else None


@st.composite
def _decimal_texts(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "", "-"]))
    whole = draw(st.one_of(st.just("0"), st.integers(1, 10**20).map(str)))
    frac = draw(st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=25)
                          .map(lambda f: "." + f)))
    exp = draw(st.one_of(st.just(""), st.integers(-30, 30).map(
        lambda e: draw(st.sampled_from(["e", "E"])) + draw(st.sampled_from(["", "+"]))
        .replace("+", "+" if e >= 0 else "") + str(e))))
    return sign + whole + frac + exp


@PROPS
@given(_decimal_texts(), st.integers(0, 18))
def test_decimal_scaled_matches_decimal_arithmetic(text: str, scale: int) -> None:
    expected = _scaled(text, scale)
    if expected is None:
        with pytest.raises(ValueError, match="out of range"):
            core.json_decimal_scaled(text, scale)
    else:
        assert core.json_decimal_scaled(text, scale) == expected


@PROPS
@given(_decimal_texts())
def test_event_times_match_decimal_arithmetic(text: str) -> None:
    # ts goes through the reader's SWAR path when it can; dur through the general one at the end.
    data = f'[{{"ph": "X", "ts": {text}, "pid": 1, "tid": 2, "name": "n", "dur": {text}}}]'
    expected = _scaled(text, 3)
    for stage1 in STAGE1:
        if expected is None:
            with pytest.raises(TraceFormatError, match="does not fit"):
                core.chrome_json_events(data.encode(), stage1=stage1)
            continue
        events, _, _ = core.chrome_json_events(data.encode(), stage1=stage1)
        assert events[0]["ts_ns"] == expected and events[0]["dur_ns"] == expected


@pytest.mark.parametrize(("text", "ns"), [
    ("4762454534497.497", 4762454534497497), ("1.5e3", 1_500_000), ("-1.0005", -1000),
    ("1.0015", 1002), ("15.449999999999999", 15450), ("9.9999999999999995e-07", 0),
])
def test_decimal_examples(text: str, ns: int) -> None:
    assert core.json_decimal_scaled(text, 3) == ns == _scaled(text, 3)


@PROPS
@given(_number())
def test_parse_double_is_correctly_rounded(text: str) -> None:
    value = core.json_parse_double(text)
    assert value == float(text) and math.copysign(1, value) == math.copysign(1, float(text))
