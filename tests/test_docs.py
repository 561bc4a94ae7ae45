"""The documentation is the newcomer's current truth: its links resolve, the README opens with
the two commands, and no page names a path of the machine it was written on or talks to the
team.

Rule for paths: no page names a directory of a particular machine (`/work/`, `/root/`,
`/home/`, `/Users/`, `/opt/`); `/tmp/` appears only inside code (a code block or an inline code
span), as the scratch location of a command.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_START = (
    "# tracecore\n\n```\n"
    "pip install . && tracecore info --sample\n"
    'pip install ".[test]" && pytest\n'
    "```\n"
)


def _pages() -> list[Path]:
    pages = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "bench" / "README.md",
        ROOT / "bench" / "NOTES.md",
        ROOT / "fuzz" / "README.md",
    ]
    pages += sorted((ROOT / "docs").glob("*.md"))
    return [p for p in pages if p.exists()]


PAGES = _pages()
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
INDENTED = re.compile(r"(?:^\n)(?:^(?: {4}|\t).*\n?)+", re.MULTILINE)
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
MACHINE_DIRS = re.compile(r"(?<![\w.~-])/(?:work|root|home|Users|opt)/")
TMP = re.compile(r"(?<![\w.~-])/tmp/")


def _prose(text: str) -> str:
    """``text`` without its code: fenced and indented blocks, inline code spans."""
    text = FENCE.sub("", text)
    text = INDENTED.sub("\n", text)
    return INLINE_CODE.sub("", text)


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors for the headings of ``page``."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # https:, mailto:, ...
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.name}")
    assert not broken, f"{_rel(page)}: {broken}"


def test_readme_starts_with_the_two_commands() -> None:
    assert (ROOT / "README.md").read_text(encoding="utf-8").startswith(README_START)


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_machine_paths(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [m.group(0) for m in MACHINE_DIRS.finditer(text)]
    found += [m.group(0) for m in TMP.finditer(_prose(text))]
    assert not found, f"{_rel(page)} names paths of a machine: {found}"


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_no_notes_to_the_team(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\bthe lead\b", text, re.IGNORECASE), _rel(page)


def test_readme_names_no_issue() -> None:
    """History (which issue asked for what) belongs to bench/NOTES.md and the commit log."""
    assert not re.search(
        r"\bissues? \d+", (ROOT / "README.md").read_text(encoding="utf-8"), re.IGNORECASE
    )


def test_the_rules_catch_what_they_should() -> None:
    assert MACHINE_DIRS.search("see /work/main") and MACHINE_DIRS.search("(/root/.cache)")
    assert not MACHINE_DIRS.search("~/.cache/tracecore or run/rank0/step1.pbtxt or a/work/b")
    assert TMP.search(_prose("files go to /tmp/x"))
    assert not TMP.search(_prose("run `make_trace.py --out /tmp/x`\n\n```\nls /tmp/y\n```\n"))
    assert LINK.findall("[a](docs/x.md#y) ![img](p.png) `[b](c)`") == ["docs/x.md#y", "p.png", "c"]
    assert LINK.findall(_prose("`[b](c)`")) == []
