"""docs/architecture.md is the design the code cites: every "§N", "§N.M" and "§3 rule M" in the
code, tests, benchmarks and docs must name a section or rule that exists there, and the layout it
draws must match the packages on disk."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "operator" / "sparkcdc"
CITATION = re.compile(r"§(\d+)(?:\.(\d+))?(?: rules? ((?:\d+(?:–\d+)?)(?:(?:, | and )\d+(?:–\d+)?)*))?")


def sections(text: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", text, re.M)}


def rules(text: str) -> set[int]:
    body = text.split("## 3. ", 1)[1].split("\n## ", 1)[0]
    return {int(m.group(1)) for m in re.finditer(r"^(\d+)\. \*\*", body, re.M)}


def cited_rules(text: str) -> set[int]:
    found: set[int] = set()
    for part in re.split(r", | and ", text):
        low, _, high = part.partition("–")
        found.update(range(int(low), int(high or low) + 1))
    return found


def citing_files() -> list[Path]:
    files = [p for d in ("operator", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    files += [p for p in (ROOT / "docs").glob("*.md") if p != DOC] + [ROOT / "README.md"]
    return [p for p in files if p != Path(__file__).resolve()]


def test_every_citation_resolves() -> None:
    text = DOC.read_text(encoding="utf-8")
    known_sections, known_rules = sections(text), rules(text)
    assert {"1", "1.1", "1.2", "2", "3", "3.1", "4", "5", "6"} <= known_sections
    assert known_rules == set(range(1, max(known_rules) + 1))
    unresolved = []
    for path in citing_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITATION.finditer(line):
                section = m.group(1) + (f".{m.group(2)}" if m.group(2) else "")
                missing_rules = cited_rules(m.group(3)) - known_rules if m.group(3) else set()
                if section not in known_sections or missing_rules or (m.group(3) and section != "3"):
                    unresolved.append(f"{path.relative_to(ROOT)}:{number}: {m.group(0)}")
    assert not unresolved, "citations docs/architecture.md does not have:\n" + "\n".join(unresolved)


def test_the_old_design_note_is_not_cited() -> None:
    """The design started as a note outside the repository; the code cites the repository's file."""
    stale = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in citing_files()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "DESIGN §" in line or "DESIGN.md" in line
    ]
    assert not stale, stale


def test_the_layout_names_every_package() -> None:
    layout = DOC.read_text(encoding="utf-8").split("## 5. Layout", 1)[1].split("\n## ", 1)[0]
    packages = sorted(
        p.parent.relative_to(PACKAGE) for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE
    )
    missing = [str(p) for p in packages if not re.search(rf"^\s*{re.escape(p.name)}/", layout, re.M)]
    assert not missing, f"docs/architecture.md §5 does not show: {missing}"


def test_every_package_says_what_it_is() -> None:
    """A docstring of a few lines at least: a package named only by its name tells a newcomer nothing."""
    thin = []
    for init in PACKAGE.rglob("__init__.py"):
        text = init.read_text(encoding="utf-8")
        m = re.match(r'\s*"""(.*?)"""', text, re.S)
        if m is None or len(m.group(1).split()) < 12:
            thin.append(str(init.relative_to(ROOT)))
    assert not thin, thin
