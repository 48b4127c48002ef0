"""docs/findings.md documents every catalog id, and every detector id is in the catalog."""

from __future__ import annotations

import re
from pathlib import Path

from diagnostics.catalog import CATALOG
from diagnostics.detectors import REGISTRY

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
