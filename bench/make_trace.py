"""Generate large StepStats dumps (protobuf text, optionally binary) from a small seed dump.

    python bench/make_trace.py SIZE_MB [--out DIR] [--seed-file PATH] [--binary] [--gzip]
                               [--unique-names] [--period-us N] [--few-blocks]

The seed's top-level `dev_stats { ... }` blocks (one training step) are repeated as many steps
as needed to reach about SIZE_MB megabytes (1 MB = 1e6 bytes) of text. Step k is the seed with
every absolute timestamp (all_start_micros, scheduled_micros, alloc_micros; all_start_nanos and
scheduled_nanos if present) shifted by k * period, so the steps follow one another in time like
a training loop. Node names stay identical across steps (as in a real loop) unless
--unique-names, which puts `stepK/` in front of every node_name (a prefix rather than a suffix
keeps the `name:OpType` ending of GPU-stream records intact) so the string pool keeps growing.

--few-blocks lays the same records out as one long step's RunMetadata does: one block per device
of the seed (7 for seed 000), each holding that device's records of every step in step order,
instead of the seed's blocks repeated once per step (966 blocks at 200 MB). Parsers see a few
very large blocks, whose columns cannot be sized from the first ones.

Text is produced by patching the seed's text (the layout is exactly the seed's: TensorFlow's
one-field-per-line, 2-space print layout) and written step by step, so memory stays bounded
(but for --few-blocks --binary, which builds each device's block in memory: about three times
its size).
--binary also writes the same message in the binary wire format: the seed is parsed once, each
step's timestamps are set on that message and the StepStats is serialized and appended
(concatenated serialized StepStats are one StepStats: repeated fields concatenate).

Importable:  make_text(size_mb, out_path, ...), make_binary(size_mb, out_path, ...),
             ensure_pair(size_mb, out_dir, ...) (cached text + binary), text_prefix(path, n).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import re
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
DEFAULT_SEED = REPO_DIR / "tests" / "data" / "seed000_stepstats.pbtxt"
DEFAULT_OUT = BENCH_DIR / "data"
MB = 1_000_000

# Absolute timestamp fields, and the factor by which a microsecond shift scales for each.
_SHIFTED_FIELDS = {
    "all_start_micros": 1,
    "scheduled_micros": 1,
    "alloc_micros": 1,
    "all_start_nanos": 1000,
    "scheduled_nanos": 1000,
}
_NODE_TIME_FIELDS = ("all_start_micros", "scheduled_micros", "all_start_nanos", "scheduled_nanos")
_SLOT_RE = re.compile(
    rb"^( *)(all_start_micros|scheduled_micros|alloc_micros|all_start_nanos|scheduled_nanos"
    rb"|node_name)(: )(.*)$",
    re.M,
)
_REL_END_RE = re.compile(rb"^ *all_end_rel_(micros|nanos): (-?\d+)$", re.M)


@dataclasses.dataclass
class TraceInfo:
    path: str
    format: str  # "text" | "binary"
    steps: int
    events: int
    events_per_step: int
    bytes: int  # bytes written (compressed size for .gz)
    plain_bytes: int  # uncompressed size
    seconds: float
    period_us: int
    unique_names: bool
    seed_file: str

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


# --------------------------------------------------------------------------------------------
# Seed handling


def load_seed_blocks(seed_file: str | os.PathLike = DEFAULT_SEED) -> bytes:
    """Return the seed's DeviceStepStats blocks as StepStats text (`dev_stats {...}` at column 0).

    Accepts a StepStats dump (top-level `dev_stats {`) or a RunMetadata dump (the blocks under
    `step_stats {`, which are de-indented by 2; everything else in the RunMetadata is dropped).
    Relies on the print layout (one field per line, 2-space indentation), as real dumps have.
    """
    data = Path(seed_file).read_bytes()
    if str(seed_file).endswith(".gz"):
        data = gzip.decompress(data)
    lines = data.splitlines(keepends=True)
    out: list[bytes] = []
    indent = None
    inside = False
    for line in lines:
        if not inside:
            if line.startswith(b"dev_stats {"):
                indent, inside = 0, True
            elif line.startswith(b"  dev_stats {") and indent != 0:
                indent, inside = 2, True
            else:
                continue
        # inside a dev_stats block at `indent`
        out.append(line[indent:] if line[:indent].strip() == b"" else line)
        if line.rstrip(b"\r\n") == b" " * indent + b"}":
            inside = False
    if not out:
        raise ValueError(f"{seed_file}: no dev_stats blocks found (expected TF's print layout)")
    if inside:
        raise ValueError(f"{seed_file}: unterminated dev_stats block")
    return b"".join(out)


class _StepTemplate:
    """The seed text split around every shifted value (and node name), rendered per step."""

    def __init__(self, blocks: bytes, unique_names: bool):
        self.literals: list[bytes] = []
        self.bases: list[int] = []  # base timestamp values
        self.scales: list[int] = []  # 1 (micros) or 1000 (nanos)
        self.names: list[bytes] = []  # node_name values (quoted contents, escaped)
        self.unique_names = unique_names
        kinds: list[str] = []  # "t" timestamp / "n" node name, in text order
        pos = 0
        times_us: list[int] = []  # every absolute timestamp, in microseconds
        for m in _SLOT_RE.finditer(blocks):
            field = m.group(2).decode()
            value = m.group(4).rstrip(b"\r")
            if field == "node_name":
                if not unique_names:
                    continue
                if not (value.startswith(b'"') and value.endswith(b'"')):
                    raise ValueError(f"unexpected node_name layout: {m.group(0)!r}")
                self.literals.append(blocks[pos : m.start(4) + 1])  # up to and incl. the quote
                self.names.append(value[1:-1])
                kinds.append("n")
                pos = m.start(4) + len(value) - 1  # the closing quote starts the next literal
            else:
                self.literals.append(blocks[pos : m.start(4)])
                self.bases.append(int(value))
                self.scales.append(_SHIFTED_FIELDS[field])
                kinds.append("t")
                pos = m.start(4) + len(value)
                times_us.append(int(value) // _SHIFTED_FIELDS[field])
        self.literals.append(blocks[pos:])
        self.kinds = kinds
        self.events = blocks.count(b"node_stats {")
        # Step period: the seed's time span (starts .. latest end) plus a gap, rounded up to 1 ms.
        max_rel = 0
        for m in _REL_END_RE.finditer(blocks):
            rel = int(m.group(2)) // (1000 if m.group(1) == b"nanos" else 1)
            max_rel = max(max_rel, rel)
        span = (max(times_us) - min(times_us) + max_rel) if times_us else 0
        gap = max(1000, span // 10)
        self.default_period_us = -(-(span + gap) // 1000) * 1000

    def render(self, step: int, period_us: int) -> bytes:
        shift = step * period_us
        shift_ns = shift * 1000
        t_iter = iter(
            [
                str(b + (shift if s == 1 else shift_ns)).encode()
                for b, s in zip(self.bases, self.scales, strict=True)
            ]
        )
        if self.unique_names:
            prefix = b"step%d/" % step
            n_iter = iter([prefix + n for n in self.names])
        else:
            n_iter = iter(())
        parts: list[bytes] = [b""] * (2 * len(self.kinds) + 1)
        parts[0::2] = self.literals
        parts[1::2] = [next(t_iter) if k == "t" else next(n_iter) for k in self.kinds]
        return b"".join(parts)


def _split_blocks(blocks: bytes) -> list[tuple[bytes, bytes, bytes]]:
    """Each top-level `dev_stats {` block as (header, node_stats records, footer): the records
    are the block's `node_stats` fields, which must come last but for the closing brace."""
    out = []
    starts = [m.start() for m in re.finditer(rb"^dev_stats \{", blocks, re.M)]
    for i, start in enumerate(starts):
        block = blocks[start : starts[i + 1] if i + 1 < len(starts) else len(blocks)]
        first = last = -1
        field = b""
        pos = 0
        for line in block.splitlines(keepends=True):
            if not line.strip():
                pos += len(line)
                continue
            if line.startswith(b"  ") and not line.startswith(b"   "):  # a field of the block
                if line.rstrip() == b"  }":  # the end of a message field
                    if field == b"node_stats":
                        last = pos + len(line)
                else:
                    field = line.split()[0].rstrip(b":{")
                    if field == b"node_stats" and first < 0:
                        first = pos
                    elif field != b"node_stats" and first >= 0:
                        raise ValueError(
                            f"a {field.decode()} field after a block's node_stats: "
                            "--few-blocks cannot move it"
                        )
            pos += len(line)
        if first < 0 or last < first:
            raise ValueError("a dev_stats block without node_stats (expected TF's print layout)")
        out.append((block[:first], block[first:last], block[last:]))
    return out


def _open_out(path: Path, gzip_level: int):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.name.endswith(".gz"):
        return gzip.open(path, "wb", compresslevel=gzip_level)
    return open(path, "wb", buffering=8 * MB)


def _steps_for(size_mb: float, step_bytes: int) -> int:
    return max(1, round(size_mb * MB / step_bytes))


# --------------------------------------------------------------------------------------------
# Public API


def make_text(
    size_mb: float,
    out_path: str | os.PathLike,
    *,
    seed_file: str | os.PathLike = DEFAULT_SEED,
    unique_names: bool = False,
    period_us: int | None = None,
    steps: int | None = None,
    gzip_level: int = 1,
    few_blocks: bool = False,
) -> TraceInfo:
    """Write a StepStats text dump of about size_mb MB (or exactly `steps` steps) to out_path.

    A path ending in .gz is gzip-compressed (size_mb still counts uncompressed bytes).
    `few_blocks`: one block per seed block holding every step's records (see the module doc).
    """
    t0 = time.perf_counter()
    blocks = load_seed_blocks(seed_file)
    tpl = _StepTemplate(blocks, unique_names)
    period = period_us or tpl.default_period_us
    out_path = Path(out_path)
    first = tpl.render(0, period)
    if steps is None:
        steps = _steps_for(size_mb, len(first))
    plain = 0
    with _open_out(out_path, gzip_level) as f:
        if few_blocks:
            for header, body, footer in _split_blocks(blocks):
                body_tpl = _StepTemplate(body, unique_names)
                f.write(header)
                for k in range(steps):
                    chunk = body_tpl.render(k, period)
                    plain += len(chunk)
                    f.write(chunk)
                f.write(footer)
                plain += len(header) + len(footer)
        else:
            f.write(first)
            plain = len(first)
            for k in range(1, steps):
                chunk = tpl.render(k, period)
                plain += len(chunk)
                f.write(chunk)
    return TraceInfo(
        path=str(out_path),
        format="text",
        steps=steps,
        events=steps * tpl.events,
        events_per_step=tpl.events,
        bytes=out_path.stat().st_size,
        plain_bytes=plain,
        seconds=time.perf_counter() - t0,
        period_us=period,
        unique_names=unique_names,
        seed_file=str(seed_file),
    )


def step_stats_class():
    """The StepStats message class used here (bench/_tfproto_min.py, a private pool)."""
    if str(BENCH_DIR) not in sys.path:
        sys.path.insert(0, str(BENCH_DIR))
    from _tfproto_min import StepStats

    return StepStats


def make_binary(
    size_mb: float,
    out_path: str | os.PathLike,
    *,
    seed_file: str | os.PathLike = DEFAULT_SEED,
    unique_names: bool = False,
    period_us: int | None = None,
    steps: int | None = None,
    gzip_level: int = 1,
    few_blocks: bool = False,
) -> TraceInfo:
    """Write the binary StepStats equal to make_text(...) with the same arguments.

    The step count is derived from the *text* size, so make_text and make_binary with the same
    size_mb (or steps) describe the same message: same events, same order.
    """
    from google.protobuf import text_format

    t0 = time.perf_counter()
    blocks = load_seed_blocks(seed_file)
    tpl = _StepTemplate(blocks, unique_names)
    period = period_us or tpl.default_period_us
    if steps is None:
        steps = _steps_for(size_mb, len(tpl.render(0, period)))
    msg = step_stats_class()()
    text_format.Parse(blocks.decode("utf-8"), msg)

    # Every value to patch per step: (message, field, base, scale).
    slots: list[tuple[object, str, int, int]] = []
    names: list[tuple[object, str]] = []
    for dev in msg.dev_stats:
        for node in dev.node_stats:
            for field in _NODE_TIME_FIELDS:
                v = getattr(node, field)
                if v:  # proto3: a zero is absent in both forms; keep it absent
                    slots.append((node, field, v, _SHIFTED_FIELDS[field]))
            for mem in node.memory:
                for rec in mem.allocation_records:
                    if rec.alloc_micros:
                        slots.append((rec, "alloc_micros", rec.alloc_micros, 1))
            if unique_names:
                names.append((node, node.node_name))

    out_path = Path(out_path)
    plain = 0
    with _open_out(out_path, gzip_level) as f:
        if few_blocks:
            plain = _write_few_blocks(f, msg, unique_names, steps, period)
        for k in range(0 if not few_blocks else steps, steps):  # the steps one after another
            shift = k * period
            for obj, field, base, scale in slots:
                setattr(obj, field, base + shift * scale)
            if unique_names:
                prefix = f"step{k}/"
                for node, name in names:
                    node.node_name = prefix + name
            chunk = msg.SerializeToString()
            plain += len(chunk)
            f.write(chunk)
    return TraceInfo(
        path=str(out_path),
        format="binary",
        steps=steps,
        events=steps * tpl.events,
        events_per_step=tpl.events,
        bytes=out_path.stat().st_size,
        plain_bytes=plain,
        seconds=time.perf_counter() - t0,
        period_us=period,
        unique_names=unique_names,
        seed_file=str(seed_file),
    )


def _write_few_blocks(f, msg, unique_names: bool, steps: int, period: int) -> int:
    """Writes `msg`'s blocks, each holding its records of every step (StepStats.dev_stats = 1,
    DeviceStepStats.node_stats = 2, length-delimited); returns the bytes written."""
    from make_xspace import varint as _varint

    plain = 0
    for dev in msg.dev_stats:
        head = type(dev)()
        head.CopyFrom(dev)
        del head.node_stats[:]
        parts = [head.SerializeToString()]
        nodes = list(dev.node_stats)
        slots = []
        for node in nodes:
            for field in _NODE_TIME_FIELDS:
                v = getattr(node, field)
                if v:
                    slots.append((node, field, v, _SHIFTED_FIELDS[field]))
            for mem in node.memory:
                for rec in mem.allocation_records:
                    if rec.alloc_micros:
                        slots.append((rec, "alloc_micros", rec.alloc_micros, 1))
        names = [(node, node.node_name) for node in nodes] if unique_names else []
        for k in range(steps):
            shift = k * period
            for obj, field, base, scale in slots:
                setattr(obj, field, base + shift * scale)
            for node, name in names:
                node.node_name = f"step{k}/" + name
            for node in nodes:
                body = node.SerializeToString()
                parts.append(b"\x12" + _varint(len(body)) + body)
        content = b"".join(parts)
        chunk = b"\x0a" + _varint(len(content)) + content
        plain += len(chunk)
        f.write(chunk)
    return plain


def default_name(
    size_mb: float, seed_file=DEFAULT_SEED, unique_names=False, few_blocks=False
) -> str:
    stem = Path(seed_file).name.split(".")[0]
    return (
        f"{stem}_{size_mb:g}MB{'_unique' if unique_names else ''}"
        f"{'_fewblocks' if few_blocks else ''}"
    )


def ensure_pair(
    size_mb: float,
    out_dir: str | os.PathLike = DEFAULT_OUT,
    *,
    seed_file: str | os.PathLike = DEFAULT_SEED,
    unique_names: bool = False,
    binary: bool = True,
    gzip_output: bool = False,
) -> dict[str, TraceInfo]:
    """Generate (or reuse, if a matching <name>.json sidecar says it is complete) text + binary.

    Returns {"text": TraceInfo, "binary": TraceInfo (if binary)}.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_gitignore(out_dir)
    name = default_name(size_mb, seed_file, unique_names)
    gz = ".gz" if gzip_output else ""
    text_path, bin_path = out_dir / f"{name}.pbtxt{gz}", out_dir / f"{name}.pb{gz}"
    meta_path = out_dir / f"{name}{gz}.json"
    if meta_path.exists():
        try:
            meta = json.loads(meta_path.read_text())
            infos = {k: TraceInfo(**v) for k, v in meta.items()}
            ok = all(
                Path(i.path).exists() and Path(i.path).stat().st_size == i.bytes
                for i in infos.values()
            )
            if ok and ("binary" in infos or not binary):
                return infos
        except (ValueError, TypeError, OSError):
            pass
    infos = {"text": make_text(size_mb, text_path, seed_file=seed_file, unique_names=unique_names)}
    if binary:
        infos["binary"] = make_binary(
            size_mb,
            bin_path,
            seed_file=seed_file,
            unique_names=unique_names,
            steps=infos["text"].steps,
        )
    meta_path.write_text(json.dumps({k: v.as_dict() for k, v in infos.items()}, indent=1))
    return infos


def text_prefix(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The longest prefix of a StepStats text dump, at most max_bytes long, that ends just
    before a top-level `dev_stats {` line (so it is itself a valid StepStats). At least one
    block is returned even if it is longer than max_bytes."""
    opener = gzip.open if str(path).endswith(".gz") else open
    marker = b"\ndev_stats {"
    with opener(path, "rb") as f:
        buf = f.read(max_bytes + len(marker))
        if len(buf) <= max_bytes:
            return buf  # the whole file
        cut = buf.rfind(marker, 0, max_bytes - 1 + len(marker))  # prefix = buf[:cut + 1]
        if cut >= 0:
            return buf[: cut + 1]
        # the first block alone is longer than max_bytes: read on to the second block
        while True:
            chunk = f.read(8 * MB)
            start = max(0, len(buf) - len(marker))
            buf += chunk
            cut = buf.find(marker, start)
            if cut >= 0:
                return buf[: cut + 1]
            if not chunk:
                return buf


def _write_gitignore(out_dir: Path) -> None:
    gi = out_dir / ".gitignore"
    if out_dir.resolve() == DEFAULT_OUT.resolve() and not gi.exists():
        gi.write_text("# generated benchmark inputs: never commit\n*\n!.gitignore\n")


# --------------------------------------------------------------------------------------------
# CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("size_mb", type=float, help="approximate text size in MB (1e6 bytes)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="output directory (default bench/data)")
    ap.add_argument("--seed-file", default=str(DEFAULT_SEED), help="StepStats or RunMetadata text")
    ap.add_argument("--binary", action="store_true", help="also write the binary form (.pb)")
    ap.add_argument("--gzip", action="store_true", help="gzip the outputs (.pbtxt.gz / .pb.gz)")
    ap.add_argument("--unique-names", action="store_true", help="prefix node names with stepK/")
    ap.add_argument(
        "--period-us", type=int, default=None, help="step period (default: seed span + gap)"
    )
    ap.add_argument(
        "--few-blocks",
        action="store_true",
        help="one block per seed device holding every step's records (one long step's layout)",
    )
    ap.add_argument("--name", default=None, help="output base name (default <seed>_<size>MB)")
    args = ap.parse_args(argv)

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_gitignore(out_dir)
    name = args.name or default_name(
        args.size_mb, args.seed_file, args.unique_names, args.few_blocks
    )
    gz = ".gz" if args.gzip else ""
    common = dict(
        seed_file=args.seed_file,
        unique_names=args.unique_names,
        period_us=args.period_us,
        few_blocks=args.few_blocks,
    )
    text = make_text(args.size_mb, out_dir / f"{name}.pbtxt{gz}", **common)
    infos = [text]
    if args.binary:
        bin_path = out_dir / f"{name}.pb{gz}"
        infos.append(make_binary(args.size_mb, bin_path, steps=text.steps, **common))
    for i in infos:
        print(
            f"{i.path}  {i.bytes / MB:.1f} MB  {i.format}  {i.steps} steps x {i.events_per_step}"
            f" = {i.events} events  period {i.period_us} us  written in {i.seconds:.2f} s"
            f" ({i.plain_bytes / MB / i.seconds:.0f} MB/s{' uncompressed' if gz else ''})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
