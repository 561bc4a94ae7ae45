"""Writing output files: the path checked before any work, the file written through a
temporary one, and errors that name the file asked for."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def checked_output_file(path: str | os.PathLike[str], what: str = "") -> Path:
    """``path`` as a file to write, checked before any work so that errors name it (not the
    temporary file it is written through). ``what``: how messages call it ("the plot ")."""
    out = Path(path)
    if out.is_dir() or not out.name or out.name in (".", ".."):
        raise IsADirectoryError(f"{path}: is a directory; give {what}a file name")
    parent = out.parent
    if not parent.exists():
        raise FileNotFoundError(f"{parent}: no such directory (for {what}{out})")
    if not parent.is_dir():
        raise NotADirectoryError(f"{parent}: not a directory (for {what}{out})")
    return out


@contextlib.contextmanager
def naming(path: Path) -> Iterator[None]:
    """OSErrors raised inside name ``path`` (what the user asked for), not the temporary file
    it is written through."""
    try:
        yield
    except OSError as e:
        if e.errno is None:
            raise
        raise type(e)(e.errno, e.strerror, str(path)) from None
