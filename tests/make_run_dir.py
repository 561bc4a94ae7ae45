"""Makes a data-parallel "run directory" of StepStats text dumps from seed 000.

    python tests/make_run_dir.py OUT_DIR [--ranks 8] [--steps 8] [--delayed-rank 5]
                                         [--delay STEP:MICROS ...] [--window-us 2500]

Writes ``OUT_DIR/rank{r}/step{s}.pbtxt`` for every rank and step, plus ``OUT_DIR/manifest.json``
describing what was injected (the tests read the same numbers from :func:`make_run_dir`).

Every dump is the first ``window_us`` of seed 000's LSTM step (all device blocks, each node_stats
block copied verbatim with its outputs and memory, ~290 events, ~100 KB), on a clock of its own,
followed by a Horovod-style gradient exchange on the GPU executor block:

* ``DistributedGradientTape_Allreduce/HorovodAllreduce_grads_0``
  (label ``... = HorovodAllreduce(...)``):
  every rank arrives ``GAP0_US`` after its last compute event; in a delayed step the delayed rank's
  events that start at or after ``CUT_US`` (step-relative) are shifted ``delay`` later, so it
  arrives ``delay`` after the others. As in a real allreduce, the op ends at the same instant on
  every rank: ``COLLECTIVE0_US`` after the last arrival. So the other ranks wait ``delay`` and the
  delayed rank waits 0.
* ``DistributedGradientTape_Allreduce/HorovodAllreduce_grads_1``: all ranks arrive together
  ``GAP1_US`` after grads_0 completes (wait 0 everywhere), ``COLLECTIVE1_US`` long.
* ``Train/Model/GradientDescent/update`` (a ``NoOp``): ``APPLY_US`` after grads_1, the step's last
  event.

Raw clocks: rank ``r``'s dump of step ``s`` starts at
``CLOCK0_US + r * CLOCK_SKEW_US + s * PERIOD_US`` (micros), so ``align=None`` differs per rank,
``align="step_start"`` puts every first event at 0, and
``align={r: (CLOCK0_US + r * CLOCK_SKEW_US) * 1000}`` puts step ``s`` at ``s*PERIOD_US*1000`` ns.

Expected results (all ns; ``T`` = the step length without delay, the same for every step):
step duration of every rank in step s = ``T + delay(s)`` (the others wait, so they end together);
collective wait of a non-delayed rank at grads_0 = ``delay(s)``; compute (duration - wait) of the
delayed rank exceeds the median by exactly ``delay(s)``.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

SEED = Path(__file__).resolve().parent / "data" / "seed000_stepstats.pbtxt"

CLOCK0_US = 1_600_000_000_000_000
CLOCK_SKEW_US = 7_777_777
PERIOD_US = 50_000
CUT_US = 1_500
GAP0_US = 20
COLLECTIVE0_US = 150
GAP1_US = 10
COLLECTIVE1_US = 80
APPLY_GAP_US = 5
APPLY_US = 40

GPU_EXECUTOR = "/job:localhost/replica:0/task:0/device:GPU:0"
ALLREDUCE = "DistributedGradientTape_Allreduce/HorovodAllreduce_grads_{}"
APPLY = "Train/Model/GradientDescent/update"

_TIME_FIELD = re.compile(r"^(\s*)(all_start_micros|scheduled_micros|alloc_micros): (-?\d+)\s*$")


@dataclass
class RunDir:
    """What :func:`make_run_dir` wrote and injected (times in ns unless named ``_us``)."""

    path: str
    ranks: int
    steps: int
    delayed_rank: int
    delays_ns: dict[int, int]  # step -> delay of delayed_rank
    step_ns: int  # T: every rank's step duration in a step without delay
    events_per_trace: int
    clock_offsets_ns: dict[int, int]  # rank -> its clock zero (step s starts at s * period_ns)
    period_ns: int
    files: list[str] = field(default_factory=list)

    def delay_ns(self, step: int) -> int:
        return self.delays_ns.get(step, 0)


def _read_seed_blocks(seed: Path) -> list[tuple[list[str], list[list[str]]]]:
    """Splits a StepStats text dump into (dev_stats header lines, [node_stats block lines])."""
    blocks: list[tuple[list[str], list[list[str]]]] = []
    header: list[str] | None = None
    nodes: list[list[str]] = []
    current: list[str] | None = None
    for line in seed.read_text().splitlines():
        if line == "dev_stats {":
            header, nodes = [], []
        elif line == "}":
            blocks.append((header, nodes))
            header = None
        elif line == "  node_stats {":
            current = [line]
        elif line == "  }":
            current.append(line)
            nodes.append(current)
            current = None
        elif current is not None:
            current.append(line)
        else:
            header.append(line)
    return blocks


def _start_us(node: list[str]) -> int:
    for line in node:
        m = _TIME_FIELD.match(line)
        if m and m.group(2) == "all_start_micros":
            return int(m.group(3))
    raise ValueError("node_stats without all_start_micros")


def _end_us(node: list[str]) -> int:
    start = _start_us(node)
    for line in node:
        if line.strip().startswith("all_end_rel_micros:"):
            return start + int(line.split(":")[1])
    return start


def _shifted(node: list[str], shift_us: int) -> list[str]:
    out = []
    for line in node:
        m = _TIME_FIELD.match(line)
        if m:
            line = f"{m.group(1)}{m.group(2)}: {int(m.group(3)) + shift_us}"
        out.append(line)
    return out


def _node(name: str, label: str, start_us: int, duration_us: int) -> list[str]:
    return [
        "  node_stats {",
        f'    node_name: "{name}"',
        f"    all_start_micros: {start_us}",
        "    op_start_rel_micros: 1",
        f"    op_end_rel_micros: {max(duration_us - 1, 1)}",
        f"    all_end_rel_micros: {duration_us}",
        f'    timeline_label: "{label}"',
        f"    scheduled_micros: {start_us - 1}",
        "  }",
    ]


def make_run_dir(
    out: str | Path,
    *,
    ranks: int = 8,
    steps: int = 8,
    delayed_rank: int = 5,
    delays_us: dict[int, int] | None = None,
    window_us: int = 2_500,
    seed: Path = SEED,
) -> RunDir:
    """Writes ``out/rank{r}/step{s}.pbtxt`` and ``out/manifest.json``; returns the manifest."""
    delays_us = {2: 3_000, 6: 1_250} if delays_us is None else dict(delays_us)
    out = Path(out)
    blocks = _read_seed_blocks(seed)
    t0 = min(_start_us(n) for _, nodes in blocks for n in nodes)
    kept = [(h, [n for n in nodes if _start_us(n) - t0 < window_us]) for h, nodes in blocks]
    compute_end_rel = max(_end_us(n) - t0 for _, nodes in kept for n in nodes)
    assert compute_end_rel > CUT_US
    gpu_block = next(i for i, (h, _) in enumerate(kept) if f'  device: "{GPU_EXECUTOR}"' in h)

    arrival0 = compute_end_rel + GAP0_US
    files = []
    for r in range(ranks):
        for s in range(steps):
            delay = delays_us.get(s, 0) if r == delayed_rank else 0
            step_delay = delays_us.get(s, 0)
            base = CLOCK0_US + r * CLOCK_SKEW_US + s * PERIOD_US  # this dump's clock at rel 0
            end0 = arrival0 + step_delay + COLLECTIVE0_US  # same instant on every rank
            arrival1 = end0 + GAP1_US
            apply_start = arrival1 + COLLECTIVE1_US + APPLY_GAP_US
            extra = [
                _node(
                    ALLREDUCE.format(0),
                    f"{ALLREDUCE.format(0)} = HorovodAllreduce(Train/Model/gradients/AddN_3)",
                    base + arrival0 + delay,
                    end0 - (arrival0 + delay),
                ),
                _node(
                    ALLREDUCE.format(1),
                    f"{ALLREDUCE.format(1)} = HorovodAllreduce(Train/Model/gradients/AddN_4)",
                    base + arrival1,
                    COLLECTIVE1_US,
                ),
                _node(APPLY, f"{APPLY} = NoOp()", base + apply_start, APPLY_US),
            ]
            lines: list[str] = []
            for i, (header, nodes) in enumerate(kept):
                lines.append("dev_stats {")
                lines.extend(header)
                for n in nodes:
                    rel = _start_us(n) - t0
                    lines.extend(_shifted(n, base - t0 + (delay if rel >= CUT_US else 0)))
                if i == gpu_block:
                    for n in extra:
                        lines.extend(n)
                lines.append("}")
            path = out / f"rank{r}" / f"step{s}.pbtxt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("\n".join(lines) + "\n")
            files.append(str(path))

    step_us = arrival0 + COLLECTIVE0_US + GAP1_US + COLLECTIVE1_US + APPLY_GAP_US + APPLY_US
    run = RunDir(
        path=str(out),
        ranks=ranks,
        steps=steps,
        delayed_rank=delayed_rank,
        delays_ns={s: d * 1000 for s, d in delays_us.items()},
        step_ns=step_us * 1000,
        events_per_trace=sum(len(n) for _, n in kept) + 3,
        clock_offsets_ns={r: (CLOCK0_US + r * CLOCK_SKEW_US) * 1000 for r in range(ranks)},
        period_ns=PERIOD_US * 1000,
        files=files,
    )
    (out / "manifest.json").write_text(json.dumps(asdict(run), indent=1))
    return run


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--delayed-rank", type=int, default=5)
    p.add_argument(
        "--delay",
        action="append",
        default=None,
        metavar="STEP:MICROS",
        help="delay the delayed rank by MICROS in STEP (repeatable; default 2:3000 6:1250)",
    )
    p.add_argument("--window-us", type=int, default=2_500)
    a = p.parse_args(argv)
    delays = None
    if a.delay:
        delays = {int(k): int(v) for k, v in (d.split(":") for d in a.delay)}
    run = make_run_dir(
        a.out,
        ranks=a.ranks,
        steps=a.steps,
        delayed_rank=a.delayed_rank,
        delays_us=delays,
        window_us=a.window_us,
    )
    print(f"wrote {len(run.files)} dumps ({run.events_per_trace} events each) to {run.path}")


if __name__ == "__main__":
    main()
