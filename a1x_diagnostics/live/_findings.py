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
    """Turns the findings of successive evaluations into raised/updated/resolved messages.

    A finding keeps its key while it lasts: when, in one evaluation, the one open finding of an id
    vanishes and one new finding of that id appears, it is that finding under another subject (a
    replica first known by the launcher's process number, later by its controller id once that log
    is read), so it is ``FindingUpdated`` under the key it was raised with, not resolved and raised
    again. ``open`` holds the findings by that key.
    """

    def __init__(self) -> None:
        self.open: dict[str, Finding] = {}
        self._alias: dict[str, str] = {}  # a finding's own key -> the key it was raised with

    def update(self, findings: list[Finding]) -> list[FindingMessage]:
        natural: dict[str, Finding] = {}
        for finding in findings:
            key = finding_key(finding)
            n = 2
            base = key
            while key in natural:
                key = f"{base}#{n}"
                n += 1
            natural[key] = finding
        alias = {k: v for k, v in self._alias.items() if k in natural and v not in natural}
        current = {alias.get(k, k): f for k, f in natural.items()}
        gone: dict[str, list[str]] = {}
        for key, before in self.open.items():
            if key not in current:
                gone.setdefault(before.id, []).append(key)
        new: dict[str, list[str]] = {}
        for key, finding in current.items():
            if key not in self.open:
                new.setdefault(finding.id, []).append(key)
        for finding_id, keys in new.items():
            was = gone.get(finding_id, [])
            if len(keys) == 1 and len(was) == 1:  # one finding of this id, now about another subject
                current[was[0]] = current.pop(keys[0])
                alias[keys[0]] = was[0]
        self._alias = alias
        out: list[FindingMessage] = []
        for key, finding in current.items():
            known = self.open.get(key)
            if known is None:
                out.append(FindingRaised(finding=finding, key=key))
            elif known != finding:
                out.append(FindingUpdated(finding=finding, key=key))
        for key, before in self.open.items():
            if key not in current:
                out.append(FindingResolved(finding_id=before.id, key=key, finding=before))
        self.open = current
        return out

    def clear(self) -> None:
        self.open = {}
        self._alias = {}

    def status(self) -> Status:
        return overall_status(list(self.open.values()))
