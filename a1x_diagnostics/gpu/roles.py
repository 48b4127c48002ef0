"""Which part of the pipeline each GPU process is: the role join.

Sources, best first:

1. **Our supervisor's PIDs** (``known_pids``: pid -> label such as ``controller``, ``policy_0``,
   ``train``, ``convert``). A GPU process that is, or descends from, a known PID belongs to the run;
   when the known ancestor is a whole stage (the ``cosmos-rl`` launcher) the replica's own
   environment names it more precisely. Any other process is "not part of this run", even one that
   looks like Cosmos-RL: that is the vLLM engine a killed run left behind.
2. **Attached to a foreign run** (no ``known_pids``): the process's (or an ancestor's) environment
   and command line. docs/reference/cosmos-rl.md §2.5: ``launch_replica.sh`` sets ``COSMOS_ROLE`` = ``Controller`` /
   ``Policy`` / ``Rollout`` / ``Reference`` and the replica's ``CUDA_VISIBLE_DEVICES`` slice; §1: the
   controller runs ``cosmos_rl.dispatcher.run_web_panel``, replicas ``launch_replica.sh --type <role>``
   → ``torchrun … -m cosmos_rl.policy.train`` / ``cosmos_rl.rollout.rollout_entry``. The replica
   index comes from the log file the launcher points stdout at (``policy_<i>.log``, recipe §8: "stdout
   and stderr of each process go to its file"), else from GPU order (§2.3: replicas take contiguous
   GPU slices in order).

A Cosmos-RL replica process whose parent is PID 1 lost its torchrun and launcher: it is left from a
killed run and counted as not part of this one. NVML reports host PIDs; in a container with its own
PID namespace they are not in ``/proc``: such processes get ``RoleKind.HIDDEN`` and the join says so.
Only the environment variables named in ``ENV_KEYS`` are ever read into memory; the rest (tokens,
keys) are dropped at once.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from a1x_diagnostics.gpu.samples import FOREIGN_LABEL, HIDDEN_LABEL, ProcessRole, RoleKind

ENV_KEYS = (
    "COSMOS_ROLE",
    "CUDA_VISIBLE_DEVICES",
    "LOCAL_RANK",
    "RANK",
    "TORCHELASTIC_RUN_ID",
    "COSMOS_CONTROLLER_HOST",
)
_MAX_DEPTH = 8
_COMMAND_CHARS = 200

_COSMOS_ROLE = {
    "controller": RoleKind.CONTROLLER,
    "policy": RoleKind.POLICY,
    "rollout": RoleKind.ROLLOUT,
    "reference": RoleKind.REFERENCE,
}
# (substring of the joined command line, kind). docs/reference/cosmos-rl.md §1 table.
_COSMOS_MODULES = (
    ("cosmos_rl.dispatcher.run_web_panel", RoleKind.CONTROLLER),
    ("cosmos_rl.policy.train", RoleKind.POLICY),
    ("cosmos_rl.rollout.rollout_entry", RoleKind.ROLLOUT),
    ("cosmos_rl.reference.reference_entry", RoleKind.REFERENCE),
)
_REPLICA_SCRIPT = re.compile(r"launch_replica\.sh\b.*?--type[= ](policy|rollout|reference)\b")
_LAUNCHER = re.compile(r"(?:^|[/\s])cosmos-rl(?:\s|$)|cosmos_rl\.launcher\.launch_all")
# Our stages' programs (docs/reference/alpamayo-recipe.md §1 table) -> stage name.
_STAGE_SCRIPTS = (
    ("convert_release_config_to_training.py", "convert"),
    ("download_pai.py", "download"),
    ("curate_pai_samples.py", "curate"),
    ("convert_cosmos_rl_checkpoint.py", "export"),
    ("rl_checkpoint_inference", "eval"),
)
_LOG_FILE = re.compile(r"(?:^|/)(?:(policy|rollout|reference)_(\d+)|(controller))\.log$")
_REPLICA_LABEL = re.compile(r"^(policy|rollout|reference)_(\d+)$")


@dataclass(frozen=True, slots=True)
class ProcInfo:
    """What /proc says about one process (only what the join needs)."""

    pid: int
    ppid: int | None
    cmdline: tuple[str, ...]
    environ: Mapping[str, str]  # only ENV_KEYS; empty when unreadable (another user's process)
    user: str | None = None
    create_time: float | None = None
    stdout: str | None = None  # where fd 1 points (a log file for Cosmos-RL processes)

    @property
    def command(self) -> str:
        text = " ".join(self.cmdline)
        return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 1] + "…"


class ProcessInspector(Protocol):
    def info(self, pid: int) -> ProcInfo | None:
        """``None`` when the pid is not in this PID namespace (or has exited)."""

    def create_time(self, pid: int) -> float | None: ...


class PsutilInspector:
    """Reads /proc through psutil; every vanished or forbidden process is handled, never raised."""

    def info(self, pid: int) -> ProcInfo | None:
        import psutil

        try:
            proc = psutil.Process(pid)
            with proc.oneshot():
                ppid = proc.ppid()
                create = proc.create_time()
                try:
                    cmdline = tuple(proc.cmdline())
                except psutil.AccessDenied:
                    cmdline = (proc.name(),)
                try:
                    user: str | None = proc.username()
                except (psutil.AccessDenied, KeyError):
                    user = None
            environ = _pick_env(proc)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            return None
        except psutil.AccessDenied:
            return ProcInfo(pid=pid, ppid=None, cmdline=(), environ={})
        stdout = None
        with contextlib.suppress(OSError):
            stdout = os.readlink(f"/proc/{pid}/fd/1")
        return ProcInfo(
            pid=pid, ppid=ppid, cmdline=cmdline, environ=environ, user=user, create_time=create, stdout=stdout
        )

    def create_time(self, pid: int) -> float | None:
        import psutil

        try:
            return float(psutil.Process(pid).create_time())
        except (psutil.Error, OSError):
            return None


def _pick_env(proc: object) -> dict[str, str]:
    import psutil

    try:
        env = proc.environ()  # type: ignore[attr-defined]
    except (psutil.Error, OSError):
        return {}
    return {k: env[k] for k in ENV_KEYS if k in env}


@dataclass(frozen=True, slots=True)
class RoleJoin:
    """Roles for the GPU processes of one snapshot, and what the join could not see."""

    roles: dict[int, ProcessRole] = field(default_factory=dict)
    hidden: tuple[int, ...] = ()
    note: str | None = None  # one line when PID namespaces hide processes


def kind_of_label(label: str) -> RoleKind:
    """``policy_0`` -> POLICY, ``controller`` -> CONTROLLER, ``launcher`` -> LAUNCHER, else a stage."""
    m = _REPLICA_LABEL.match(label)
    if m:
        return RoleKind(m.group(1))
    if label == "controller":
        return RoleKind.CONTROLLER
    if label in ("launcher", "cosmos-rl"):
        return RoleKind.LAUNCHER
    return RoleKind.STAGE


@dataclass(slots=True)
class _Guess:
    kind: RoleKind
    index: int | None = None
    source: str = "environment"
    stage: str | None = None


class RoleResolver:
    """Joins PIDs to roles, caching /proc reads per (pid, start time) across calls.

    ``known_pids`` is a mapping, or a callable returning one (re-read on every ``join``), from our
    supervisor: pid -> label (``None`` from the callable: not known now, join as for a foreign run).
    ``controller_host``, when given, is this run's ``COSMOS_CONTROLLER_HOST``;
    replicas of another controller are not part of this run.
    """

    def __init__(
        self,
        known_pids: Mapping[int, str] | Callable[[], Mapping[int, str] | None] | None = None,
        *,
        inspector: ProcessInspector | None = None,
        controller_host: str | None = None,
    ) -> None:
        self._known = known_pids
        self._inspector: ProcessInspector = inspector or PsutilInspector()
        self._controller_host = controller_host
        self._cache: dict[int, ProcInfo] = {}

    def known(self) -> Mapping[int, str] | None:
        return self._known() if callable(self._known) else self._known

    def _info(self, pid: int) -> ProcInfo | None:
        cached = self._cache.get(pid)
        if cached is not None:
            if cached.create_time is not None and self._inspector.create_time(pid) == cached.create_time:
                return cached
            del self._cache[pid]  # exited, or the pid was reused
        info = self._inspector.info(pid)
        if info is not None:
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[pid] = info
        return info

    def _chain(self, info: ProcInfo) -> list[ProcInfo]:
        chain = [info]
        seen = {info.pid}
        while len(chain) < _MAX_DEPTH:
            ppid = chain[-1].ppid
            if ppid is None or ppid <= 1 or ppid in seen:
                break
            parent = self._info(ppid)
            if parent is None:
                break
            chain.append(parent)
            seen.add(ppid)
        return chain

    def join(self, pids: Iterable[int]) -> RoleJoin:
        known = self.known()
        roles: dict[int, ProcessRole] = {}
        hidden: list[int] = []
        unindexed: list[tuple[int, _Guess, ProcInfo]] = []
        for pid in sorted(set(pids)):
            info = self._info(pid)
            if info is None:
                hidden.append(pid)
                roles[pid] = ProcessRole(
                    label=HIDDEN_LABEL,
                    kind=RoleKind.HIDDEN,
                    source="procfs",
                    detail="NVML reports this PID but /proc does not show it",
                )
                continue
            chain = self._chain(info)
            guess = _guess(chain)
            if known is not None:
                roles[pid] = self._supervised(info, chain, guess, known)
            else:
                role = self._attached(info, guess)
                if role is None and guess is not None:
                    unindexed.append((pid, guess, info))
                    continue
                roles[pid] = role or _foreign(info, None)
        _index_by_gpu_order(unindexed, roles)
        return RoleJoin(roles=roles, hidden=tuple(hidden), note=_hidden_note(hidden, len(roles)))

    def _supervised(
        self, info: ProcInfo, chain: list[ProcInfo], guess: _Guess | None, known: Mapping[int, str]
    ) -> ProcessRole:
        for node in chain:
            label = known.get(node.pid)
            if label is None:
                continue
            kind = kind_of_label(label)
            # The supervisor knows the cosmos-rl launcher; the replica's environment says which one.
            if (
                kind in (RoleKind.STAGE, RoleKind.LAUNCHER)
                and guess is not None
                and guess.kind.replica
                and guess.index is not None
            ):
                replica = f"{guess.kind.value}_{guess.index}"
                return _role(info, replica, guess.kind, f"supervisor ({label}) + {guess.source}")
            return _role(info, label, kind, "supervisor")
        detail = "not started by this run's supervisor"
        if guess is not None and guess.kind is not RoleKind.STAGE:
            detail = (
                f"a Cosmos-RL {guess.kind.value} process that this run's supervisor did not start "
                "(left from an earlier run?)"
            )
        return _foreign(info, detail)

    def _attached(self, info: ProcInfo, guess: _Guess | None) -> ProcessRole | None:
        if guess is None:
            return None
        if guess.kind is RoleKind.STAGE and guess.stage:
            return _role(info, guess.stage, RoleKind.STAGE, "command line")
        if guess.kind.replica or guess.kind is RoleKind.REFERENCE:
            if info.ppid in (0, 1):
                return _foreign(
                    info,
                    f"a Cosmos-RL {guess.kind.value} process whose parent is PID 1: its torchrun and launcher "
                    "are gone (left from a killed run)",
                )
            host = info.environ.get("COSMOS_CONTROLLER_HOST")
            if self._controller_host and host and host != self._controller_host:
                return _foreign(info, f"a Cosmos-RL {guess.kind.value} of another run (controller {host})")
        if guess.kind is RoleKind.CONTROLLER:
            return _role(info, "controller", RoleKind.CONTROLLER, guess.source)
        if guess.kind is RoleKind.LAUNCHER:
            return _role(info, "launcher", RoleKind.LAUNCHER, guess.source)
        if guess.index is None:
            return None  # numbered later, by GPU order
        return _role(info, f"{guess.kind.value}_{guess.index}", guess.kind, guess.source)


def _guess(chain: list[ProcInfo]) -> _Guess | None:
    """What the process looks like, from its own and its ancestors' environment and command lines."""
    kind: RoleKind | None = None
    source = "environment"
    env_role = chain[0].environ.get("COSMOS_ROLE", "").strip().lower()
    if env_role in _COSMOS_ROLE:
        kind = _COSMOS_ROLE[env_role]
    stage: str | None = None
    for node in chain:
        text = " ".join(node.cmdline)
        if kind is None:
            for module, module_kind in _COSMOS_MODULES:
                if module in text:
                    kind, source = module_kind, "command line"
                    break
        if kind is None:
            m = _REPLICA_SCRIPT.search(text)
            if m:
                kind, source = RoleKind(m.group(1)), "command line"
        if kind is None and stage is None:
            for script, name in _STAGE_SCRIPTS:
                if script in text:
                    stage = name
                    break
        if kind is None and stage is None and _LAUNCHER.search(text):
            kind, source = RoleKind.LAUNCHER, "command line"
        if kind is not None:
            break
    if kind is None:
        return _Guess(RoleKind.STAGE, stage=stage, source="command line") if stage else None
    guess = _Guess(kind, source=source)
    for node in chain:  # the launcher points each replica's stdout at logs_<ts>/<replica>.log
        m = _LOG_FILE.search(node.stdout or "")
        if m and (m.group(3) or m.group(1) == kind.value):
            if m.group(2) is not None:
                guess.index = int(m.group(2))
                guess.source = f"{source} + log file"
            break
    return guess


def _index_by_gpu_order(pending: list[tuple[int, _Guess, ProcInfo]], roles: dict[int, ProcessRole]) -> None:
    """Number replicas with no log file by their first visible GPU (docs/reference/cosmos-rl.md §2.3: slices in
    order)."""
    groups: dict[RoleKind, dict[str, list[int]]] = {}
    infos: dict[int, tuple[_Guess, ProcInfo]] = {}
    for pid, guess, info in pending:
        slot = info.environ.get("CUDA_VISIBLE_DEVICES", "")
        groups.setdefault(guess.kind, {}).setdefault(slot, []).append(pid)
        infos[pid] = (guess, info)
    for kind, slots in groups.items():
        for i, slot in enumerate(sorted(slots, key=_first_gpu)):
            for pid in slots[slot]:
                guess, info = infos[pid]
                label = f"{kind.value}_{i}" if slot else f"{kind.value}_?"
                roles[pid] = _role(info, label, kind, f"{guess.source} + GPU order")


def _first_gpu(slot: str) -> tuple[int, str]:
    first = slot.split(",")[0].strip()
    return (int(first), slot) if first.isdigit() else (1 << 30, slot)


def _role(info: ProcInfo, label: str, kind: RoleKind, source: str, detail: str | None = None) -> ProcessRole:
    rank = info.environ.get("LOCAL_RANK")
    return ProcessRole(
        label=label,
        kind=kind,
        source=source,
        command=info.command or None,
        user=info.user,
        local_rank=int(rank) if rank is not None and rank.isdigit() else None,
        cuda_visible_devices=info.environ.get("CUDA_VISIBLE_DEVICES"),
        detail=detail,
    )


def _foreign(info: ProcInfo, detail: str | None) -> ProcessRole:
    return _role(info, FOREIGN_LABEL, RoleKind.FOREIGN, "none", detail)


def _hidden_note(hidden: list[int], total: int) -> str | None:
    if not hidden:
        return None
    pids = ", ".join(str(p) for p in hidden[:8]) + (" …" if len(hidden) > 8 else "")
    if len(hidden) == total:
        return (
            f"GPU processes are hidden: NVML reports PIDs {pids} that are not in this PID namespace "
            "(a container without --pid=host?), so they cannot be joined to pipeline roles"
        )
    return f"{len(hidden)} GPU process(es) not visible in /proc (exited just now, or in another PID namespace): {pids}"
