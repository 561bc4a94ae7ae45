"""Names and scopes: what a TensorFlow node name says about the op.

TensorFlow node names are ``/``-separated paths (``tower_0/v/cg/conv3/conv2d/Conv2D``). This
module derives, from the name alone, which forward op a gradient node differentiates, which phase
of a training step a node belongs to, its scope at a given depth and its tower; and it writes the
per-node shape listing. Everything is computed once per *distinct* name (the dictionary of the
``node_name`` column) with pyarrow string kernels and then gathered to the rows through the
dictionary indices, so the cost is O(distinct names) + O(rows) vectorised.

The rules (also in ``docs/names.md``):

**Normalisation.** Records of GPU streams and copies carry names that are not node names:
``name:Op`` (a kernel), ``name:Op:MEMCPYHtoD`` and ``edge_<N>_name:MEMCPYDtoH`` (a copy of
``name``'s output). The *normalised name* drops a leading ``edge_<digits>_`` and everything from
the first ``:`` (node names never contain ``:``). Scopes, towers, ``forward_scope`` and ``phase``
all use the normalised name, so GPU time joins its executor node.

**Core name.** For ``forward_scope`` and ``phase`` the leading components added by Grappler and
function inlining are also dropped: any run of ``ConstantFolding/``, ``ArithmeticOptimizer/``,
``LayoutOptimizer/``, ``DependencyOptimizer/`` and ``Func/`` at the start
(``ConstantFolding/gradients/conv1/Conv2D_grad/ShapeN-matshapes-1`` is a gradient node).

**forward_scope** (null unless the node is a gradient node whose forward op can be named):

* TF1 (``tf.gradients``): the name has a component ``gradients`` or ``gradients_<N>`` (the name
  scope ``tf.gradients`` opens, anywhere: ``Train/Model/gradients/...``,
  ``tower_0/v/gradients/...``, ``gradients/...``). The components after the *first* such
  component, up to the first component ending in ``_grad``, with that ``_grad`` removed, are the
  forward op's full name:
  ``Train/Model/gradients/Train/Model/RNN/.../LSTMBlockCell_19_grad/LSTMBlockCellGrad`` ->
  ``Train/Model/RNN/.../LSTMBlockCell_19``; ``tower_0/v/gradients/Cast_grad/Cast`` -> ``Cast``.
  The *first* ``_grad`` component is the right one because gradient functions may create their own
  ``*_grad`` ops (``gradients/cond/Merge_grad/cond_grad`` -> ``cond/Merge``). Gradients of gradients
  nest: between the ``gradients`` component and the closing ``_grad`` every further
  ``gradients*`` component opens one level that one ``_grad`` component closes
  (``gradients_1/gradients/x_grad/Mul_grad/Mul`` -> ``gradients/x_grad/Mul``). A gradient node with
  no ``_grad`` component (``gradients/AddN``, ``gradients/zeros_like_3``, ``gradients/Fill``: the
  accumulation and seeding ops of ``tf.gradients``) is backward with a null ``forward_scope``.
* TF2 (``tf.GradientTape``): the core name starts with ``gradient_tape/``; TensorFlow creates the
  gradient ops of a forward op inside ``gradient_tape/<name scope of the forward op>/``. The
  candidate is the path after ``gradient_tape/`` without its last component (the gradient op's own
  name): ``gradient_tape/resnet50/conv1_conv/Conv2D/Conv2DBackpropFilter`` ->
  ``resnet50/conv1_conv/Conv2D``. Helper ops of a gradient function sit one level deeper
  (``gradient_tape/resnet50/pool1_pad/Reshape/shape``), so the candidate is then shortened to its
  longest prefix (whole components) that is the name of, or a scope containing, a *forward* node
  of the same table (``resnet50/pool1_pad``); if no prefix is, the candidate stays. A gradient of
  an op at the root scope (``gradient_tape/Reshape``) has a null ``forward_scope``.

**phase** (first rule that matches, on the core name):

1. ``"other"``: an empty name; a name whose first component starts with ``_`` (TensorFlow's
   internal nodes: ``_SOURCE``, ``_SINK``, ``_arg_*``, ``_retval_*``, ``_send_*``, ``_recv_*``,
   also ``edge_*`` copies of them); ``HorovodBroadcast*`` (start-up variable broadcast).
2. ``"backward"``: a TF1 gradient name (a ``gradients`` / ``gradients_<N>`` component), a TF2
   gradient name (``gradient_tape/...``), or gradient communication: a component containing
   ``allreduce`` (any case: Horovod's ``DistributedGradientTape_Allreduce/...``,
   ``DistributedOptimizer_Allreduce/...``).
3. ``"optimizer"``: a component that is an optimizer's name scope -- ``SGD``, ``GradientDescent``,
   ``Momentum``, ``Adam``, ``AdamW``, ``Adamax``, ``Nadam``, ``RMSProp``, ``Adagrad``,
   ``AdagradDA``, ``Adadelta``, ``Ftrl``, ``ProximalAdagrad``, ``ProximalGradientDescent``,
   ``LAMB``, ``Lamb``, ``LARS``, ``Lars``, ``LARSOptimizer`` (each optionally ``_<N>``); a component
   containing ``apply_gradient`` (``apply_gradients``, ``append_apply_gradient_ops``); a component
   starting with ``update_`` (TF1 optimizers' per-variable ``update_<var>`` scopes); gradient
   clipping (``clip_by_global_norm``, ``global_norm`` components); the step counter
   (``inc_global_step``); or a last component that is an ``Apply*`` op's default name
   (``ApplyAdam``, ``ResourceApplyGradientDescent``, ``SparseApplyMomentum``,
   ``ResourceSparseApplyAdagrad``..., optionally ``_<N>``).
4. ``"forward"``: any other name with at least one ``/`` (model code lives in name scopes;
   variables and their ``/read`` identities count as forward).
5. ``"other"``: what remains -- top-level names without a scope (``global_step``, ``Cast_1``,
   ``AddN_3``, Grappler's ``PermConstNHWCToNCHW-LayoutOptimizer``), which the name cannot attribute.

**Scopes** (``Trace.scopes(depth, by="events")``): an event's key is its normalised name
(``by="forward_scope"``: its ``forward_scope`` when not null, else its normalised name, which
charges gradient time to the forward layer); its scope is the first ``depth`` components of the
key (the whole key when it has fewer). Every event is in exactly one row, including the
duplicate records of ``stream:all`` and ``memcpy`` blocks. ``busy_ns`` is the length of the union
of the group's ``[start_ns, end_ns)`` intervals (end clamped to start when it is before it);
``bytes`` is the sum of ``requested_bytes`` of the tensors the group's events produced.

**Towers** (``Trace.towers()``): an event's tower is the first component of its normalised name
matching ``tower_<N>`` or ``replica_<N>`` (anywhere in the path, so
``ConstantFolding/tower_0/...`` belongs to ``tower_0``); events without one are in no row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._arrow import array, scalar, to_numpy
from .intervals import group_stats, grouped_sum

if TYPE_CHECKING:
    from .trace import Trace

PHASES = ("forward", "backward", "optimizer", "other")
_FORWARD, _BACKWARD, _OPTIMIZER, _OTHER = range(4)
_DICT_TYPE = pa.dictionary(pa.int32(), pa.string())
_SLASH = scalar("/", pa.string())  # (a plain "/" would go through pa.scalar, which imports pandas)

# -- the rules as regular expressions (RE2 syntax, shared by pyarrow and Python's re) ----------
_EDGE_PREFIX = r"^edge_\d+_"
_OP_SUFFIX = r":.*"
_GRAPPLER_PREFIX = (
    r"^(?:(?:ConstantFolding|ArithmeticOptimizer|LayoutOptimizer|DependencyOptimizer|Func)/)+"
)
_OTHER_RE = r"^(?:$|_|HorovodBroadcast)"
_TF1_GRAD_RE = r"(?:^|/)gradients(?:_\d+)?(?:/|$)"
_TF1_HEAD_RE = r"^(?:[^/]*/)*?gradients(?:_\d+)?/"  # up to the first gradients component
_TF1_TAIL_RE = r"([^/])_grad(?:/|$)"  # the end of the first *_grad component
_TF2_PREFIX = "gradient_tape/"
_ALLREDUCE_RE = r"(?i)(?:^|/)[^/]*allreduce[^/]*(?:/|$)"
_OPTIMIZER_NAMES = (
    "SGD|GradientDescent|Momentum|Adam|AdamW|Adamax|Nadam|RMSProp|Adagrad|AdagradDA|Adadelta|"
    "Ftrl|ProximalAdagrad|ProximalGradientDescent|LAMB|Lamb|LARS|Lars|LARSOptimizer"
)
_OPTIMIZER_RE = (
    r"(?:^|/)(?:(?:" + _OPTIMIZER_NAMES + r")(?:_\d+)?|[^/]*apply_gradient[^/]*|update_[^/]*"
    r"|clip_by_global_norm|global_norm|inc_global_step)(?:/|$)"
    r"|(?:^|/)(?:Resource)?(?:Sparse)?Apply[A-Z][A-Za-z0-9]*(?:_\d+)?$"
)
_TOWER_RE = r"(?:^|/)(?P<t>(?:tower|replica)_\d+)(?:/|$)"

_re_edge = re.compile(_EDGE_PREFIX)
_re_grappler = re.compile(_GRAPPLER_PREFIX)
_re_other = re.compile(_OTHER_RE)
_re_tf1 = re.compile(_TF1_GRAD_RE)
_re_gradients_component = re.compile(r"^gradients(?:_\d+)?$")
_re_allreduce = re.compile(_ALLREDUCE_RE)
_re_optimizer = re.compile(_OPTIMIZER_RE)
_re_tower = re.compile(_TOWER_RE)


# -- per-name reference implementation ----------------------------------------------------------
def normalize_name(name: str) -> str:
    """The node a record belongs to: ``edge_<N>_`` prefix and ``:Op...`` suffix removed."""
    name = _re_edge.sub("", name, count=1)
    colon = name.find(":")
    return name if colon < 0 else name[:colon]


def _core_name(name: str) -> str:
    return _re_grappler.sub("", normalize_name(name), count=1)


def _tf1_forward(core: str) -> str | None:
    parts = core.split("/")
    for i, part in enumerate(parts):
        if _re_gradients_component.match(part):
            depth = 0
            for j in range(i + 1, len(parts)):
                p = parts[j]
                if _re_gradients_component.match(p):
                    depth += 1
                elif p.endswith("_grad") and len(p) > 5:
                    if depth == 0:
                        return "/".join(parts[i + 1 : j] + [p[:-5]])
                    depth -= 1
            return None
    return None


def _phase_of_core(core: str) -> int:
    if _re_other.match(core):
        return _OTHER
    if _re_tf1.search(core) or core.startswith(_TF2_PREFIX) or _re_allreduce.search(core):
        return _BACKWARD
    if _re_optimizer.search(core):
        return _OPTIMIZER
    return _FORWARD if "/" in core else _OTHER


def classify_name(name: str, forward_scopes: set[str] | None = None) -> tuple[str | None, str]:
    """``(forward_scope, phase)`` of one node name, by the rules in the module docstring.

    ``forward_scopes`` is the set of names and scope prefixes of the forward nodes used to
    shorten a TF2 candidate (:func:`forward_prefixes`); without it the candidate is returned.
    """
    core = _core_name(name)
    phase = _phase_of_core(core)
    forward: str | None = None
    if phase == _BACKWARD:
        if core.startswith(_TF2_PREFIX):
            rest = core[len(_TF2_PREFIX) :]
            if "/" in rest:
                forward = rest.rsplit("/", 1)[0]
                if forward_scopes is not None:
                    parts = forward.split("/")
                    for k in range(len(parts), 0, -1):
                        prefix = "/".join(parts[:k])
                        if prefix in forward_scopes:
                            forward = prefix
                            break
        elif _re_tf1.search(core):
            forward = _tf1_forward(core)
    return forward, PHASES[phase]


def forward_prefixes(names: Iterable[str]) -> set[str]:
    """Every whole-component prefix of the core names of the forward-phase ``names``."""
    out: set[str] = set()
    for name in names:
        core = _core_name(name)
        if _phase_of_core(core) != _FORWARD:
            continue
        parts = core.split("/")
        for k in range(1, len(parts) + 1):
            out.add("/".join(parts[:k]))
    return out


# -- vectorised implementation over a string array (the dictionary) --------------------------
def _mask(arr: pa.Array) -> np.ndarray:
    return to_numpy(arr, False)


def _where(arr: pa.Array, mask: np.ndarray, fn: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """``arr`` with ``fn`` applied to the entries selected by ``mask`` only (regexes are costly:
    a cheap substring test picks the few entries they can change)."""
    if not mask.any():
        return arr
    if mask.all():
        return fn(arr)
    idx = np.flatnonzero(mask)
    return _scatter(arr, idx, fn(arr.take(array(idx))))


def _normalize(names: pa.Array) -> pa.Array:
    out = _where(names, _mask(pc.starts_with(names, "edge_")),
                 lambda a: pc.replace_substring_regex(a, _EDGE_PREFIX, "", max_replacements=1))
    return _where(out, _mask(pc.match_substring(out, ":")),
                  lambda a: pc.replace_substring_regex(a, "(?s):.*", "", max_replacements=1))


def _prefix(parts: pa.Array, k: int) -> pa.Array:
    """The first ``k`` components (joined) of each list of components."""
    return pc.binary_join(pc.list_slice(parts, 0, k), _SLASH)


def _classify(norm: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """``(forward_scope, phase code int8)`` for normalised names (a string array, no nulls)."""
    core = _where(norm, _mask(pc.match_substring_regex(norm, _GRAPPLER_PREFIX)),
                  lambda a: pc.replace_substring_regex(a, _GRAPPLER_PREFIX, "", max_replacements=1))
    n = len(core)

    other = _mask(pc.match_substring_regex(core, _OTHER_RE))
    tf2 = _mask(pc.starts_with(core, _TF2_PREFIX))
    tf1 = _filtered_match(core, "gradients", _TF1_GRAD_RE) & ~tf2
    backward = tf1 | tf2 | _filtered_match(core, "allreduce", _ALLREDUCE_RE)
    optimizer = _mask(pc.match_substring_regex(core, _OPTIMIZER_RE))
    scoped = _mask(pc.match_substring(core, "/"))
    phase = np.full(n, _OTHER, dtype=np.int8)
    phase[scoped] = _FORWARD
    phase[optimizer] = _OPTIMIZER
    phase[backward] = _BACKWARD
    phase[other] = _OTHER
    tf1 &= ~other
    tf2 &= ~other

    fs = pa.nulls(n, pa.string())
    if tf1.any():
        idx = np.flatnonzero(tf1)
        sub = core.take(array(idx))
        # (Two DFA-friendly replacements; one extract_regex with lazy groups is 10x slower.)
        rest = pc.replace_substring_regex(sub, _TF1_HEAD_RE, "", max_replacements=1)
        ok = _mask(pc.not_equal(pc.binary_length(rest), pc.binary_length(sub)))
        ok &= _mask(pc.match_substring_regex(rest, _TF1_TAIL_RE))
        fwd = pc.replace_substring_regex(rest, _TF1_TAIL_RE + ".*$", r"\1", max_replacements=1)
        fwd = pc.if_else(array(ok), fwd, pa.nulls(len(sub), pa.string()))
        # Gradients of gradients: a gradients component before the closing _grad -> Python.
        nested = _mask(pc.match_substring_regex(fwd, _TF1_GRAD_RE))
        if nested.any():
            values = fwd.to_pylist()
            subs = sub.to_pylist()
            for i in np.flatnonzero(nested):
                values[i] = _tf1_forward(subs[i])
            fwd = array(values, pa.string())
        fs = _scatter(fs, idx, fwd)
    if tf2.any():
        idx = np.flatnonzero(tf2)
        rest = pc.utf8_slice_codeunits(core.take(array(idx)), len(_TF2_PREFIX))
        has_parent = _mask(pc.match_substring(rest, "/"))
        cand = pc.if_else(
            array(has_parent),
            pc.replace_substring_regex(rest, r"/[^/]*$", "", max_replacements=1),
            pa.nulls(len(rest), pa.string()),
        )
        fwd_core = core.filter(array(phase == _FORWARD))
        cand = _shorten_to_known(cand, fwd_core)
        fs = _scatter(fs, idx, cand)
    return fs, phase


def _filtered_match(arr: pa.Array, needle: str, pattern: str) -> np.ndarray:
    """``match_substring_regex(arr, pattern)`` run only where ``needle`` occurs (any case)."""
    pre = _mask(pc.match_substring(arr, needle, ignore_case=True))
    out = np.zeros(len(arr), dtype=bool)
    if pre.any():
        idx = np.flatnonzero(pre)
        out[idx] = _mask(pc.match_substring_regex(arr.take(array(idx)), pattern))
    return out


def _scatter(base: pa.Array, idx: np.ndarray, values: pa.Array) -> pa.Array:
    """``base`` with positions ``idx`` replaced by ``values`` (a take over a concatenation)."""
    n = len(base)
    pos = np.arange(n, dtype=np.int64)
    pos[idx] = n + np.arange(len(idx), dtype=np.int64)
    combined = pa.concat_arrays([base, values.cast(pa.string())])
    return combined.take(array(pos))


def _forward_prefix_set(fwd_core: pa.Array) -> pa.Array:
    """Every whole-component prefix of the forward core names, as one unique string array."""
    if len(fwd_core) == 0:
        return array([], pa.string())
    parts = pc.split_pattern(fwd_core, "/")
    lengths = to_numpy(pc.list_value_length(parts))
    chunks = []
    for k in range(1, int(lengths.max()) + 1):
        sel = lengths >= k
        chunks.append(_prefix(parts.filter(array(sel)), k))
    return pc.unique(pa.concat_arrays(chunks))


def _shorten_to_known(cand: pa.Array, fwd_core: pa.Array) -> pa.Array:
    """Each candidate shortened to its longest prefix in the forward prefix set (TF2 rule)."""
    known = _forward_prefix_set(fwd_core)
    if len(known) == 0 or len(cand) == 0:
        return cand
    parts = pc.split_pattern(cand, "/")
    lengths = to_numpy(pc.list_value_length(parts), 0)
    best = np.zeros(len(cand), dtype=np.int64)
    for k in range(int(lengths.max()), 0, -1):
        todo = (lengths >= k) & (best == 0)
        if not todo.any():
            continue
        idx = np.flatnonzero(todo)
        hit = _mask(pc.is_in(_prefix(parts.take(array(idx)), k), value_set=known))
        best[idx[hit]] = k
    if not best.any():
        return cand
    idx = np.flatnonzero(best)
    # One join per distinct depth keeps this vectorised.
    out_parts = parts.take(array(idx))
    depths = best[idx]
    result = pa.nulls(len(idx), pa.string())
    for k in np.unique(depths):
        sel = np.flatnonzero(depths == k)
        result = _scatter(result, sel, _prefix(out_parts.take(array(sel)), int(k)))
    return _scatter(cand, idx, result)


def _first_components(keys: pa.Array, depth: int) -> pa.Array:
    """The first ``depth`` components of each key (the whole key when shorter)."""
    return _prefix(pc.split_pattern(keys, "/", max_splits=depth), depth)


# -- per-chunk dictionary plumbing ---------------------------------------------------------------
def _chunks(col: pa.ChunkedArray) -> list[pa.DictionaryArray]:
    out = []
    for chunk in col.chunks:
        if not pa.types.is_dictionary(chunk.type):
            chunk = pc.dictionary_encode(chunk)
        out.append(chunk)
    return out


def _indices(chunk: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray | None]:
    """(indices with nulls -> 0, validity mask or None when there are no nulls). Without
    nulls the indices are the column's own buffer, not a copy."""
    ind = chunk.indices
    if ind.null_count == 0:
        return to_numpy(ind), None
    arr = to_numpy(ind, 0).astype(np.int64)  # wide enough for gather's null marker (size)
    return arr, _mask(pc.is_valid(ind))


class _NameInfo:
    """Classification of the used entries of one node_name dictionary."""

    def __init__(self, chunk: pa.DictionaryArray) -> None:
        self.indices, self.valid = _indices(chunk)
        dictionary = chunk.dictionary.cast(pa.string())
        used = np.zeros(len(dictionary), dtype=bool)
        used[self.indices if self.valid is None else self.indices[self.valid]] = True
        used &= _mask(pc.is_valid(dictionary)) if dictionary.null_count else True
        self.used_pos = np.flatnonzero(used)
        self.size = len(dictionary)
        self.norm = _normalize(dictionary.take(array(self.used_pos)))
        self._classified: tuple[pa.Array, np.ndarray] | None = None

    @property
    def forward_scope(self) -> pa.Array:
        if self._classified is None:
            self._classified = _classify(self.norm)
        return self._classified[0]

    @property
    def phase(self) -> np.ndarray:
        if self._classified is None:
            self._classified = _classify(self.norm)
        return self._classified[1]

    def lookup(self, per_used: np.ndarray, fill: int) -> np.ndarray:
        """One value per dictionary entry (``fill`` for unused ones) and ``fill`` last, at
        index ``size`` (the null names'), from one value per used entry."""
        lookup = np.full(self.size + 1, fill, dtype=per_used.dtype)
        lookup[self.used_pos] = per_used
        return lookup

    def rows_of(self, lookup: np.ndarray) -> np.ndarray:
        """Row values from one value per dictionary entry and the null names' last (as
        ``lookup`` makes)."""
        rows: np.ndarray = (
            lookup[self.indices]
            if self.valid is None
            else lookup[np.where(self.valid, self.indices, self.size)]
        )
        return rows

    def gather(self, per_used: np.ndarray, fill: int) -> np.ndarray:
        """Row values from one value per used dictionary entry (``fill`` for null names)."""
        return self.rows_of(self.lookup(per_used, fill))

    def encode_rows(self, values: pa.Array) -> pa.DictionaryArray:
        """A dictionary column over the rows from one string (or null) per used entry."""
        enc = pc.dictionary_encode(values)
        codes = to_numpy(enc.indices, -1).astype(np.int32)
        rows = self.gather(codes, -1)
        mask = rows < 0
        indices = array(rows, pa.int32(), mask=mask if mask.any() else None)
        return pa.DictionaryArray.from_arrays(indices, enc.dictionary.cast(pa.string()))


def _phase_column(codes: np.ndarray) -> pa.DictionaryArray:
    """A phase column from one PHASES index per row: its dictionary is the phases that occur,
    in PHASES order (pandas, Polars and DuckDB see exactly those as the categories)."""
    counts = np.bincount(codes, minlength=len(PHASES))
    used = np.flatnonzero(counts)
    remap = np.zeros(len(PHASES), dtype=np.int32)
    remap[used] = np.arange(len(used), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(
        array(remap[codes], pa.int32()), array([PHASES[i] for i in used], pa.string())
    )


def add_name_columns(events: pa.Table) -> pa.Table:
    """``events`` plus ``forward_scope`` (dict<string>, null unless a gradient node's forward op
    can be named) and ``phase`` (dict<string>: forward | backward | optimizer | other). The
    existing columns are passed through without copying."""
    if "node_name" not in events.column_names:
        return events
    fs_chunks, phase_chunks = [], []
    for chunk in _chunks(events.column("node_name")):
        info = _NameInfo(chunk)
        fs_chunks.append(info.encode_rows(info.forward_scope))
        phase_chunks.append(_phase_column(info.gather(info.phase.astype(np.int32), _OTHER)))
    fs_col = pa.chunked_array(fs_chunks, _DICT_TYPE)
    phase_col = pa.chunked_array(phase_chunks, _DICT_TYPE)
    out = events.append_column("forward_scope", fs_col).append_column("phase", phase_col)
    return out.replace_schema_metadata(events.schema.metadata)


#: The columns :func:`add_event_columns` adds to ``events`` (what ``Trace.events`` has beyond
#: the ``events`` table).
EVENTS_DERIVED_COLUMNS = ("forward_scope", "phase", "device_kind")


def add_event_columns(events: pa.Table, devices: pa.Table) -> pa.Table:
    """``events`` plus the name columns (:func:`add_name_columns`) and ``device_kind``, the
    kind of each event's device block in ``devices`` (see
    :func:`tracecore.optime.device_kind_column`)."""
    from .optime import device_kind_column

    kinds = device_kind_column(events, devices)
    return add_name_columns(events).append_column("device_kind", kinds)


def event_group_keys(events: pa.Table, by: str) -> pa.Array:
    """Per row of ``events`` (``Trace.events``), its ``scope`` (the first component of its
    normalised node name, as ``Trace.scopes()``; "" for none), ``phase`` (forward, backward,
    optimizer, other) or ``tower`` (``tower_N`` / ``replica_N``, as ``Trace.towers()``; null for
    none): the keys of ``tracecore top --by scope|phase|tower``."""
    if by == "phase":
        return events["phase"].cast(pa.string()).combine_chunks()
    node = pc.fill_null(events["node_name"].cast(pa.string()), "").combine_chunks()
    norm = _normalize(node)
    if by == "scope":
        return _first_components(norm, 1)
    if by != "tower":
        raise ValueError(f"by must be 'scope', 'phase' or 'tower', not {by!r}")
    match = pc.extract_regex(norm, _TOWER_RE)
    # A struct's field ignores the struct's nulls: a name without a tower is null here.
    return pc.if_else(pc.is_valid(match), match.field("t"), pa.scalar(None, pa.string()))


def names_table(names: Iterable[str] | pa.Array) -> pa.Table:
    """``name`` plus the derived ``scope``, ``forward_scope`` and ``phase`` for node names."""
    arr = pa.array(list(names) if not isinstance(names, pa.Array) else names, pa.string())
    info = _NameInfo(arr.dictionary_encode())
    scope = pc.replace_substring_regex(info.norm, r"/?[^/]*$", "", max_replacements=1)
    phase = _phase_column(info.gather(info.phase.astype(np.int32), _OTHER))
    table = pa.table({
        "name": arr,
        "scope": pa.chunked_array([info.encode_rows(scope)], _DICT_TYPE),
        "forward_scope": pa.chunked_array([info.encode_rows(info.forward_scope)], _DICT_TYPE),
        "phase": pa.chunked_array([phase], _DICT_TYPE),
    })
    return table.replace_schema_metadata({"tracecore.listing": "names"})


# -- grouped aggregation (the native core's group_stats engine) ---------------------------------
def _event_bytes(trace: Trace, events: pa.Table) -> np.ndarray | None:
    """Per events row, the sum of ``requested_bytes`` of the tensors with its event_id (None
    when there are no tensors: every sum is 0)."""
    n = events.num_rows
    tensors = trace.tensors
    if tensors.num_rows == 0 or n == 0:
        return None
    ids = to_numpy(tensors.column("event_id"), -1).astype(np.int64, copy=False)
    b = to_numpy(tensors.column("requested_bytes"), 0).astype(np.int64, copy=False)
    eids = to_numpy(events.column("event_id"), -1).astype(np.int64, copy=False)
    if not np.array_equal(eids, np.arange(n)):  # event_id is the row number of a parsed trace
        order = np.argsort(eids, kind="stable")
        pos = np.searchsorted(eids[order], ids)
        pos = np.minimum(pos, n - 1)
        hit = eids[order][pos] == ids
        ids = np.where(hit, order[pos], -1)
    ids = np.where(ids < n, ids, -1)
    return grouped_sum(b, ids, n)


def _group_table(key_name: str, keys: pa.Array, group: np.ndarray, trace: Trace,
                 events: pa.Table, with_total: bool,
                 group_of_code: np.ndarray | None = None) -> pa.Table:
    """One row per key with events: ``n_events``, ``total_ns`` (``with_total``), ``busy_ns``,
    ``bytes``; ``group``: each event's key index, -1 for none (with ``group_of_code``: each
    event's int32 code, whose key index is ``group_of_code[code]``)."""
    weight = _event_bytes(trace, events)
    stats = group_stats(
        to_numpy(events.column("start_ns"), 0),
        to_numpy(events.column("end_ns"), 0),
        group,
        len(keys),
        weight=weight,
        group_of_code=group_of_code,
    )
    sums = stats.weight if stats.weight is not None else np.zeros(len(keys), dtype=np.int64)
    columns = {key_name: keys.cast(pa.string()), "n_events": array(stats.n_events)}
    if with_total:
        columns["total_ns"] = array(stats.total_ns)
    columns["busy_ns"] = array(stats.busy_ns)
    columns["bytes"] = array(sums)
    present = stats.n_events > 0
    return pa.table(columns).filter(array(present))


def scopes(trace: Trace, depth: int = 1, *, by: str = "events") -> pa.Table:
    """Events grouped by the first ``depth`` components of their (normalised) node name.

    ``by="events"`` keys each event by its normalised node name; ``by="forward_scope"`` keys a
    gradient event by its ``forward_scope`` instead, so a layer's row holds its forward and
    backward time. Columns ``scope, n_events, total_ns, busy_ns, bytes``; every event is in
    exactly one row; rows sorted by ``total_ns`` descending, then ``scope``.
    """
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be a positive int, not {depth!r}")
    if by in ("forward", "forward_scope"):
        by = "forward_scope"
    elif by != "events":
        raise ValueError(f"by must be 'events' or 'forward_scope', not {by!r}")
    events = trace.events
    # Per chunk of node_name: its names, and one scope (a group number) per dictionary entry,
    # numbered after the groups of the chunks before it.
    chunks: list[tuple[_NameInfo, np.ndarray]] = []
    key_chunks, offset = [], 0
    for chunk in _chunks(events.column("node_name")):
        info = _NameInfo(chunk)
        keys = info.norm
        if by == "forward_scope":
            keys = pc.coalesce(info.forward_scope, keys)
        scope = _first_components(keys, int(depth))
        enc = pc.dictionary_encode(scope)
        codes = to_numpy(enc.indices).astype(np.int64)
        null_code = len(enc.dictionary)
        chunks.append((info, info.lookup(codes, null_code) + offset))
        key_chunks.append(pa.concat_arrays([enc.dictionary.cast(pa.string()), array([""])]))
        offset += null_code + 1
    if not chunks:
        return _empty_scopes()
    keys = pa.concat_arrays(key_chunks)
    # Equal scope strings from different chunks (or the null-name group "") merge into one row.
    enc = pc.dictionary_encode(keys)
    remap = to_numpy(enc.indices).astype(np.int64)
    info, lookup = chunks[0]
    if len(chunks) == 1 and info.valid is None and info.indices.dtype == np.int32:
        # One chunk without null names (a parsed trace): the native core reads each event's
        # group through the dictionary indices, so no per-event array is made here.
        table = _group_table("scope", enc.dictionary, info.indices, trace, events,
                             with_total=True, group_of_code=remap[lookup[: info.size]])
    else:
        group = np.concatenate([info.rows_of(lookup) for info, lookup in chunks])
        table = _group_table("scope", enc.dictionary, remap[group], trace, events,
                             with_total=True)
    return table.sort_by([("total_ns", "descending"), ("scope", "ascending")])


def _empty_scopes() -> pa.Table:
    return pa.table({"scope": array([], pa.string()), "n_events": array([], pa.int64()),
                     "total_ns": array([], pa.int64()), "busy_ns": array([], pa.int64()),
                     "bytes": array([], pa.int64())})


def towers(trace: Trace) -> pa.Table:
    """One row per ``tower_<N>`` / ``replica_<N>`` component: ``tower, n_events, busy_ns, bytes``.

    An event's tower is the first component of its normalised name that matches; events without
    one are in no row. Rows are sorted by prefix (``replica`` before ``tower``) and number.
    """
    events = trace.events
    groups, key_chunks, offset = [], [], 0
    for chunk in _chunks(events.column("node_name")):
        info = _NameInfo(chunk)
        has = _filtered_match(info.norm, "tower_", _TOWER_RE) | _filtered_match(
            info.norm, "replica_", _TOWER_RE)
        tower = pa.nulls(len(info.norm), pa.string())
        if has.any():
            idx = np.flatnonzero(has)
            match = pc.extract_regex(info.norm.take(array(idx)), _TOWER_RE)
            tower = _scatter(tower, idx, match.field("t"))
        enc = pc.dictionary_encode(tower)
        codes = to_numpy(enc.indices, -1).astype(np.int64)
        rows = info.gather(codes, -1)
        rows = np.where(rows >= 0, rows + offset, -1)
        groups.append(rows)
        key_chunks.append(enc.dictionary.cast(pa.string()))
        offset += len(enc.dictionary)
    empty = pa.table({"tower": array([], pa.string()), "n_events": array([], pa.int64()),
                      "busy_ns": array([], pa.int64()), "bytes": array([], pa.int64())})
    if not groups or offset == 0:
        return empty
    keys = pa.concat_arrays(key_chunks)
    group = np.concatenate(groups)
    enc = pc.dictionary_encode(keys)
    remap = to_numpy(enc.indices).astype(np.int64)
    group = np.where(group >= 0, remap[np.maximum(group, 0)], -1)
    table = _group_table("tower", enc.dictionary, group, trace, events, with_total=False)
    names = table.column("tower").to_pylist()
    order = sorted(range(len(names)), key=lambda i: (names[i].rsplit("_", 1)[0],
                                                     int(names[i].rsplit("_", 1)[1])))
    return table.take(array(order, pa.int64()))
