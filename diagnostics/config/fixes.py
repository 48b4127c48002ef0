"""Apply the ``Fix`` entries of one finding to the TOML: a diff first, then an atomic write.

``plan_fix`` turns a finding's fixes into edits, checks the edited text (it must load, the
finding must be gone, no new critical finding may appear) and shows it as a unified diff.
``apply_fix`` writes that text next to the original and renames it over (same permissions),
after keeping a timestamped backup, and only if the file is still the one that was read.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import tomlkit

from diagnostics.config.edit import REMOVE, Edit, EditError, edit_text
from diagnostics.config.loader import ConfigError, LoadedConfig, load_config, parse_config
from diagnostics.config.report import report_for
from diagnostics.config.rules import LintContext, make_context, run_rules
from diagnostics.findings import Finding, Report, Severity


class FixRefused(Exception):
    """The fix is not applied; ``str()`` is one line saying why and what to do."""


@dataclass(frozen=True, slots=True)
class FixPlan:
    path: Path
    finding: Finding
    edits: list[Edit]
    original_sha256: str
    new_text: str
    diff: str
    after: Report  # the lint report of the edited text


@dataclass(frozen=True, slots=True)
class FixResult:
    path: Path
    backup: Path
    diff: str
    after: Report


def parse_value(text: str) -> Any:
    """A ``--set`` value: TOML syntax when it parses (``0.7``, ``true``, ``["console"]``), else a string."""
    try:
        return tomlkit.parse(f"v = {text}")["v"].unwrap()
    except tomlkit.exceptions.TOMLKitError:
        return text


def unified_diff(old: str, new: str, name: str) -> str:
    """``diff -u`` of two texts, marking a last line without newline the way git does."""
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{name}", tofile=f"b/{name}"
        )
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _edits_for(finding: Finding, values: Mapping[str, Any], file: str) -> list[Edit]:
    paths = {f.path for f in finding.fixes}
    unknown = sorted(set(values) - paths)
    if unknown:
        raise FixRefused(
            f"{file}: --set {unknown[0]}: not a key this fix changes (it changes {', '.join(sorted(paths))})"
        )
    missing = [p for p in finding.data.get("needs_value", []) if p not in values]
    if missing:
        raise FixRefused(
            f"{file}: {finding.id} needs a value only you know for {', '.join(missing)}: "
            f"re-run with --set {missing[0]}=VALUE"
        )
    return [Edit(f.path, values.get(f.path, REMOVE if f.proposed is None else f.proposed)) for f in finding.fixes]


def plan_fix(
    loaded: LoadedConfig,
    finding_id: str,
    *,
    values: Mapping[str, Any] | None = None,
    finding: Finding | None = None,
    context: LintContext | None = None,
) -> FixPlan:
    """The edits, diff and re-lint for ``finding_id`` (from lint, or ``finding`` from a report)."""
    ctx = context or make_context()
    file = str(loaded.path)
    before, _ = run_rules(loaded, ctx)
    if finding is None:
        finding = next((f for f in before if f.id == finding_id), None)
        if finding is None:
            raise FixRefused(f"{file}: lint raises no {finding_id} finding here: nothing to fix")
    if not finding.fixes:
        hint = f": {finding.action}" if finding.action else ""
        raise FixRefused(f"{file}: no TOML change cures {finding.id}{hint}")
    edits = _edits_for(finding, values or {}, file)
    try:
        new_text = edit_text(loaded.text, edits)
    except EditError as exc:
        raise FixRefused(f"{file}: cannot apply {finding.id} safely: {exc}") from None
    try:
        after_cfg = parse_config(new_text, loaded.path)
    except ConfigError as exc:
        raise FixRefused(f"the fixed file would not load: {exc}") from None
    after = report_for(after_cfg, ctx)
    old_critical = {f.id for f in before if f.severity is Severity.CRITICAL}
    new_critical = sorted(
        {f.id for f in after.findings if f.severity is Severity.CRITICAL} - old_critical - {finding.id}
    )
    if new_critical:
        raise FixRefused(f"{file}: the fix would raise new critical finding(s) {', '.join(new_critical)}; not applied")
    lint_ids = {f.id for f in before}
    if finding.id in lint_ids and any(f.id == finding.id for f in after.findings):
        raise FixRefused(f"{file}: {finding.id} would still be raised after the fix; not applied")
    return FixPlan(
        path=loaded.path,
        finding=finding,
        edits=edits,
        original_sha256=loaded.sha256,
        new_text=new_text,
        diff=unified_diff(loaded.text, new_text, loaded.path.name),
        after=after,
    )


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backup_path(target: Path, now: datetime) -> Path:
    stem = f"{target.name}.{now:%Y%m%d-%H%M%S}"
    candidate = target.with_name(f"{stem}.bak")
    n = 1
    while candidate.exists():
        candidate = target.with_name(f"{stem}-{n}.bak")
        n += 1
    return candidate


def write_atomically(target: Path, text: str, *, expected_sha256: str, now: datetime | None = None) -> Path:
    """Replace ``target`` with ``text`` if it still hashes to ``expected_sha256``; return the backup."""
    mode = stat.S_IMODE(target.stat().st_mode)
    if _sha256(target) != expected_sha256:
        raise FixRefused(f"{target}: changed since it was read; run the fix again")
    backup = _backup_path(target, now or datetime.now())
    shutil.copy2(target, backup)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        if _sha256(target) != expected_sha256:  # last look before the rename
            raise FixRefused(f"{target}: changed while the fix was being written; run the fix again")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dir_fd = os.open(target.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return backup


def apply_fix(
    path: Path,
    finding_id: str,
    *,
    expected_sha256: str | None = None,
    values: Mapping[str, Any] | None = None,
    finding: Finding | None = None,
    context: LintContext | None = None,
    now: datetime | None = None,
) -> FixResult:
    """Plan the fix on the file as it is now and write it atomically, keeping a backup.

    ``expected_sha256`` is the hash of the text the user saw (e.g. when the diff was shown);
    the file is not touched if it no longer matches.
    """
    path = Path(path)
    try:
        loaded = load_config(path)
    except ConfigError as exc:
        raise FixRefused(str(exc)) from None
    if expected_sha256 is not None and loaded.sha256 != expected_sha256:
        raise FixRefused(f"{path}: changed since it was read; run the fix again")
    plan = plan_fix(loaded, finding_id, values=values, finding=finding, context=context)
    target = path.resolve()
    backup = write_atomically(target, plan.new_text, expected_sha256=plan.original_sha256, now=now)
    if _sha256(target) != hashlib.sha256(plan.new_text.encode("utf-8")).hexdigest():
        raise FixRefused(f"{path}: the written file does not match the fix; the original is in {backup}")
    return FixResult(path=path, backup=backup, diff=plan.diff, after=plan.after)
