"""A progress line on stderr for long opens.

The native parse is a single call that releases the GIL and reports nothing until it returns, so
the line cannot show a fraction done. It shows what is known: the input size, the elapsed time
and, once the work is over, the real throughput (bytes / elapsed). Phases that do know how far
they are (reading a gzip stream, writing a cache) call :meth:`Progress.update` and get a bar.

Nothing is printed for work that finishes within ``delay`` seconds (1 s by default). On a
terminal the line is redrawn in place; elsewhere (a log file, a pipe) only the final line is
written, and only if the work took longer than ``delay``.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO

_MB = 1e6
_BAR_WIDTH = 24


def _format_rate(mb_per_s: float) -> str:
    return f"{mb_per_s:.1f}" if mb_per_s < 10 else f"{mb_per_s:.0f}"


def _format_size(n_bytes: float) -> str:
    if n_bytes >= 1e9:
        return f"{n_bytes / 1e9:.2f} GB"
    return f"{n_bytes / _MB:.1f} MB"


class Progress:
    """Context manager drawing ``label  size  [bar]  elapsed  MB/s`` on ``stream``.

    Args:
        label: what is being done ("parsing trace.pbtxt").
        total_bytes: the input size the throughput is computed from.
        enabled: False makes every method a no-op.
        delay: seconds before anything is shown.
        stream: where to write (stderr by default).
        interval: seconds between redraws on a terminal.
    """

    def __init__(
        self,
        label: str,
        total_bytes: int,
        *,
        enabled: bool = True,
        delay: float = 1.0,
        stream: TextIO | None = None,
        interval: float = 0.2,
    ) -> None:
        self.label = label
        self.total_bytes = max(int(total_bytes), 0)
        self.enabled = enabled
        self.delay = delay
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self.done_bytes: int | None = None  # None: the current phase cannot say how far it is
        self._start = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drawn = False
        self._lock = threading.Lock()
        self.elapsed = 0.0

    # -- lifecycle ------------------------------------------------------------------------------
    def __enter__(self) -> Progress:
        self._start = time.perf_counter()
        if self.enabled and self._is_terminal():
            self._thread = threading.Thread(
                target=self._run, name="tracecore-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.elapsed = time.perf_counter() - self._start
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if not self.enabled:
            return
        with self._lock:
            if self._drawn:
                self.stream.write("\r\033[K")
            if self.elapsed >= self.delay:
                status = "failed after" if exc_type is not None else "done in"
                self.stream.write(
                    f"{self.label}: {_format_size(self.total_bytes)} {status} {self.elapsed:.1f} s"
                    f" ({_format_rate(self.total_bytes / _MB / self.elapsed)} MB/s)\n"
                )
            self.stream.flush()

    def update(self, done_bytes: int | None) -> None:
        """Reports how many of ``total_bytes`` are done (None: the phase cannot tell)."""
        self.done_bytes = done_bytes

    # -- drawing --------------------------------------------------------------------------------
    def _is_terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except ValueError:  # closed stream
            return False

    def line(self, elapsed: float) -> str:
        """The progress line for ``elapsed`` seconds in (no newline)."""
        size = _format_size(self.total_bytes)
        done = self.done_bytes
        if done is not None and self.total_bytes > 0:
            fraction = min(max(done / self.total_bytes, 0.0), 1.0)
            filled = round(fraction * _BAR_WIDTH)
            bar = "#" * filled + "-" * (_BAR_WIDTH - filled)
            rate = done / _MB / elapsed if elapsed > 0 else 0.0
            return (
                f"{self.label}: [{bar}] {fraction * 100:3.0f}% of {size}  {elapsed:.1f} s"
                f"  {_format_rate(rate)} MB/s"
            )
        # No fraction is known while the native parser runs, so no bar: the size over the time so
        # far is an upper bound of the throughput (the work is not over yet).
        rate = self.total_bytes / _MB / elapsed if elapsed > 0 else 0.0
        return f"{self.label}: {size}  {elapsed:.1f} s  (<= {_format_rate(rate)} MB/s)"

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            with self._lock:
                if self._stop.is_set():
                    break
                self.stream.write("\r\033[K" + self.line(time.perf_counter() - self._start))
                self.stream.flush()
                self._drawn = True
            self._stop.wait(self.interval)
