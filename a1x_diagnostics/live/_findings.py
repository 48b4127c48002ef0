"""Open findings across evaluations: raised once, updated as evidence grows, resolved when cleared."""

from __future__ import annotations

from a1x_diagnostics.findings import Finding, Status, overall_status
from a1x_diagnostics.live.messages import FindingRaised, FindingResolved, FindingUpdated

FindingMessage = FindingRaised | FindingUpdated | FindingResolved

SUBJECT_KEYS = ("subject", "replica", "stage")
"""``Finding.data`` keys that name what a finding is about (``policy_0``, ``convert``...)."""


def finding_key(finding: Finding) -> str:
    """``id`` alone, or ``id@subject`` when the finding names its replica or stage in ``data``.

    Two replicas dying are two findings; one replica's growing evidence is one finding.
    """
    for name in SUBJECT_KEYS:
        value = finding.data.get(name)
        if value not in (None, ""):
            return f"{finding.id}@{value}"
    return finding.id


class FindingTracker:
    """Turns the findings of successive evaluations into raised/updated/resolved messages."""

    def __init__(self) -> None:
        self.open: dict[str, Finding] = {}

    def update(self, findings: list[Finding]) -> list[FindingMessage]:
        current: dict[str, Finding] = {}
        for finding in findings:
            key = finding_key(finding)
            n = 2
            base = key
            while key in current:
                key = f"{base}#{n}"
                n += 1
            current[key] = finding
        out: list[FindingMessage] = []
        for key, finding in current.items():
            old = self.open.get(key)
            if old is None:
                out.append(FindingRaised(finding=finding, key=key))
            elif old != finding:
                out.append(FindingUpdated(finding=finding, key=key))
        for key, old in self.open.items():
            if key not in current:
                out.append(FindingResolved(finding_id=old.id, key=key, finding=old))
        self.open = current
        return out

    def clear(self) -> None:
        self.open = {}

    def status(self) -> Status:
        return overall_status(list(self.open.values()))
