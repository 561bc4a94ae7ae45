"""Parsing one trace file with the native core: gzip-compressed input, and parse errors made
clearer when the file is plainly no trace or was read in the wrong format."""

from __future__ import annotations

import builtins
import errno
import os
import stat
import zlib

from . import _core
from ._core import TraceFormatError
from .progress import Progress
from .traceinfo import SourceFile

FORMATS = ("auto", "text", "binary", "xspace", "json")
_GZIP_MAGIC = b"\x1f\x8b"
# How the core ends the message of an error in decompressed gzip data (open_trace.h).
_IN_GZIP = " (in the decompressed gzip data)"
# How much of a file's start is read to explain a parse error (and what format detection reads).
_HEAD_BYTES = 65536
# Files that are certainly not trace dumps, by their first bytes.
_NOT_TRACES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x7fELF", "an ELF executable"),
    (b"BZh", "bzip2-compressed (decompress it first)"),
    (b"\xfd7zXZ\x00", "xz-compressed (decompress it first)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed (decompress it first)"),
    (b"PAR1", "a Parquet file (open the directory Trace.to_parquet wrote)"),
)
_TEXT_WHITESPACE = b" \t\r\n\f\v"


def _looks_like_text(head: bytes) -> bool:
    """No control bytes other than whitespace, nor DEL (0x7f): a file a person would call text.
    Format detection (``DetectFormat`` in C++) also lets DEL through, and asks more: that the
    first non-whitespace byte can start protobuf text."""
    return not any(c < 0x20 and c not in _TEXT_WHITESPACE for c in head) and b"\x7f" not in head


def _explained(error: TraceFormatError, head: bytes, format: str) -> TraceFormatError:
    """``error``, or a clearer one when the file is plainly no trace or was read in the wrong
    format: a known file type by its first bytes; a text file (no control bytes) that format
    detection read as binary because it does not start like protobuf text (the text parser's
    error says what is wrong at line 1); a text-looking file read with ``format="binary"``."""
    for magic, what in _NOT_TRACES:
        if head.startswith(magic):
            explained = TraceFormatError(f"not a TensorFlow trace dump: the file is {what}")
            explained.offset = 0
            return explained
    if (
        getattr(error, "offset", None) is not None
        and head.strip(_TEXT_WHITESPACE)
        and _looks_like_text(head)
    ):
        if format == "binary":
            return _with_message(
                error,
                f"{error} (the file looks like text, not a binary dump: use format 'text' or "
                f"'auto')",
            )
        try:
            _core.open_bytes(head, "text", 1)
        except TraceFormatError as text_error:
            return _with_message(
                text_error, f"{text_error} (the file is text, but not protobuf text format)"
            )
    return error


def _with_message(error: TraceFormatError, message: str) -> TraceFormatError:
    """A copy of ``error`` (same position attributes) with ``message``."""
    copy = TraceFormatError(message)
    copy.line = getattr(error, "line", None)
    copy.column = getattr(error, "column", None)
    copy.offset = getattr(error, "offset", None)
    return copy


def _reraise_with_path(error: TraceFormatError, path: str) -> TraceFormatError:
    located = _with_message(error, f"{path}: {error}")
    located.path = path
    return located


def _gzip_head(path: str) -> bytes:
    """The first decompressed bytes of a gzip file (to explain an error in its data), or b""
    when they cannot be had."""
    inflater = zlib.decompressobj(wbits=31)
    with builtins.open(path, "rb") as f:
        try:
            return inflater.decompress(f.read(1 << 20), _HEAD_BYTES)
        except zlib.error:
            return b""


def _kind_of(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _open_regular(path: str) -> int:
    """A read-only descriptor of ``path``. Raises OSError (EINVAL) unless it is a regular file
    (after symlinks), checked on the descriptor: opening a FIFO would block until a writer
    comes (O_NONBLOCK makes the open return at once), and a device such as /dev/zero never
    ends."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(
                errno.EINVAL,
                f"not a regular file ({_kind_of(mode)}): tracecore reads regular files",
                path,
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_errors(errors: object) -> str:
    """``errors`` of ``tracecore.open``: "strict" or "replace"."""
    if errors not in ("strict", "replace"):
        raise ValueError(f"errors must be 'strict' or 'replace', not {errors!r}")
    return str(errors)


def parse_core(
    path: str,
    *,
    format: str,
    threads: int,
    progress: bool = False,
    max_table_bytes: int = 0,
    errors: str = "strict",
) -> tuple[_core.Trace, SourceFile]:
    """The native core of ``path`` (no cache) and the file's identity taken before parsing.
    With ``progress``, parses that take over a second show a line on stderr with the size, the
    elapsed time and the throughput (see :mod:`.progress`). ``max_table_bytes``: the tables'
    memory budget, 0 for the default (see :func:`tracecore.open`).

    Raises:
        TraceFormatError: not a valid trace; the message starts with the path.
    """
    with builtins.open(_open_regular(path), "rb") as f:
        head = f.read(_HEAD_BYTES)
        st = os.fstat(f.fileno())
    label = f"parsing {os.path.basename(path)}"
    try:
        with Progress(label, st.st_size, enabled=progress):
            # gzip data is decompressed by the core, into memory the parse reads in place.
            core = _core.open_file(os.fsencode(path), format, threads, max_table_bytes, errors)
    except TraceFormatError as e:
        if head[:2] == _GZIP_MAGIC and str(e).endswith(_IN_GZIP):
            head = _gzip_head(path)
        raise _reraise_with_path(_explained(e, head, format), path) from None
    return core, SourceFile(os.path.abspath(path), st.st_size, st.st_mtime_ns)


def explain_error(error: TraceFormatError, head: bytes, format: str) -> TraceFormatError:
    """The error of a parse of bytes held in memory, made clearer as a file's is (its first
    bytes ``head``)."""
    return _explained(error, head, format)


def reraise_with_path(error: TraceFormatError, path: str) -> TraceFormatError:
    """``error`` with ``path`` in front of its message and as its ``path``."""
    return _reraise_with_path(error, path)
