"""What a far side's stream said is open, so that a reconnection repeats nothing and misses nothing.

After a lost connection the far side reads the run again and says every open finding again: those
already said are dropped (or said as updated when they changed), and once it has read the run and
judged it (``history_complete``, then the findings, then the ``outcome`` of its first evaluation) the
findings it did not say again are resolved. Used by ``watch HOST:PATH``
and the dashboard's remote feed alike.
"""

from __future__ import annotations

from typing import Any


class FindingBook:
    """What the stream said is open, so that a reconnection repeats nothing and misses nothing."""

    def __init__(self) -> None:
        self.open: dict[str, dict[str, Any]] = {}
        self.outcome: dict[str, Any] | None = None
        self.history = False
        self.ended: dict[str, Any] | None = None
        self.files: set[str] = set()
        self._again: set[str] | None = None  # keys said again by the far side since the reconnection
        self._read_again = False  # ... and it has read the run again (its first evaluation comes next)

    def take(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """The lines to print for one object of the far side's stream."""
        kind = obj["type"]
        again = self._again
        if kind == "connection":
            if obj.get("state") == "lost":
                self._again, self._read_again = set(), False
            return [obj]
        if kind == "file_appeared":
            seen = obj.get("file") in self.files
            self.files.add(str(obj.get("file")))
            return [] if seen and again is not None else [obj]
        if kind in ("finding_raised", "finding_updated"):
            key, finding = obj["key"], obj["finding"]
            known = self.open.get(key)
            self.open[key] = finding
            if again is not None:
                again.add(key)
                if known == finding:
                    return []
                if known is not None:
                    return [{**obj, "type": "finding_updated"}]
            return [obj]
        if kind == "finding_resolved":
            self.open.pop(obj["key"], None)
            return [obj]
        if kind == "run_switched":
            self.open.clear()
            return [obj]
        if kind == "history_complete":
            if again is None:
                self.history = True
                return [obj]
            self._read_again = True  # said once already
            return []
        if kind == "outcome":
            out = self._read_again_done(obj) if again is not None and self._read_again else []
            repeated = again is not None and self.outcome == obj.get("outcome")
            self.outcome = obj.get("outcome")
            return out if repeated else [*out, obj]
        if kind == "ended":
            self.ended = obj
        return [obj]

    def _read_again_done(self, obj: dict[str, Any]) -> list[dict[str, Any]]:
        """The far side's first evaluation after a reconnection is over (its outcome comes last): the
        findings it did not say again went while the link was down."""
        again = self._again or set()
        self._again, self._read_again = None, False
        out = []
        for key in [k for k in self.open if k not in again]:
            finding = self.open.pop(key)
            out.append({"type": "finding_resolved", "time": obj.get("time"), "key": key,
                        "finding_id": finding.get("id")})
        return out
    def exit_code(self) -> int:
        """The far side's, when its ``ended`` line came; else the open findings' status, as ``watch``."""
        from a1x_diagnostics.findings import Finding, Outcome, Status, overall_status

        if self.ended is not None and isinstance(self.ended.get("exit_code"), int):
            return int(self.ended["exit_code"])
        if not self.history:
            return Status.UNKNOWN.exit_code
        status = overall_status([Finding.model_validate(f) for f in self.open.values()])
        state = (self.outcome or {}).get("state")
        if status is Status.OK and state is not None and state not in (Outcome.COMPLETED.value, Outcome.RUNNING.value):
            status = Status.WARNING
        return status.exit_code
