"""Apply the ``Fix`` entries of one finding to the TOML: a diff first, then an atomic write.

``plan_fix`` turns a finding's fixes into edits, checks the edited text (it must load, the
finding must be gone, no new critical finding may appear) and shows it as a unified diff.
``apply_fix`` writes that text next to the original and renames it over (same permissions),
after keeping a timestamped backup, and only if the file is still the one that was read; with
nothing to change it writes nothing (no backup), and it first removes what an interrupted earlier
write left (``leftovers``).
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import tomlkit

from a1x_diagnostics.config.cosmos_toml import shown
from a1x_diagnostics.config.edit import REMOVE, Edit, EditError, edit_text
from a1x_diagnostics.config.loader import ConfigError, LoadedConfig, load_config, parse_config
from a1x_diagnostics.config.report import report_for
from a1x_diagnostics.config.rules import LintContext, make_context, run_rules
from a1x_diagnostics.findings import Finding, Report, Severity


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

    @property
    def changed(self) -> bool:
        """False when the file already says what the fix sets (nothing to write)."""
        return bool(self.diff)


@dataclass(frozen=True, slots=True)
class FixResult:
    path: Path
    backup: Path | None  # None: nothing was written
    diff: str
    after: Report
    written: bool = True
    cleaned: tuple[Path, ...] = ()  # what an interrupted earlier write had left, removed now


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


def not_read_as_written(loaded: LoadedConfig) -> str | None:
    """Why Cosmos-RL's parser does not read ``loaded`` as the file says (None when it does), in one clause."""
    if loaded.toml10_problem is not None:
        return f"a1x-tui's TOML 1.0 editor cannot read it ({loaded.toml10_problem})"
    rejected = loaded.cosmos.rejected if loaded.cosmos is not None else None
    if rejected is not None:
        where = f"line {rejected.line}: " if rejected.line else ""
        byte = f"; {rejected.byte}" if rejected.byte else ""
        return (
            f"Cosmos-RL's TOML parser (toml 0.10.2) refuses it ({where}{rejected.problem}{byte}; lint: toml_rejected)"
        )
    if loaded.misreads:
        m = loaded.misreads[0]
        return f"Cosmos-RL's TOML parser (toml 0.10.2) reads {m.path} differently ({shown(m.seen)}; lint: toml_misread)"
    return None


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
    unread = not_read_as_written(loaded)
    if unread is not None:
        raise FixRefused(f"{file}: {unread}; a fix writes only files Cosmos-RL reads as written: correct that first")
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


def _temp_name(target: Path, stamp: str) -> Path:
    return target.with_name(f".{target.name}.{stamp}.tmp")


def _backup_name(target: Path, stamp: str) -> Path:
    return target.with_name(f"{target.name}.{stamp}.bak")


def leftovers(target: Path) -> list[Path]:
    """What an interrupted ``fix --apply`` left beside ``target``, and removes it.

    A write leaves ``.NAME.STAMP.tmp`` until its rename, and makes ``NAME.STAMP.bak`` just before
    the rename (docs/config.md "How fix --apply writes"). So a temporary file still there means its
    rename never happened: it and the backup of the same stamp are unused. A temporary file whose
    writer is still at work is locked (``flock``) and left alone. Returns the paths removed."""
    removed: list[Path] = []
    prefix, suffix = f".{target.name}.", ".tmp"
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix) and n.endswith(suffix)]
    except OSError:
        return removed
    for name in names:
        stamp = name[len(prefix) : -len(suffix)]
        if not _STAMP.fullmatch(stamp):
            continue
        temp = target.parent / name
        try:
            fd = os.open(temp, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a fix writing it right now
        try:
            for path in (_backup_name(target, stamp), temp):  # the backup first: a second kill leaves the temp
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                    removed.append(path)
        finally:
            os.close(fd)
    return removed


_STAMP = re.compile(r"\d{8}-\d{6}(-\d+)?")


def _fsync_dir(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _new_temp(target: Path, now: datetime) -> tuple[int, str]:
    """A locked temporary file whose stamp no backup uses yet: (fd, stamp)."""
    base = f"{now:%Y%m%d-%H%M%S}"
    n = 0
    while True:
        stamp = base if n == 0 else f"{base}-{n}"
        n += 1
        if _backup_name(target, stamp).exists():
            continue
        try:
            fd = os.open(_temp_name(target, stamp), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until the rename is done: leftovers() leaves it alone
        return fd, stamp


def _make_backup(target: Path, backup: Path) -> None:
    """``backup`` holds the original bytes: a second name for the same file (nothing is copied, so
    it is complete at once), or a copy where the file system has no hard links."""
    try:
        os.link(target, backup, follow_symlinks=False)
    except FileExistsError:
        raise FixRefused(f"{backup}: appeared while the fix was being written; run the fix again") from None
    except OSError:
        shutil.copy2(target, backup)
        with open(backup, "rb") as handle:
            os.fsync(handle.fileno())


def write_atomically(target: Path, text: str, *, expected_sha256: str, now: datetime | None = None) -> Path:
    """Replace ``target`` with ``text`` if it still hashes to ``expected_sha256``; return the backup.

    Order, so that a kill at any point leaves the old or the new file, and nothing unused that the
    next write does not remove (``leftovers``): the new text goes to ``.NAME.STAMP.tmp`` (fsync), then
    the backup ``NAME.STAMP.bak`` is made, then the temporary file is renamed over the target."""
    mode = stat.S_IMODE(target.stat().st_mode)
    leftovers(target)
    if _sha256(target) != expected_sha256:
        raise FixRefused(f"{target}: changed since it was read; run the fix again")
    fd, stamp = _new_temp(target, now or datetime.now())
    tmp, backup = _temp_name(target, stamp), _backup_name(target, stamp)
    made_backup = False
    try:
        try:
            data = memoryview(text.encode("utf-8"))
            while data:
                data = data[os.write(fd, data) :]
            os.fchmod(fd, mode)
            os.fsync(fd)
            _make_backup(target, backup)
            made_backup = True
            if _sha256(target) != expected_sha256:  # last look before the rename
                raise FixRefused(f"{target}: changed while the fix was being written; run the fix again")
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            if made_backup:
                backup.unlink(missing_ok=True)
            raise
    finally:
        os.close(fd)
    _fsync_dir(target.parent)
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
    cleaned = tuple(leftovers(target))
    if not plan.changed:  # nothing to write, so no backup either
        return FixResult(path=path, backup=None, diff="", after=plan.after, written=False, cleaned=cleaned)
    backup = write_atomically(target, plan.new_text, expected_sha256=plan.original_sha256, now=now)
    if _sha256(target) != hashlib.sha256(plan.new_text.encode("utf-8")).hexdigest():
        raise FixRefused(f"{path}: the written file does not match the fix; the original is in {backup}")
    return FixResult(path=path, backup=backup, diff=plan.diff, after=plan.after, cleaned=cleaned)
