"""Argument checks shared by the public functions: each returns the checked value or raises
TypeError / ValueError with a message that names the argument."""

from __future__ import annotations

import operator
import os

import numpy as np
import pyarrow as pa

# Parser threads beyond this are capped: the core never runs more threads than it has cores.
MAX_THREADS = 1024

#: What the functions that read files take as a path.
PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def as_int(value: object) -> int | None:
    """``value`` as a Python int if it is an integer (int, numpy integer, pyarrow integer
    scalar; not a bool, not a float that would be truncated), else None."""
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if isinstance(value, (bool, np.bool_)):
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        return None


def check_path(value: object, what: str = "path") -> str:
    """A file-system path given as ``str``, ``bytes`` or ``os.PathLike``, as the ``str`` that
    ``os.fsdecode`` makes of it: undecodable bytes of a name become lone surrogates
    (surrogateescape), as in what ``os.listdir`` returns, and ``os.fsencode`` gives the original
    bytes back. Raises TypeError for anything else."""
    if not isinstance(value, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a str, bytes or os.PathLike, not {type(value).__name__}")
    return os.fsdecode(os.fspath(value))


def display_path(path: str) -> str:
    """``path`` (from :func:`check_path`) as valid UTF-8 text for tables and messages: each
    undecodable byte of a name shows as ``\\xNN``."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def check_budget(value: object, what: str = "max_output_bytes") -> int:
    """A memory budget in bytes: a non-negative int (up to 2^64 - 1)."""
    n = as_int(value)
    if n is None:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}")
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{what} must be a number of bytes from 0 to 2**64 - 1, not {n}")
    return n


def check_bin_ns(value: object) -> int | None:
    """``bin_ns`` of an occupancy query: ``None`` or a positive int of nanoseconds."""
    if value is None:
        return None
    bin_ns = check_ns(value, "bin_ns")
    if bin_ns <= 0:
        raise ValueError(f"bin_ns must be a positive number of nanoseconds, not {bin_ns!r}")
    return bin_ns


def check_table_budget(value: object) -> int:
    """``max_table_bytes`` of an open: ``None`` (the default budget) as 0, else a number of
    bytes from 1 to 2^64 - 1."""
    if value is None:
        return 0
    n = check_budget(value, "max_table_bytes")
    if n == 0:
        raise ValueError(
            "max_table_bytes must be a number of bytes from 1 to 2**64 - 1 (or None "
            "for the default), not 0"
        )
    return n


def check_threads(threads: object, what: str = "threads") -> int:
    """``threads`` checked (an int >= 0) and capped at a value the core accepts."""
    value = as_int(threads)
    if value is None:
        raise TypeError(f"{what} must be an int >= 0, not {type(threads).__name__} {threads!r}")
    if value < 0:
        raise ValueError(f"{what} must be >= 0, not {value}")
    return min(value, MAX_THREADS)


def check_flag(value: object, what: str) -> bool:
    """``value`` if it is a bool (or 0 or 1); a string such as ``"no"`` would otherwise read as
    true."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    number = as_int(value)
    if number in (0, 1):
        return bool(number)
    raise TypeError(f"{what} must be True or False, not {type(value).__name__} {value!r}")


def check_ns(value: object, what: str) -> int:
    """``value`` checked as an int64 number of nanoseconds (an integer, not a float that would
    be truncated)."""
    number = as_int(value)
    if number is None:
        raise TypeError(
            f"{what} must be an int (nanoseconds), not {type(value).__name__} {value!r}"
        )
    if not INT64_MIN <= number <= INT64_MAX:
        raise ValueError(f"{what} must fit in int64 (nanoseconds), not {number}")
    return number
