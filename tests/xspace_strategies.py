"""Hypothesis strategies for XSpace messages and for their many valid wire encodings.

* ``xspace_messages()``: random ``xspace_proto.XSpace`` messages covering every field: repeated
  planes (equal ids, host/device/metadata/Task Environment names), lines with ids, display ids
  and names, epoch or shifted timestamps (int64 extremes rarely); events with ``offset_ps``, with
  ``num_occurrences`` (0 included) or neither, metadata ids present in the plane's map or not;
  stats of every value kind (double incl. NaN/inf/-0, uint64/int64 edges, UTF-8 strings, bytes,
  ref values to present / absent / negative-keyed stat metadata, gzip-compressed strings, no
  value); event metadata with display names, opaque bytes, stats (inherited, some overridden
  by the event) and child ids; TensorFlow op names, XLA events (hlo_op / hlo_module) and memory
  events (MemoryAllocation / MemoryDeallocation with allocator, bytes, addr, shape, ...).
* ``wire_encodings(msg)``: a random but valid encoding of ``msg`` that protobuf reads back
  equal to it: shuffled field order (metadata maps before, between or after the lines), explicit
  default scalars, repeated singular scalars (last wins), an earlier member of a oneof (the last
  wins), decoy map entries (an earlier entry of the same key with another value: the last
  wins; an entry holding an unknown field, anywhere: not an entry), map entries with key and
  value swapped or omitted when default, a value split in two value fields (merged), packed,
  unpacked and mixed child ids, overlong varints and length prefixes (up to 5 bytes), unknown
  fields of every wire type (groups included) at every level, known field numbers with another
  wire type (unknown).

As in tests/strategies.py, tests compute their expectations from protobuf's parse of the
produced bytes, and check that the parse equals the original message.
"""

from __future__ import annotations

import gzip
import math
import random
import struct

import hypothesis.strategies as st
from google.protobuf.descriptor import FieldDescriptor as _FD

import xspace_proto as xp
from strategies import INT64_MAX, INT64_MIN, UINT64_MAX, int64s, key, names, uint64s, varint

# ------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------
doubles = st.one_of(
    st.floats(allow_nan=False, width=64),
    st.sampled_from([0.0, -0.0, 0.5, 1e-300, math.inf, -math.inf, math.nan, 0.333333]),
)
plane_names = st.one_of(
    st.sampled_from(["/host:CPU", "/device:GPU:0", "/device:TPU:0", "/host:metadata",
                     "Task Environment", "/device:GPU:1", ""]),
    names,
)
line_names = st.one_of(
    st.sampled_from(["python", "tf_Compute/123", "tf_XLAExecute/-5", "XLA Ops", "Steps",
                     "Stream #13(MemcpyH2D)", "XLA Modules", "Framework Ops", ""]),
    names,
)
event_names = st.one_of(
    st.sampled_from([
        "StatefulPartitionedCall/sequential/dense/MatMul:MatMul", "range:Range", "a::b:C",
        "Iterator::Root::Prefetch", "ThreadpoolListener::Record", "$profiler.py:553 __init__",
        "MemoryAllocation", "MemoryDeallocation", "train", "dot.1", "add_tanh_fusion",
        "scope/x:_MklMatMul", ":Leading", "trailing:", "ExecutorState::Process", "",
    ]),
    names,
)
stat_names = st.one_of(
    st.sampled_from([
        "group_id", "step_num", "iter_num", "hlo_op", "hlo_category", "hlo_module",
        "allocator_name", "bytes_allocated", "bytes_reserved", "bytes_available",
        "peak_bytes_in_use", "fragmentation", "requested_bytes", "allocation_bytes", "addr",
        "data_type", "shape", "region_type", "tf_op", "_r", "_src", "mklcpu", "[128,1024]",
        "output", "dot.1", "",
    ]),
    names,
)
# Metadata ids: writers number them 1, 2, 3...; any int64 is a valid map key.
metadata_ids = st.one_of(st.integers(0, 12), st.integers(-3, 3),
                         st.sampled_from([INT64_MAX, INT64_MIN, 2**40, -(2**40)]))
timestamps_ns = st.one_of(st.integers(0, 10**6),
                          st.integers(1_700_000_000 * 10**9, 1_900_000_000 * 10**9),
                          st.integers(-(10**6), 10**12))
offsets_ps = st.one_of(st.integers(0, 10**12), st.integers(-(10**6), 10**6),
                       st.integers(0, 10**9).map(lambda v: v * 1000))
extreme_int64 = st.sampled_from([INT64_MAX, INT64_MIN, INT64_MAX // 1000, INT64_MIN // 1000 + 1])


def _rarely(common, rare):
    return st.integers(0, 19).flatmap(lambda i: rare if i == 0 else common)


@st.composite
def stat_messages(draw, stat_ids, compressed_ok=True):
    """An XStat with any value kind; `stat_ids` the plane's stat metadata ids (refs)."""
    s = xp.XStat(metadata_id=draw(st.one_of(st.sampled_from(stat_ids), metadata_ids))
                 if stat_ids else draw(metadata_ids))
    kind = draw(st.sampled_from(["double", "uint64", "int64", "str", "bytes", "ref",
                                 "compressed", "none"]))
    if kind == "double":
        s.double_value = draw(doubles)
    elif kind == "uint64":
        s.uint64_value = draw(uint64s)
    elif kind == "int64":
        s.int64_value = draw(int64s)
    elif kind == "str":
        s.str_value = draw(names)
    elif kind == "bytes":
        s.bytes_value = draw(st.binary(max_size=12))
    elif kind == "ref":
        choices = [st.sampled_from([UINT64_MAX, 2**63, 0, 999])]
        if stat_ids:
            choices.append(st.sampled_from(stat_ids).map(lambda k: k % 2**64))
        s.ref_value = draw(st.one_of(*choices))
    elif kind == "compressed":
        if compressed_ok or draw(st.integers(0, 3)):
            s.compressed_str_value = gzip.compress(draw(names).encode(), mtime=0)
        else:
            s.compressed_str_value = draw(st.binary(max_size=8))
    return s


@st.composite
def memory_stats(draw, by_name):
    """The stats of a memory event, through the plane's stat metadata `by_name`."""
    out = []
    for name, value in [
        ("allocator_name", draw(st.sampled_from(["mklcpu", "GPU_0_bfc", ""]))),
        ("bytes_allocated", draw(st.integers(0, 2**40))),
        ("bytes_reserved", draw(st.integers(0, 2**20))),
        ("bytes_available", draw(st.integers(0, 2**40))),
        ("peak_bytes_in_use", draw(st.integers(0, 2**40))),
        ("requested_bytes", draw(st.integers(0, 2**30))),
        ("allocation_bytes", draw(st.integers(0, 2**30))),
        ("addr", draw(st.sampled_from([140646788542528, 140646789066816, 0, -1]))),
        ("data_type", draw(st.integers(0, 30))),
        ("shape", draw(st.sampled_from(["[128,1024]", "[]", "[5]", "[?]"]))),
        ("region_type", "output"),
        ("fragmentation", draw(st.sampled_from([0, 0.5]))),
    ]:
        if name not in by_name or draw(st.integers(0, 5)) == 0:
            continue
        s = xp.XStat(metadata_id=by_name[name])
        if isinstance(value, str):
            s.str_value = value
        elif isinstance(value, float):
            s.double_value = value
        else:
            s.int64_value = value
        out.append(s)
    return out


@st.composite
def planes(draw, compressed_ok=True):
    plane = xp.XPlane(id=draw(st.sampled_from([0, 0, 1, -1, INT64_MAX])), name=draw(plane_names))
    # stat metadata: the well-known names often, keys unique (a dict)
    n_stats = draw(st.integers(0, 8))
    keys = draw(st.lists(metadata_ids, min_size=n_stats, max_size=n_stats, unique=True))
    by_name: dict[str, int] = {}
    for k in keys:
        m = plane.stat_metadata[k]
        if draw(st.integers(0, 3)):
            m.id = k
        m.name = draw(stat_names)
        if draw(st.integers(0, 4)) == 0:
            m.description = draw(names)
        by_name.setdefault(m.name, k)
    stat_ids = sorted(plane.stat_metadata)
    stats = st.lists(stat_messages(stat_ids, compressed_ok), max_size=3)
    # event metadata
    n_events_md = draw(st.integers(0, 6))
    event_ids = draw(st.lists(metadata_ids, min_size=n_events_md, max_size=n_events_md,
                              unique=True))
    for k in event_ids:
        m = plane.event_metadata[k]
        if draw(st.integers(0, 3)):
            m.id = k
        m.name = draw(event_names)
        if draw(st.booleans()):
            m.display_name = draw(names)
        if draw(st.integers(0, 4)) == 0:
            m.metadata = draw(st.binary(max_size=10))
        if draw(st.integers(0, 3)) == 0:
            m.stats.extend(draw(stats))
        if draw(st.integers(0, 4)) == 0:
            m.child_id.extend(draw(st.lists(int64s, max_size=4)))
    plane.stats.extend(draw(st.lists(stat_messages(stat_ids, compressed_ok), max_size=2)))
    for _ in range(draw(st.integers(0, 3))):
        line = plane.lines.add()
        line.id = draw(st.one_of(st.integers(-3, 3), int64s))
        if draw(st.integers(0, 3)) == 0:
            line.display_id = draw(int64s)
        line.name = draw(line_names)
        if draw(st.booleans()):
            line.display_name = draw(names)
        line.timestamp_ns = draw(_rarely(timestamps_ns, extreme_int64))
        if draw(st.integers(0, 3)) == 0:
            line.duration_ps = draw(int64s)
        for _ in range(draw(st.integers(0, 5))):
            ev = line.events.add()
            ev.metadata_id = draw(st.one_of(st.sampled_from(event_ids), metadata_ids)
                                  if event_ids else metadata_ids)
            data = draw(st.sampled_from(["offset", "offset", "offset", "aggregate", "none"]))
            if data == "offset":
                ev.offset_ps = draw(_rarely(offsets_ps, extreme_int64))
            elif data == "aggregate":
                ev.num_occurrences = draw(st.integers(0, 1000))
            ev.duration_ps = draw(_rarely(st.integers(0, 10**9), extreme_int64))
            md = plane.event_metadata.get(ev.metadata_id)
            if md is not None and md.name in ("MemoryAllocation", "MemoryDeallocation"):
                ev.stats.extend(draw(memory_stats(by_name)))
            else:
                ev.stats.extend(draw(stats))
            if md is not None and md.stats and draw(st.booleans()):
                # override an inherited stat
                ev.stats.append(xp.XStat(metadata_id=md.stats[0].metadata_id, int64_value=7))
    return plane


@st.composite
def xspace_messages(draw, max_planes=3, compressed_ok=True):
    space = xp.XSpace()
    space.planes.extend(draw(st.lists(planes(compressed_ok), max_size=max_planes)))
    space.hostnames.extend(draw(st.lists(st.sampled_from(["vm", "a100-node", ""]), max_size=2)))
    space.errors.extend(draw(st.lists(names, max_size=1)))
    space.warnings.extend(draw(st.lists(names, max_size=1)))
    return space


# ------------------------------------------------------------------------------------------
# Wire encodings
# ------------------------------------------------------------------------------------------
_VARINT = {_FD.TYPE_INT64, _FD.TYPE_UINT64}


class _Wire:
    """One encoding of a message; every choice drawn from `draw`."""

    def __init__(self, draw):
        self.draw = draw

    def maybe(self, one_in: int) -> bool:
        return self.draw(st.integers(0, one_in - 1)) == 0

    def vint(self, n: int, max_len: int = 10) -> bytes:
        pad = self.draw(st.integers(1, 4)) if self.maybe(8) else 0
        return varint(n, pad, max_len)

    def key(self, number: int, wire_type: int) -> bytes:
        if self.maybe(12):  # an overlong key, still within protobuf's 5 bytes
            return varint((number << 3) | wire_type, 1, 5)
        return key(number, wire_type)

    def ld(self, number: int, payload: bytes) -> bytes:
        return self.key(number, 2) + self.vint(len(payload), max_len=5) + payload

    def scalar(self, fd, v) -> bytes:
        if fd.type in _VARINT:
            return self.key(fd.number, 0) + self.vint(int(v))
        if fd.type == _FD.TYPE_DOUBLE:
            return self.key(fd.number, 1) + struct.pack("<d", v)
        data = v.encode() if isinstance(v, str) else v
        return self.ld(fd.number, data)

    def unknown(self, used: set[int]) -> bytes:
        number = self.draw(st.one_of(st.integers(1, 40), st.integers(1, 2**29 - 1)).filter(
            lambda n: n not in used))
        wt = self.draw(st.sampled_from([0, 1, 2, 5, 3]))
        if wt == 0:
            body = varint(self.draw(st.integers(0, UINT64_MAX)))
        elif wt == 1:
            body = self.draw(st.binary(min_size=8, max_size=8))
        elif wt == 5:
            body = self.draw(st.binary(min_size=4, max_size=4))
        elif wt == 2:
            data = self.draw(st.binary(max_size=8))
            body = varint(len(data)) + data
        else:  # a group: fields inside, then its end marker
            body = key(1, 0) + varint(7) + key(number, 4)
        return key(number, wt) + body

    def wrong_wire(self, fd) -> bytes:
        """A known field number with a wire type protobuf does not accept for it: unknown."""
        ok = {0} if fd.type in _VARINT else {1} if fd.type == _FD.TYPE_DOUBLE else {2}
        if fd.is_repeated and fd.type in _VARINT:
            ok.add(2)  # packed
        wt = self.draw(st.sampled_from([w for w in (0, 1, 2, 5) if w not in ok]))
        body = {0: varint(3), 1: bytes(8), 2: varint(1) + b"x", 5: bytes(4)}[wt]
        return key(fd.number, wt) + body

    def message(self, msg) -> bytes:
        desc = msg.DESCRIPTOR
        chunks: list[tuple[object, bytes]] = []  # (ordering group, bytes)
        present = {fd.number for fd, _ in msg.ListFields()}
        for fd, value in msg.ListFields():
            oneof = fd.containing_oneof
            group: object = ("oneof", oneof.name) if oneof is not None else fd.number
            if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
                for k, v in value.items():
                    chunks.extend((fd.number, c) for c in self.map_entry(fd, k, v))
            elif fd.message_type is not None:
                chunks.extend((fd.number, self.ld(fd.number, self.message(sub))) for sub in value)
            elif fd.is_repeated:
                chunks.extend((fd.number, c) for c in self.repeated(fd, list(value)))
            else:
                if oneof is not None and self.maybe(4):
                    # an earlier member of the same oneof: the last one set wins
                    other = self.draw(st.sampled_from([f for f in oneof.fields if f is not fd]))
                    chunks.append((group, self.scalar(other, self.default_for(other))))
                elif oneof is None and self.maybe(6):
                    chunks.append((group, self.scalar(fd, self.default_for(fd))))  # last wins
                chunks.append((group, self.scalar(fd, value)))
        for fd in desc.fields:
            if (fd.number not in present and fd.containing_oneof is None and not fd.is_repeated
                    and fd.message_type is None and self.maybe(6)):
                chunks.append((fd.number, self.scalar(fd, fd.default_value)))  # explicit default
            if self.maybe(24):
                chunks.append((fd.number, self.wrong_wire(fd)))
        if not desc.GetOptions().map_entry:
            used = {f.number for f in desc.fields}
            chunks += [(0, self.unknown(used)) for _ in range(self.draw(st.integers(0, 1)))
                       if self.maybe(3)]
        return b"".join(self.ordered(chunks))

    def default_for(self, fd):
        if fd.type in _VARINT:
            return self.draw(st.integers(0, 5))
        if fd.type == _FD.TYPE_DOUBLE:
            return 1.5
        return "" if fd.type == _FD.TYPE_STRING else b"\x00"

    def ordered(self, chunks: list[tuple[object, bytes]]) -> list[bytes]:
        """The chunks shuffled, keeping the order of those of one group (a field, a oneof)."""
        if len(chunks) < 2 or self.maybe(3):
            return [c for _, c in chunks]
        groups = [g for g, _ in chunks]
        queues: dict[object, list[bytes]] = {}
        for g, c in chunks:
            queues.setdefault(g, []).append(c)
        return [queues[g].pop(0) for g in self.draw(st.permutations(groups))]

    def repeated(self, fd, values: list) -> list[bytes]:
        if fd.type not in _VARINT:
            return [self.scalar(fd, v) for v in values]
        out, i = [], 0
        while i < len(values):  # child_id: packed runs and single values, mixed
            if self.draw(st.booleans()):
                out.append(self.scalar(fd, values[i]))
                i += 1
            else:
                n = self.draw(st.integers(1, len(values) - i))
                out.append(self.ld(fd.number, b"".join(varint(v) for v in values[i:i + n])))
                i += n
        if self.maybe(8):
            out.insert(self.draw(st.integers(0, len(out))), self.ld(fd.number, b""))
        return out

    def map_entry(self, fd, k: int, v) -> list[bytes]:
        out = []
        if self.maybe(5):  # an earlier entry of the same key: replaced whole by the last
            decoy = type(v)(name="decoy")
            entry = key(1, 0) + varint(k) + self.ld(2, decoy.SerializeToString())
            out.append(self.ld(fd.number, entry))
        key_part = [self.key(1, 0) + self.vint(k)] if k != 0 or not self.maybe(2) else []
        value = self.message(v)
        value_parts = []
        if value and self.maybe(5):
            # two value fields, merged: the value's fields cut in two at a field boundary
            cut = self.draw(st.sampled_from(_field_bounds(value)))
            value_parts = [self.ld(2, value[:cut]), self.ld(2, value[cut:])]
        elif value or not self.maybe(2):
            value_parts = [self.ld(2, value)]
        # the key after the value(s) sometimes; the value parts keep their order (merged)
        parts = value_parts + key_part if self.maybe(3) else key_part + value_parts
        out.append(self.ld(fd.number, b"".join(parts)))
        if self.maybe(6):  # an entry with an unknown field: an unknown field, not an entry
            dropped = key(1, 0) + varint(k) + self.ld(2, b"") + key(9, 0) + varint(1)
            out.insert(self.draw(st.integers(0, len(out))), self.ld(fd.number, dropped))
        return out


def _field_bounds(data: bytes) -> list[int]:
    """Offsets of the field boundaries of an encoded message (0 and len included)."""
    bounds, p = [0], 0
    while p < len(data):
        k, p = _read_varint(data, p)
        wt = k & 7
        if wt == 0:
            _, p = _read_varint(data, p)
        elif wt == 1:
            p += 8
        elif wt == 5:
            p += 4
        elif wt == 2:
            n, p = _read_varint(data, p)
            p += n
        else:  # a group: to its end marker
            depth = 1
            while depth:
                k2, p = _read_varint(data, p)
                if k2 & 7 == 3:
                    depth += 1
                elif k2 & 7 == 4:
                    depth -= 1
                elif k2 & 7 == 0:
                    _, p = _read_varint(data, p)
                elif k2 & 7 == 1:
                    p += 8
                elif k2 & 7 == 5:
                    p += 4
                else:
                    n, p = _read_varint(data, p)
                    p += n
        bounds.append(p)
    return bounds


def _read_varint(data: bytes, p: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = data[p]
        p += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return v & UINT64_MAX, p


@st.composite
def wire_encodings(draw, msg) -> bytes:
    return _Wire(draw).message(msg)


__all__ = ["memory_stats", "planes", "stat_messages", "wire_encodings", "xspace_messages"]


# ------------------------------------------------------------------------------------------
# Mutations
# ------------------------------------------------------------------------------------------
def mutate(rng: random.Random, data: bytes) -> bytes:
    """1 to 4 random edits of ``data``: a bit flipped, a byte set to a value that means
    something on the wire, the tail cut, bytes spliced in from elsewhere, bytes deleted."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        if not b:
            break
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice([0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x22, 0x08, 0x10])
        elif op == 2:
            del b[i:]
        elif op == 3:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 16)]
        else:
            del b[i:i + rng.randint(1, 8)]
    return bytes(b)
