"""Hypothesis strategies for TensorFlow trace messages and for their many valid encodings.

* ``step_stats_messages()`` / ``run_metadata_messages()`` / ``trace_messages()``: random
  StepStats / RunMetadata protobuf messages (tests/tfproto.py classes) that cover every field:
  awkward unicode names (quotes, backslashes, newlines, NUL, non-ASCII), int64 values near the
  limits (including the micros*1000 overflow boundary), uint64 ptr near 2**64, empty
  sub-messages, nano fields set or not, duplicated device strings, thread_names maps, cost
  graphs, partition and function graphs. Sizes are small.
* ``text_renderings(msg)``: a random but valid protobuf text rendering of ``msg`` (``< >``,
  optional ':', ``[a, b]`` lists, ``#`` comments, single quotes, concatenated literals, octal /
  hex / unicode escapes, enum numbers, hex / octal integers, bool spellings, ``,``/``;``
  separators, explicit defaults, shuffled field order).
* ``wire_encodings(msg)``: a random but valid protobuf binary encoding of ``msg`` (shuffled
  field order, packed / unpacked / mixed repeated scalars, explicit defaults, repeated singular
  scalars (last wins), overlong varints, int32/uint32/enum values with garbage high bits,
  unknown fields, known fields with the wrong wire type, split singular sub-messages (merged)).

The renderings are only ever used together with protobuf's own parse of the produced bytes /
text: that parse (not the original message) is what the oracle is computed from. The tests
also check that the parse equals the original message, which validates these renderers.
"""

from __future__ import annotations

import math
import struct

import hypothesis.strategies as st
from google.protobuf import descriptor as _descriptor

import tfproto as tp

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
UINT32_MAX = 2**32 - 1
UINT64_MAX = 2**64 - 1

# ------------------------------------------------------------------------------------------
# Scalars
# ------------------------------------------------------------------------------------------
SPECIAL_CHARS = '"\'\\\n\r\t\x00\x01\x07\x08\x0b\x0c\x1b\x7f#{}<>[]:;,()= /_-.' \
                '\u00e9\u00ff\u0100\u65e5\u672c\u200b\ufeff\U0001f600\U0010ffff'

_chars = st.one_of(
    st.sampled_from(SPECIAL_CHARS),
    st.characters(codec="utf-8"),  # no surrogates
    st.characters(min_codepoint=0x20, max_codepoint=0x7E),
)

any_text = st.text(_chars, max_size=10)

INTERESTING_STRINGS = [
    "", " ", "\\", '"', "'", "\n", "a\nb", "\\n", "\x00", "#", "# not a comment", "{", "}",
    "<>", "name = Op(a, b)", "x: 1", "dev_stats {", "\u00e9t\u00e9", "\u65e5\u672c\u8a9e",
    "\U0001f600", "tab\there", "\\x41\\101", "'quoted'", '"dq"', "a b", "GPU_0_bfc", "cpu",
]

names = st.one_of(any_text, st.sampled_from(INTERESTING_STRINGS))

int64_edges = st.sampled_from([
    0, 1, -1, 2, 127, 128, -128, 255, 256, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1,
    2**32 - 1, 2**32, 2**53, 2**53 + 1, INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1,
    INT64_MAX // 1000, INT64_MAX // 1000 + 1, INT64_MIN // 1000, INT64_MIN // 1000 + 1,
    -(INT64_MAX // 1000), 10**15, 10**18,
])
int64s = st.one_of(st.integers(-1000, 10**6), int64_edges, st.integers(INT64_MIN, INT64_MAX))
int32s = st.one_of(st.integers(-5, 100),
                   st.sampled_from([INT32_MIN, INT32_MAX, -1, 0, 2**16, -(2**16)]),
                   st.integers(INT32_MIN, INT32_MAX))
uint32s = st.one_of(st.integers(0, 100), st.sampled_from([0, 1, 2**31, UINT32_MAX, 2**16]),
                    st.integers(0, UINT32_MAX))
uint64s = st.one_of(st.integers(0, 2**48), st.sampled_from(
    [0, 1, 2**63 - 1, 2**63, 2**63 + 1, UINT64_MAX, UINT64_MAX - 1, 140294561467136]),
    st.integers(0, UINT64_MAX))
bools = st.booleans()

# Time fields: usually realistic, sometimes extreme (an overflowing derived nanosecond value
# must make tracecore.open raise TraceFormatError, so extremes are kept rare).
_abs_micros = st.integers(0, 2 * 10**15)
_rel_micros = st.integers(-10, 10**7)
_abs_nanos = st.integers(1, 2 * 10**18)
_rel_nanos = st.integers(-1000, 10**10)


def _rarely(common, rare, zero_weight=2, common_weight=8):
    return st.integers(0, zero_weight + common_weight).flatmap(
        lambda i: st.just(0) if i < zero_weight else (common if i < zero_weight + common_weight
                                                      else st.one_of(rare, int64_edges)))


abs_micros = _rarely(_abs_micros, st.integers(INT64_MIN // 1000 - 2, INT64_MAX // 1000 + 2))
rel_micros = _rarely(_rel_micros, st.integers(INT64_MIN // 1000 - 2, INT64_MAX // 1000 + 2))
abs_nanos = _rarely(_abs_nanos, st.integers(INT64_MIN, INT64_MAX), zero_weight=4)
rel_nanos = _rarely(_rel_nanos, st.integers(INT64_MIN, INT64_MAX))

dtypes = st.one_of(
    st.sampled_from([v for _, v in tp.DATA_TYPE_VALUES]),
    st.sampled_from([31, 99, 100, 131, 200, 1000, -1, -100, INT32_MAX, INT32_MIN]),
)

dim_sizes = st.one_of(
    st.integers(-2, 64),
    st.sampled_from([-1, 0, 1, 2**31, 2**32, 2**62, INT64_MAX, INT64_MIN, -(2**40)]),
    st.integers(INT64_MIN, INT64_MAX),
)

devices = st.one_of(
    st.sampled_from([
        "/job:localhost/replica:0/task:0/device:GPU:0",
        "/job:localhost/replica:0/task:0/device:CPU:0",
        "/job:worker/replica:0/task:1/gpu:0",
        "/device:GPU:0/stream:all", "/device:GPU:0/stream:13", "/device:GPU:0/stream:14",
        "/device:GPU:0/memcpy", "/device:GPU:1/stream:all/x", "/stream:", "stream:all",
        "/device:GPU:0/stream:allx", "/memcpy/x", "", "host",
    ]),
    names,
)

allocator_names = st.one_of(st.sampled_from(
    ["GPU_0_bfc", "cuda_host_bfc", "cpu", "cpu_pool", "mklcpu", ""]), names)


@st.composite
def node_names(draw):
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return draw(names)
    if kind == 1:
        return draw(names) + ":" + draw(names)
    if kind == 2:
        number = draw(st.integers(0, 9999))
        copy = draw(st.sampled_from(["MEMCPYDtoH", "MEMCPYHtoD", "MEMCPYDtoD"]))
        return f"edge_{number}_{draw(names)}:{copy}"
    if kind == 3:
        return draw(st.sampled_from(["_SOURCE", "tower_0/v/Conv2D", "a:b:c", ":", "x:", ":y"]))
    return draw(names) + "/" + draw(names)


@st.composite
def timeline_labels(draw):
    kind = draw(st.integers(0, 6))
    if kind == 0:
        return draw(names)
    if kind == 1:
        return ""
    prefix = draw(st.one_of(
        st.just(""),
        st.builds(lambda s: "[" + s + "] ", st.text(_chars.filter(lambda c: c != "]"), max_size=6)),
        st.sampled_from(["[GPU_0_bfc 0.5MB 0.5MB] ", "[] ", "[a]", "[a] b] ", "[ ", "[x]  ",
                         "[[x]] ", "[a = B(] "]),
    ))
    name = draw(st.one_of(names, st.sampled_from(["n", "a = b", "tower_0/x"])))
    sep = draw(st.sampled_from([" = ", " = ", " =", "= ", " == ", " = = "]))
    op = draw(st.one_of(st.sampled_from(["Conv2D", "NoOp", "_Recv", "", " Op ", "Op\t", "a(b"]),
                        names))
    args = draw(st.one_of(st.just(""), st.sampled_from(["a, b", "^ctrl", "a:1, ^b", "(x)"]),
                          names))
    tail = draw(st.sampled_from(["({})", "({}", "", " ({})", "({}) extra", "\n"]))
    return prefix + name + sep + op + (tail.format(args) if "{}" in tail else tail)


# ------------------------------------------------------------------------------------------
# Messages
# ------------------------------------------------------------------------------------------
@st.composite
def shapes(draw, into):
    for _ in range(draw(st.integers(0, 4))):
        d = into.dim.add()
        d.size = draw(dim_sizes)
        if draw(st.integers(0, 3)) == 0:
            d.name = draw(names)
    if draw(st.integers(0, 4)) == 0:
        into.unknown_rank = True
    into.SetInParent()
    return into


@st.composite
def allocation_descriptions(draw, into):
    into.SetInParent()
    if draw(bools):
        into.requested_bytes = draw(int64s)
    if draw(bools):
        into.allocated_bytes = draw(int64s)
    if draw(bools):
        into.allocator_name = draw(allocator_names)
    if draw(bools):
        into.allocation_id = draw(int64s)
    if draw(bools):
        into.has_single_reference = draw(bools)
    if draw(bools):
        into.ptr = draw(uint64s)
    return into


@st.composite
def node_outputs(draw, into):
    if draw(bools):
        into.slot = draw(int32s)
    if draw(st.integers(0, 5)):
        td = into.tensor_description
        td.SetInParent()
        if draw(st.integers(0, 4)):
            td.dtype = draw(dtypes)
        if draw(st.integers(0, 4)):
            draw(shapes(td.shape))
        if draw(st.integers(0, 4)):
            draw(allocation_descriptions(td.allocation_description))
    return into


@st.composite
def memory_used(draw, into):
    if draw(st.integers(0, 4)):
        into.allocator_name = draw(allocator_names)
    for f in ("total_bytes", "peak_bytes", "live_bytes", "allocator_bytes_in_use"):
        if draw(bools):
            setattr(into, f, draw(int64s))
    for _ in range(draw(st.integers(0, 3))):
        r = into.allocation_records.add()
        if draw(st.integers(0, 3)):
            r.alloc_micros = draw(abs_micros)
        if draw(st.integers(0, 3)):
            r.alloc_bytes = draw(int64s)
    return into


@st.composite
def memory_stats(draw, into):
    into.SetInParent()
    for f in ("temp_memory_size", "persistent_memory_size", "device_temp_memory_size",
              "device_persistent_memory_size"):
        if draw(bools):
            setattr(into, f, draw(int64s))
    into.persistent_tensor_alloc_ids.extend(draw(st.lists(int64s, max_size=4)))
    into.device_persistent_tensor_alloc_ids.extend(draw(st.lists(int64s, max_size=2)))
    return into


@st.composite
def node_exec_stats(draw, into):
    if draw(st.integers(0, 6)):
        into.node_name = draw(node_names())
    if draw(st.integers(0, 5)):
        into.timeline_label = draw(timeline_labels())
    into.all_start_micros = draw(abs_micros)
    into.op_start_rel_micros = draw(rel_micros)
    into.op_end_rel_micros = draw(rel_micros)
    into.all_end_rel_micros = draw(rel_micros)
    into.scheduled_micros = draw(abs_micros)
    if draw(bools):  # nanosecond fields set or not
        into.all_start_nanos = draw(abs_nanos)
        into.op_start_rel_nanos = draw(rel_nanos)
        into.op_end_rel_nanos = draw(rel_nanos)
        into.all_end_rel_nanos = draw(rel_nanos)
        into.scheduled_nanos = draw(abs_nanos)
    if draw(bools):
        into.thread_id = draw(uint32s)
    for _ in range(draw(st.integers(0, 2))):
        draw(memory_used(into.memory.add()))
    for _ in range(draw(st.integers(0, 3))):
        draw(node_outputs(into.output.add()))
    for _ in range(draw(st.integers(0, 1))):
        draw(allocation_descriptions(into.referenced_tensor.add()))
    if draw(st.integers(0, 2)):
        draw(memory_stats(into.memory_stats))
    return into


@st.composite
def device_step_stats(draw, into, device_pool):
    if draw(st.integers(0, 6)):
        into.device = draw(st.sampled_from(device_pool))
    for _ in range(draw(st.integers(0, 4))):
        draw(node_exec_stats(into.node_stats.add()))
    for _ in range(draw(st.integers(0, 3))):
        into.thread_names[draw(uint32s)] = draw(names)
    return into


@st.composite
def fill_step_stats(draw, into, max_devices=3):
    pool = draw(st.lists(devices, min_size=1, max_size=3))  # small pool -> duplicates
    for _ in range(draw(st.one_of(st.integers(0, max_devices), st.integers(1, max_devices)))):
        draw(device_step_stats(into.dev_stats.add(), pool))
    return into


@st.composite
def step_stats_messages(draw):
    return draw(fill_step_stats(tp.StepStats()))


@st.composite
def cost_graphs(draw, into):
    into.SetInParent()
    for _ in range(draw(st.integers(0, 3))):
        n = into.node.add()
        if draw(st.integers(0, 4)):
            n.name = draw(names)
        if draw(bools):
            n.device = draw(devices)
        if draw(bools):
            n.id = draw(int32s)
        for _ in range(draw(st.integers(0, 3))):
            ii = n.input_info.add()
            if draw(st.integers(0, 3)):
                ii.preceding_node = draw(int32s)
            if draw(bools):
                ii.preceding_port = draw(int32s)
        for _ in range(draw(st.integers(0, 2))):
            oi = n.output_info.add()
            if draw(st.integers(0, 3)):
                oi.size = draw(int64s)
            if draw(bools):
                oi.alias_input_port = draw(int64s)
            if draw(bools):
                draw(shapes(oi.shape))
            if draw(bools):
                oi.dtype = draw(dtypes)
        for f in ("temporary_memory_size", "persistent_memory_size", "host_temp_memory_size",
                  "device_temp_memory_size", "device_persistent_memory_size", "compute_cost",
                  "compute_time", "memory_time"):
            if draw(bools):
                setattr(n, f, draw(int64s))
        if draw(bools):
            n.is_final = draw(bools)
        if draw(bools):
            n.inaccurate = draw(bools)
        n.control_input.extend(draw(st.lists(int32s, max_size=3)))
    for _ in range(draw(st.integers(0, 2))):
        c = into.cost.add()
        if draw(st.integers(0, 3)):
            c.cost = draw(st.one_of(st.floats(width=32), st.sampled_from(
                [math.inf, -math.inf, math.nan, 0.0, -0.0, 1.5, 3.4028234663852886e38])))
        if draw(bools):
            c.dimension = draw(names)
    return into


@st.composite
def graph_defs(draw, into):
    into.SetInParent()
    for _ in range(draw(st.integers(0, 3))):
        nd = into.node.add()
        if draw(st.integers(0, 4)):
            nd.name = draw(names)
        if draw(st.integers(0, 4)):
            nd.op = draw(st.one_of(st.sampled_from(["Const", "MatMul", "_Send", "NoOp"]), names))
        if draw(bools):
            nd.device = draw(devices)
        nd.input.extend(draw(st.lists(st.one_of(
            names, st.sampled_from(["x", "x:1", "^ctrl", "a/b:0", ""])), max_size=3)))
    return into


@st.composite
def run_metadata_messages(draw):
    m = tp.RunMetadata()
    if draw(st.integers(0, 5)):
        m.step_stats.SetInParent()
        draw(fill_step_stats(m.step_stats))
    if draw(bools):
        draw(cost_graphs(m.cost_graph))
    for _ in range(draw(st.integers(0, 2))):
        draw(graph_defs(m.partition_graphs.add()))
    for _ in range(draw(st.integers(0, 2))):
        fg = m.function_graphs.add()
        for _ in range(draw(st.integers(0, 2))):
            draw(graph_defs(fg.partition_graphs.add()))
        if draw(bools):
            draw(graph_defs(fg.pre_optimization_graph))
        if draw(bools):
            draw(graph_defs(fg.post_optimization_graph))
    if draw(st.integers(0, 2)) == 0:
        m.session_metadata.SetInParent()
        if draw(bools):
            m.session_metadata.name = draw(names)
        if draw(bools):
            m.session_metadata.version = draw(int64s)
    return m


def trace_messages():
    return st.one_of(step_stats_messages(), run_metadata_messages())


# ------------------------------------------------------------------------------------------
# Field ordering (shared by the text and wire renderers)
# ------------------------------------------------------------------------------------------
# tracecore numbers graphs "partition_graphs and then function_graphs", in file order: keep
# the relative order of these graph fields canonical so that the expected graph_index is clear.
_KEEP_ORDER = {
    "tensorflow.RunMetadata": {3, 4},
    "tensorflow.RunMetadata.FunctionGraphs": {1, 2, 3},
}


def _ordered(draw, msg, items, number_of, shuffle):
    """items: list of chunks (each tied to a field number, in canonical order). Returns them
    shuffled (if asked), keeping the relative order of the chunks of the same field and of the
    fields listed in _KEEP_ORDER."""
    if not shuffle or len(items) < 2:
        return items
    keep = _KEEP_ORDER.get(msg.DESCRIPTOR.full_name, set())
    keys = [("keep" if number_of(it) in keep else number_of(it)) for it in items]
    perm = draw(st.permutations(keys))
    queues: dict = {}
    for k, it in zip(keys, items, strict=True):
        queues.setdefault(k, []).append(it)
    return [queues[k].pop(0) for k in perm]


def _scalar_fields(desc):
    return [f for f in desc.fields if f.type != f.TYPE_MESSAGE]


def _is_map(fd):
    return (fd.type == fd.TYPE_MESSAGE and fd.message_type.GetOptions().map_entry)


# ------------------------------------------------------------------------------------------
# Text renderer
# ------------------------------------------------------------------------------------------
TEXT_FEATURES = frozenset({
    "reorder", "angle", "colon", "lists", "message_lists", "comments", "quotes", "escapes",
    "concat", "unicode_escapes", "enum_numbers", "int_bases", "bool_spellings", "separators",
    "defaults", "float_forms", "whitespace",
})

_NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x07": "\\a", "\x08": "\\b",
                  "\x0c": "\\f", "\x0b": "\\v"}


_COMMENT_TEXT = st.text(_chars.filter(lambda c: not (ord(c) < 0x20 or ord(c) == 0x7F)), max_size=8)


class _TextRenderer:
    def __init__(self, draw, features):
        self.draw = draw
        self.f = features
        # The whitespace between tokens comes from a Random seeded by one draw (replays
        # reproduce it): the same kinds of whitespace as a draw per token, at a fraction of the
        # engine's cost (whitespace is most of a rendering's choices). What is lost: hypothesis
        # neither biases nor shrinks the whitespace, and a structure changed while shrinking
        # shifts the whitespace that follows, so a failure that depends on whitespace shrinks
        # poorly (the failing text is still reported whole).
        self.rng = draw(st.randoms(use_true_random=True))

    # whitespace between tokens; `need` = at least one whitespace character is required
    def ws(self, need=True):
        if "whitespace" not in self.f:
            return " " if need else ""
        choice = self.rng.randrange(10)
        if choice == 0 and "comments" in self.f:
            return " #" + self.draw(_COMMENT_TEXT) + "\n"
        if choice == 1:
            return "\n"
        if choice == 2:
            return self.rng.choice(["\t", "  ", "\n\n  ", "\r\n", " \t "])
        if choice == 3 and not need:
            return ""
        return " "

    def string(self, value: str) -> str:
        draw = self.draw
        # tokens: ("raw", ch) is one character printed raw (escaped if it is the quote or
        # backslash); ("esc", s) is an already escaped piece.
        tokens = []
        for ch in value:
            o = ord(ch)
            control = o < 0x20 or o == 0x7F
            mode = draw(st.integers(0, 7)) if "escapes" in self.f else 0
            if mode == 4:
                tokens.extend(("esc", f"\\{b:03o}") for b in ch.encode("utf-8"))
            elif mode == 5:
                tokens.extend(("esc", f"\\x{b:02x}" if draw(st.booleans()) else f"\\x{b:02X}")
                              for b in ch.encode("utf-8"))
            elif mode == 6 and "unicode_escapes" in self.f and o > 0x7F:
                tokens.append(("esc", f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}"))
            elif mode == 7 and ch in "\"'\\":
                tokens.append(("esc", "\\" + ch))
            elif ch in _NAMED_ESCAPES:
                tokens.append(("esc", _NAMED_ESCAPES[ch]))
            elif control:
                tokens.extend(("esc", f"\\{b:03o}") for b in ch.encode("utf-8"))
            else:
                tokens.append(("raw", ch))
        # split into adjacent literals
        cuts = set()
        if "concat" in self.f and tokens and draw(st.integers(0, 3)) == 0:
            cuts = set(draw(st.lists(st.integers(0, len(tokens)), max_size=3)))
        pieces, start = [], 0
        for c in sorted(cuts | {len(tokens)}):
            pieces.append(tokens[start:c])
            start = c
        out = []
        for i, piece in enumerate(pieces):
            q = "'" if ("quotes" in self.f and draw(st.booleans())) else '"'
            body = []
            for kind, s in piece:
                if kind == "raw" and s in (q, "\\"):
                    body.append("\\" + s)
                else:
                    body.append(s)
            if i:
                out.append(self.ws(need=False))
            out.append(q + "".join(body) + q)
        return "".join(out)

    def integer(self, v: int) -> str:
        if "int_bases" in self.f:
            mode = self.draw(st.integers(0, 5))
            sign = "-" if v < 0 else ""
            if mode == 0:
                return sign + (f"0x{abs(v):x}")
            if mode == 1:
                return sign + (f"0X{abs(v):X}")
            if mode == 2 and v != 0:
                return sign + (f"0{abs(v):o}")
        return str(v)

    def scalar(self, fd, v) -> str:
        t = fd.type
        if t in (fd.TYPE_STRING,):
            return self.string(v)
        if t == fd.TYPE_BOOL:
            if "bool_spellings" in self.f:
                return self.draw(st.sampled_from(
                    ["true", "True", "t", "1"] if v else ["false", "False", "f", "0"]))
            return "true" if v else "false"
        if t == fd.TYPE_ENUM:
            ev = fd.enum_type.values_by_number.get(v)
            if ev is None or ("enum_numbers" in self.f and self.draw(st.booleans())):
                if "int_bases" in self.f and self.draw(st.booleans()):
                    return ("-" if v < 0 else "") + f"0x{abs(v):x}"  # no octal for enums
                return str(v)
            return ev.name
        if t in (fd.TYPE_FLOAT, fd.TYPE_DOUBLE):
            if math.isnan(v):
                return self.draw(st.sampled_from(["nan", "NaN"])) if "float_forms" in self.f \
                    else "nan"
            if math.isinf(v):
                forms = (
                    ["inf", "Infinity", "infinity", "INF"] if "float_forms" in self.f else ["inf"]
                )
                return ("-" if v < 0 else "") + self.draw(st.sampled_from(forms))
            if "float_forms" in self.f:
                mode = self.draw(st.integers(0, 3))
                if (
                    mode == 0
                    and v == int(v)
                    and abs(v) < 2**53
                    and not (v == 0 and math.copysign(1, v) < 0)
                ):
                    return str(int(v))
                if mode == 1:
                    return repr(v) + "f"
                if mode == 2:
                    return f"{v:.9e}"
            return repr(v)
        return self.integer(v)

    def open_close(self):
        if "angle" in self.f and self.draw(st.booleans()):
            return "<", ">"
        return "{", "}"

    def sep(self):
        if "separators" in self.f:
            return self.draw(st.sampled_from(["", "", "", ",", ";"]))
        return ""

    def message_body(self, msg) -> str:
        draw = self.draw
        items = []  # (field number, text)
        present = {fd.number for fd, _ in msg.ListFields()}
        for fd, value in msg.ListFields():
            if _is_map(fd):
                entries = list(value.items())
                for k, v in entries:
                    items.append((fd.number, self.map_entry(fd, k, v)))
            elif fd.type == fd.TYPE_MESSAGE:
                if fd.is_repeated:
                    items.extend((fd.number, t) for t in self.repeated_messages(fd, list(value)))
                else:
                    items.append((fd.number, self.message_field(fd, value)))
            elif fd.is_repeated:
                items.extend((fd.number, t) for t in self.repeated_scalars(fd, list(value)))
            else:
                items.append((fd.number, self.scalar_field(fd, value)))
        if "defaults" in self.f:
            for fd in _scalar_fields(msg.DESCRIPTOR):
                if fd.number in present or fd.is_repeated:
                    continue
                if draw(st.integers(0, 5)) == 0:
                    items.append((fd.number, self.scalar_field(fd, fd.default_value)))
        items = _ordered(draw, msg, items, lambda it: it[0], "reorder" in self.f)
        parts = []
        for _, text in items:
            parts.append(self.ws(need=True) + text + self.sep())
        return "".join(parts)

    def scalar_field(self, fd, v):
        return fd.name + self.ws(need=False) + ":" + self.ws(need=False) + self.scalar(fd, v)

    def message_field(self, fd, sub, name=None):
        o, c = self.open_close()
        colon = (":" + self.ws(need=False)) if ("colon" in self.f and self.draw(st.booleans())) \
            else ""
        return (name or fd.name) + self.ws(need=False) + colon + o + self.message_body(sub) + \
            self.ws(need=False) + c

    def map_entry(self, fd, k, v):
        entry_desc = fd.message_type
        kd, vd = entry_desc.fields_by_name["key"], entry_desc.fields_by_name["value"]
        parts = []
        if k != 0 or "defaults" not in self.f or self.draw(st.booleans()):
            parts.append(self.scalar_field(kd, k))
        if v != "" or "defaults" not in self.f or self.draw(st.booleans()):
            parts.append(self.scalar_field(vd, v))
        if "reorder" in self.f and self.draw(st.booleans()):
            parts.reverse()
        o, c = self.open_close()
        colon = ":" if ("colon" in self.f and self.draw(st.booleans())) else ""
        body = "".join(self.ws(need=True) + p for p in parts)
        text = fd.name + colon + self.ws(need=False) + o + body + self.ws(need=False) + c
        if "defaults" in self.f and self.draw(st.integers(0, 4)) == 0:
            # an earlier entry for the same key with another value: the later one wins
            other = self.draw(names)
            text = (f"{fd.name} {{ key: {k} value: {self.string(other)} }}"
                    + self.ws(need=True) + text)
        return text

    def repeated_messages(self, fd, subs):
        if "message_lists" in self.f and subs and self.draw(st.integers(0, 3)) == 0:
            inner = []
            for s in subs:
                o, c = self.open_close()
                inner.append(o + self.message_body(s) + self.ws(need=False) + c)
            colon = ":" if ("colon" in self.f and self.draw(st.booleans())) else ""
            return [fd.name + colon + self.ws(need=False) + "[" +
                    ("," + self.ws(need=False)).join(inner) + "]"]
        return [self.message_field(fd, s) for s in subs]

    def repeated_scalars(self, fd, values):
        out = []
        i = 0
        while i < len(values):
            if "lists" in self.f and self.draw(st.booleans()):
                n = self.draw(st.integers(1, len(values) - i))
                chunk = values[i:i + n]
                out.append(fd.name + self.ws(need=False) + ":" + self.ws(need=False) + "[" +
                           ("," + self.ws(need=False)).join(self.scalar(fd, v) for v in chunk) +
                           "]")
                i += n
            else:
                out.append(self.scalar_field(fd, values[i]))
                i += 1
        if "lists" in self.f and self.draw(st.integers(0, 7)) == 0:
            out.insert(self.draw(st.integers(0, len(out))), fd.name + ": []")
        return out


@st.composite
def text_renderings(draw, msg, features=TEXT_FEATURES):
    r = _TextRenderer(draw, features)
    return r.message_body(msg) + r.ws(need=False)


# ------------------------------------------------------------------------------------------
# Wire (binary) renderer
# ------------------------------------------------------------------------------------------
WIRE_FEATURES = frozenset({
    "reorder", "unpacked", "defaults", "duplicates", "overlong", "high_bits", "unknown",
    "wrong_wire_type", "split", "map_variants",
})

_VARINT_TYPES = {
    _descriptor.FieldDescriptor.TYPE_INT32, _descriptor.FieldDescriptor.TYPE_INT64,
    _descriptor.FieldDescriptor.TYPE_UINT32, _descriptor.FieldDescriptor.TYPE_UINT64,
    _descriptor.FieldDescriptor.TYPE_BOOL, _descriptor.FieldDescriptor.TYPE_ENUM,
}
_32BIT_VARINTS = {
    _descriptor.FieldDescriptor.TYPE_INT32, _descriptor.FieldDescriptor.TYPE_UINT32,
    _descriptor.FieldDescriptor.TYPE_ENUM,
}


def varint(n: int, pad: int = 0, max_len: int = 10) -> bytes:
    """Base-128 varint of n (two's complement for negatives); `pad` extra (overlong, but still
    valid) bytes are appended as long as the total stays within `max_len` bytes (10 for values;
    protobuf (upb) rejects length prefixes longer than 5 bytes)."""
    n &= UINT64_MAX
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            break
    pad = min(pad, max_len - len(out))
    if pad > 0:
        out[-1] |= 0x80
        out.extend([0x80] * (pad - 1))
        out.append(0x00)
    return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


class _WireRenderer:
    def __init__(self, draw, features):
        self.draw = draw
        self.f = features

    def maybe(self, feature, p=4):
        return feature in self.f and self.draw(st.integers(0, p - 1)) == 0

    def vint(self, n, max_len=10):
        pad = 0
        if self.maybe("overlong", 6):
            pad = self.draw(st.integers(1, 4))
        return varint(n, pad, max_len)

    def length(self, n):
        return self.vint(n, max_len=5)

    def scalar_payload(self, fd, v) -> tuple[int, bytes]:
        """(wire type, payload) of one scalar value."""
        t = fd.type
        if t in _VARINT_TYPES:
            n = int(v)
            if t in _32BIT_VARINTS and self.maybe("high_bits", 5):
                # garbage in the high 32 bits: protobuf keeps only the low 32 bits
                n = (n & 0xFFFFFFFF) | (self.draw(st.integers(1, 2**32 - 1)) << 32)
            elif t == fd.TYPE_BOOL and v and self.maybe("high_bits", 5):
                n = self.draw(st.sampled_from([2, 3, 255, 2**32, 2**63, UINT64_MAX]))
            return 0, self.vint(n)
        if t == fd.TYPE_FLOAT:
            return 5, struct.pack("<f", v)
        if t == fd.TYPE_DOUBLE:
            return 1, struct.pack("<d", v)
        if t in (fd.TYPE_STRING, fd.TYPE_BYTES):
            data = v.encode("utf-8") if isinstance(v, str) else v
            return 2, self.length(len(data)) + data
        raise AssertionError(fd)

    def ld(self, number, payload: bytes) -> bytes:
        return key(number, 2) + self.length(len(payload)) + payload

    def wrong_wire_chunk(self, fd) -> bytes:
        """A chunk for known field `fd` with a wire type protobuf will not accept for it."""
        accepted = set()
        if fd.type in _VARINT_TYPES:
            accepted.add(0)
        elif fd.type == fd.TYPE_FLOAT:
            accepted.add(5)
        elif fd.type == fd.TYPE_DOUBLE:
            accepted.add(1)
        else:
            accepted.add(2)
        if fd.is_repeated and fd.type in _VARINT_TYPES | {fd.TYPE_FLOAT,
                                                                          fd.TYPE_DOUBLE}:
            accepted.add(2)
        wt = self.draw(st.sampled_from([w for w in (0, 1, 2, 5) if w not in accepted]))
        return key(fd.number, wt) + self.unknown_payload(wt)

    def unknown_payload(self, wt) -> bytes:
        if wt == 0:
            return varint(self.draw(st.integers(0, UINT64_MAX)))
        if wt == 1:
            return self.draw(st.binary(min_size=8, max_size=8))
        if wt == 5:
            return self.draw(st.binary(min_size=4, max_size=4))
        data = self.draw(st.binary(max_size=12))
        return varint(len(data)) + data

    def unknown_chunk(self, desc) -> bytes:
        used = {f.number for f in desc.fields}
        number = self.draw(st.one_of(st.integers(1, 40), st.integers(1, 2**29 - 1)).filter(
            lambda n: n not in used and not (19000 <= n <= 19999)))
        wt = self.draw(st.sampled_from([0, 1, 2, 5]))
        return key(number, wt) + self.unknown_payload(wt)

    def message(self, msg, allow_defaults=True) -> bytes:
        draw = self.draw
        desc = msg.DESCRIPTOR
        is_entry = desc.GetOptions().map_entry
        chunks: list[tuple[int, bytes]] = []
        present = set()
        for fd, value in msg.ListFields():
            present.add(fd.number)
            if _is_map(fd):
                for k, v in list(value.items()):
                    chunks.extend((fd.number, c) for c in self.map_entry(fd, k, v))
            elif fd.type == fd.TYPE_MESSAGE:
                subs = list(value) if fd.is_repeated else [value]
                for sub in subs:
                    if not fd.is_repeated and self.maybe("split", 3):
                        for part in self.split(sub):
                            payload = self.message(part, allow_defaults=False)
                            chunks.append((fd.number, self.ld(fd.number, payload)))
                    else:
                        payload = self.message(sub, allow_defaults)
                        chunks.append((fd.number, self.ld(fd.number, payload)))
            elif fd.is_repeated:
                chunks.extend((fd.number, c) for c in self.repeated_scalars(fd, list(value)))
            else:
                chunks.extend((fd.number, c) for c in self.singular_scalar(fd, value))
        if not is_entry:
            for fd in desc.fields:
                if (allow_defaults and fd.number not in present and fd.type != fd.TYPE_MESSAGE
                        and not fd.is_repeated and self.maybe("defaults", 6)):
                    # an explicit default value (proto3 writers omit them; readers accept them)
                    wt, payload = self.scalar_payload(fd, fd.default_value)
                    chunks.append((fd.number, key(fd.number, wt) + payload))
                if self.maybe("wrong_wire_type", 16):
                    # known field number, unexpected wire type: skipped as an unknown field
                    chunks.append((fd.number, self.wrong_wire_chunk(fd)))
            for _ in range(draw(st.integers(0, 2)) if "unknown" in self.f else 0):
                if self.maybe("unknown", 3):
                    chunks.append((0, self.unknown_chunk(desc)))
        chunks = _ordered(draw, msg, chunks, lambda c: c[0], "reorder" in self.f)
        return b"".join(c for _, c in chunks)

    def split(self, sub) -> list:
        """Two messages whose merge (protobuf's semantics for a singular sub-message seen twice)
        is `sub`: set fields are divided between them, repeated fields element-wise, singular
        sub-messages recursively."""
        draw = self.draw
        a, b = type(sub)(), type(sub)()
        for fd, value in sub.ListFields():
            if _is_map(fd):
                for k, v in value.items():
                    getattr(a if draw(st.booleans()) else b, fd.name)[k] = v
            elif fd.is_repeated:
                n = draw(st.integers(0, len(value)))
                getattr(a, fd.name).extend(value[:n])
                getattr(b, fd.name).extend(value[n:])
            elif fd.type == fd.TYPE_MESSAGE:
                which = draw(st.integers(0, 2))
                if which == 0:
                    getattr(a, fd.name).CopyFrom(value)
                elif which == 1:
                    getattr(b, fd.name).CopyFrom(value)
                else:  # recursively: both halves get a part
                    pa_, pb_ = self.split(value)
                    getattr(a, fd.name).CopyFrom(pa_)
                    getattr(b, fd.name).CopyFrom(pb_)
            else:
                setattr(a if draw(st.booleans()) else b, fd.name, value)
        return [a, b]

    def singular_scalar(self, fd, v) -> list[bytes]:
        out = []
        if self.maybe("duplicates", 5):
            # an earlier occurrence with another value: the last one wins
            other = fd.default_value
            if fd.type in _VARINT_TYPES and fd.type != fd.TYPE_BOOL:
                other = self.draw(st.integers(-5, 5)) if fd.type in (
                    fd.TYPE_INT32, fd.TYPE_INT64, fd.TYPE_ENUM) else self.draw(st.integers(0, 5))
            elif fd.type == fd.TYPE_STRING:
                other = self.draw(names)
            elif fd.type == fd.TYPE_BOOL:
                other = not v
            wt, payload = self.scalar_payload(fd, other)
            out.append(key(fd.number, wt) + payload)
        wt, payload = self.scalar_payload(fd, v)
        out.append(key(fd.number, wt) + payload)
        return out

    def repeated_scalars(self, fd, values) -> list[bytes]:
        packable = fd.type in _VARINT_TYPES | {fd.TYPE_FLOAT, fd.TYPE_DOUBLE}
        if not packable:
            out = []
            for v in values:
                wt, payload = self.scalar_payload(fd, v)
                out.append(key(fd.number, wt) + payload)
            return out
        out = []
        i = 0
        while i < len(values):
            if "unpacked" in self.f and self.draw(st.booleans()):
                wt, payload = self.scalar_payload(fd, values[i])
                out.append(key(fd.number, wt) + payload)
                i += 1
            else:
                n = len(values) - i
                if "unpacked" in self.f:
                    n = self.draw(st.integers(1, n))
                body = b"".join(self.scalar_payload(fd, v)[1] for v in values[i:i + n])
                out.append(self.ld(fd.number, body))
                i += n
        if "unpacked" in self.f and self.maybe("unpacked", 8):
            out.insert(self.draw(st.integers(0, len(out))), self.ld(fd.number, b""))  # empty pack
        return out

    def map_entry(self, fd, k, v) -> list[bytes]:
        vd = fd.message_type.fields_by_name["value"]
        parts = []
        if k != 0 or not self.maybe("map_variants", 2):
            parts.append(key(1, 0) + self.vint(k))
        if v != "" or not self.maybe("map_variants", 2):
            parts.append(key(2, 2) + self.scalar_payload(vd, v)[1])
        if self.maybe("map_variants", 2):
            parts.reverse()
        out = []
        if self.maybe("map_variants", 5):
            other = self.draw(names).encode("utf-8")
            out.append(self.ld(fd.number, key(1, 0) + varint(k) + key(2, 2) + varint(len(other)) +
                               other))
        out.append(self.ld(fd.number, b"".join(parts)))
        return out


@st.composite
def wire_encodings(draw, msg, features=WIRE_FEATURES):
    return _WireRenderer(draw, features).message(msg)
