"""Comments cite the reference the repository carries (docs/reference/README.md, "Citing from code"):
a cited file exists under docs/reference/ and a cited section is one of its numbered headings."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "docs" / "reference"
CODE = [
    p
    for top in ("a1x_tui", "a1x_diagnostics", "a1x_supervisor", "a1x_configs", "benchmarks", "tests", "tools")
    if (REPO / top).is_dir()
    for p in sorted((REPO / top).rglob("*"))
    if p.suffix in {".py", ".c"} and "fixtures" not in p.parts
]
CITED = re.compile(r"docs/reference/([\w.-]+?\.md)(?: §(\d+(?:\.\d+)*)(?:-§(\d+(?:\.\d+)*))?)?")
BARE = re.compile(r"(?<![\w/.-])(?:cosmos-rl|alpamayo-recipe|alpagym|foreign-errors)\.md")
HEADING = re.compile(r"^#+ (\d+(?:\.\d+)*)\.?\s", re.M)


def _sections(name: str) -> set[str]:
    return set(HEADING.findall((REFERENCE / name).read_text(encoding="utf-8")))


def test_every_cited_section_exists() -> None:
    wrong = []
    for path in CODE:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for m in CITED.finditer(line):
                name, first, last = m.groups()
                where = f"{path.relative_to(REPO)}:{n}"
                if not (REFERENCE / name).is_file():
                    wrong.append(f"{where}: no docs/reference/{name}")
                    continue
                for section in filter(None, (first, last)):
                    if section not in _sections(name):
                        wrong.append(f"{where}: {name} has no §{section}")
    assert not wrong, "\n".join(wrong)


def test_citations_name_the_file_by_its_path_in_the_repository() -> None:
    # A bare "cosmos-rl.md" reads as the planning notes beside a developer's checkout, which a clone lacks.
    bare = []
    for path in CODE:
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if BARE.search(line.replace("docs/reference/", "")) and "docs/reference/" not in line:
                bare.append(f"{path.relative_to(REPO)}:{n}: {line.strip()[:100]}")
    assert not bare, "\n".join(bare)
