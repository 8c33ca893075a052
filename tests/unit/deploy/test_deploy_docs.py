"""The deployment docs stay in step with the code: condition reasons, chart values, examples."""

from __future__ import annotations

import re

from deploy_support import CHART, DOCS, REPO, values

OPERATIONS = DOCS / "operations.md"
INSTALL = DOCS / "install.md"
# Where the operator decides its condition and event reasons.
REASON_SOURCES = [
    *sorted((REPO / "operator" / "sparkcdc" / "core").glob("reconcile*.py")),
    REPO / "operator" / "sparkcdc" / "controller" / "reconciler.py",
    REPO / "operator" / "sparkcdc" / "controller" / "retain.py",
]
REASON_PATTERNS = [
    r'\(\s*"(?:True|False)",\s*"([A-Z][A-Za-z]+)"',  # condition tuples (status, reason, message)
    r'[(,]\s*"(?:Normal|Warning)",\s*"([A-Z]\w+)"',  # events
    r'^[A-Z_]+ = "([A-Z][a-z]\w+)"$',  # reason constants
    r'return "([A-Z][a-z]\w+)"(?:,|$)',  # pending causes, rollout reasons
    r'reason = "([A-Z]\w+)"',
    r'"reason": "([A-Z]\w+)"',
]


def operator_reasons() -> set[str]:
    source = "\n".join(p.read_text() for p in REASON_SOURCES)
    found: set[str] = set()
    for pattern in REASON_PATTERNS:
        found |= set(re.findall(pattern, source, re.M))
    return found


def test_reasons_are_found_in_the_operator() -> None:
    reasons = operator_reasons()
    # A sample that must be seen, or the patterns no longer match the code.
    assert {"DriverFailed", "MaxRestartsExceeded", "SecretMissing", "SpecChanged", "NoProgress"} <= reasons


def test_every_reason_the_operator_writes_is_documented() -> None:
    doc = OPERATIONS.read_text()
    missing = sorted(r for r in operator_reasons() if f"`{r}`" not in doc)
    assert missing == [], f"docs/operations.md does not explain: {missing}"


def test_every_documented_reason_exists_in_the_operator() -> None:
    doc = OPERATIONS.read_text()
    table = doc.split("## Troubleshooting by condition reason", 1)[1].split("### Other symptoms", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", table, re.M))
    names = {n for pair in documented for n in pair if n}
    source = "\n".join(p.read_text() for p in (REPO / "operator" / "sparkcdc").rglob("*.py"))
    assert len(names) > 15
    stale = sorted(n for n in names if f'"{n}"' not in source)
    assert stale == [], f"docs/operations.md names reasons the operator does not use: {stale}"


def test_install_doc_names_real_values_and_files() -> None:
    doc = INSTALL.read_text()
    top = values()
    for key in re.findall(r"^\| `([a-zA-Z]+)(?:\.[\w.]+)?`", doc, re.M):
        assert key in top, f"docs/install.md names a value the chart lacks: {key}"
    for path in re.findall(r"\]\(\.\./([\w/.-]+)\)", doc):
        assert (REPO / path).exists(), path
    assert "helm show crds" in doc and "--server-side" in doc  # the CRD upgrade path
    assert "helm show crds" in (CHART / "templates" / "NOTES.txt").read_text()


def test_docs_link_to_existing_files() -> None:
    for doc in (
        OPERATIONS,
        INSTALL,
        DOCS / "argocd.md",
        REPO / "spark_images" / "README.md",
        CHART / "README.md",
    ):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.name}: broken link {target}"
