"""docs/findings.md documents every catalog id, and every detector id is in the catalog."""

from __future__ import annotations

import re
from pathlib import Path

from a1x_diagnostics.catalog import CATALOG
from a1x_diagnostics.detectors import REGISTRY

DOC = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def test_every_catalog_id_has_a_section() -> None:
    headings = set(re.findall(r"^### `([a-z0-9_]+)` — (.+)$", DOC.read_text(), flags=re.M))
    documented = {fid for fid, _ in headings}
    missing = sorted(set(CATALOG) - documented)
    assert not missing, f"docs/findings.md lacks sections for {missing}"
    assert not documented - set(CATALOG), "docs/findings.md names ids outside the catalog"
    for fid, title in headings:
        assert title.strip() == CATALOG[fid].title, fid


def test_every_log_finding_id_has_a_detector() -> None:
    log_ids = {e.id for e in CATALOG.values() if "logs" in e.origins}
    assert log_ids <= set(REGISTRY), sorted(log_ids - set(REGISTRY))


def test_every_id_names_the_modules_that_raise_it_and_they_do() -> None:
    import re as _re

    root = DOC.parents[1]
    sections = _re.split(r"^### `", DOC.read_text(), flags=_re.M)[1:]
    documented = {}
    for section in sections:
        fid = section.split("`", 1)[0]
        m = _re.search(r"^- \*\*Module\*\*: (.+)$", section, flags=_re.M)
        assert m, f"docs/findings.md: {fid} names no module"
        documented[fid] = tuple(_re.findall(r"`([^`]+)`", m.group(1)))
    for fid, entry in CATALOG.items():
        assert entry.modules, fid
        assert documented[fid] == entry.modules, fid
        for module in entry.modules:
            source = (root / module).read_text()
            assert f'"{fid}"' in source or f"'{fid}'" in source, f"{module} does not raise {fid}"
        detector = REGISTRY.get(fid)
        if detector is not None:
            assert entry.modules[0] == detector.module.replace(".", "/") + ".py", fid
