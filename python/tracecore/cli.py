"""The tracecore command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pyarrow.compute as pc

from . import __version__
from .trace import Trace, open, sample_path
from ._core import TraceFormatError


def _open(args: argparse.Namespace) -> Trace:
    if getattr(args, "sample", False):
        return open(sample_path())
    if not args.file:
        raise SystemExit("tracecore: error: give a trace FILE or --sample")
    return open(args.file, format=args.format, threads=args.threads)


def _cmd_info(args: argparse.Namespace) -> int:
    t = _open(args)
    s = t.stats
    mb = s["bytes"] / 1e6
    secs = s["parse_seconds"]
    print(f"file      {t.source}")
    print(f"kind      {t.kind} ({t.format}), {mb:.2f} MB")
    print(
        f"parsed    {s['events']} events, {s['tensors']} tensors, {s['alloc_records']} allocation "
        f"records in {secs * 1e3:.1f} ms ({mb / secs if secs > 0 else float('inf'):.0f} MB/s)"
    )
    if s["unknown_fields"]:
        print(f"skipped   {s['unknown_fields']} unknown fields")
    print()
    print("devices")
    for row in t.devices.to_pylist():
        print(f"  [{row['device_index']}] {row['device']:<50} {row['kind']:<10} {row['n_events']:>8} events")
    allocs = t.alloc_records
    if allocs.num_rows:
        print()
        print("allocators (allocation records)")
        for name in sorted(set(pc.unique(allocs["allocator"].dictionary_decode()).to_pylist())):
            n = pc.sum(pc.equal(allocs["allocator"].dictionary_decode(), name)).as_py()
            print(f"  {name:<20} {n:>8} records")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tracecore", description="Index and query TensorFlow execution traces."
    )
    parser.add_argument("--version", action="version", version=f"tracecore {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_input(p: argparse.ArgumentParser) -> None:
        p.add_argument("file", nargs="?", help="a StepStats / RunMetadata dump (.pbtxt, .pb, .gz)")
        p.add_argument("--sample", action="store_true", help="use the bundled sample trace")
        p.add_argument("--format", choices=("auto", "text", "binary"), default="auto")
        p.add_argument("--threads", type=int, default=0, help="parser threads (0 = all cores)")

    info = sub.add_parser("info", help="what is in a trace: devices, events, allocators")
    add_input(info)
    info.set_defaults(func=_cmd_info)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except TraceFormatError as e:
        print(f"tracecore: invalid trace: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"tracecore: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
