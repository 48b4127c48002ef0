"""What the launcher's own output says about the processes it started: which one each ``Process i`` line
means, how each ended, and what a return code says (docs/reference/cosmos-rl.md §2.6, §2.7).

Mechanism: ``launch_all`` starts the controller first, then this node's replicas in placement order
(``Launching process with command: …/launch_controller.sh`` / ``…/launch_replica.sh --type R``), and
polls that list: ``Process {i} completed successfully``, ``Process {i} (controller) exited via the
coordinated shutdown path …; treating as success`` or ``Process {i} failed with return code {rc}``,
where ``i`` is the process's position in the list *now*, and each ended process leaves the list. So
the launch lines and the end lines, replayed in order, name every process. It kills the others
(``Terminated all processes due to failure``) only when the failed position is the controller's
(position 0) or the node hosts no controller. A return code of ``-N`` or ``128 + N`` is death by signal
``N`` (``Popen`` reports a signalled child as ``-N``; a shell wrapper exits ``128 + N``).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from a1x_diagnostics.detectors._context import DetectorContext
from a1x_diagnostics.events import Role, Signal, SignalKind

_ENDS = (SignalKind.PROCESS_COMPLETED, SignalKind.COORDINATED_SUCCESS, SignalKind.PROCESS_FAILED)
_KINDS = (SignalKind.PROCESS_LAUNCHED, *_ENDS, SignalKind.TERMINATED_ALL, SignalKind.PROCESS_EXITED_EARLY,
          SignalKind.CONTROLLER_READY, SignalKind.PROCESS_PLANNED)
OUTSIDE_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


def signal_of(rc: object) -> signal.Signals | None:
    """The signal a return code says the process died of (``-N`` from Popen, ``128 + N`` from a shell)."""
    if not isinstance(rc, int) or isinstance(rc, bool):
        return None
    number = -rc if rc < 0 else rc - 128 if 128 < rc < 128 + 65 else None
    if number is None:
        return None
    try:
        return signal.Signals(number)
    except ValueError:
        return None


def exit_words(rc: object) -> str:
    """``rc`` as a person reads it: ``killed by SIGKILL (return code 137)``, ``exit code 1``."""
    sig = signal_of(rc)
    if sig is None:
        return f"exit code {rc}"
    return f"killed by {sig.name} (return code {rc})"


def where_to_look(rc: object) -> str | None:
    """Where the sender of a fatal signal shows, for a death by signal (None for an ordinary exit)."""
    sig = signal_of(rc)
    if sig is signal.SIGKILL:
        return ("SIGKILL is sent by the kernel's OOM killer (host memory) or by someone: look for 'Out of memory: "
                "Killed process' in `dmesg -T` or `journalctl -k` on that host, and at the scheduler's record of the "
                "job (sacct, a memory or time limit)")
    if sig in OUTSIDE_SIGNALS:
        return "this signal comes from outside the run: Ctrl-C, scancel, a time limit, a supervisor"
    if sig is not None:
        return f"{sig.name} is raised by the process itself (a native crash): the end of its log shows where"
    return None


@dataclass
class LaunchedProcess:
    """One process the launcher started, by its position in launch order."""

    name: str  # controller, policy_0, rollout_1...
    role: Role
    launched: Signal
    end: Signal | None = None  # the launcher's line for its end

    @property
    def rc(self) -> int | None:
        if self.end is None:
            return None
        if self.end.kind is SignalKind.PROCESS_COMPLETED:
            return 0
        rc = self.end.fields.get("rc")
        return rc if isinstance(rc, int) else None

    @property
    def ended_ok(self) -> bool:
        return self.end is not None and self.end.kind is not SignalKind.PROCESS_FAILED

    def how(self) -> str:
        if self.end is None:
            return "no end reported"
        if self.end.kind is SignalKind.PROCESS_COMPLETED:
            return "completed"
        if self.end.kind is SignalKind.COORDINATED_SUCCESS:
            return f"coordinated shutdown (rc={self.rc}), treated as success"
        return exit_words(self.rc)


@dataclass
class LauncherView:
    """One launcher's output (one node): the processes it started and how each ended."""

    path: str
    processes: list[LaunchedProcess] = field(default_factory=list)
    failures: list[tuple[str, Signal]] = field(default_factory=list)  # (process name, its failure line)
    unmatched: list[Signal] = field(default_factory=list)  # end lines no launched process could take
    killed_all: Signal | None = None  # 'Terminated all processes due to failure'
    planned: list[Signal] = field(default_factory=list)  # 'output files: …' per process
    hosts_controller: bool = False

    @property
    def known(self) -> bool:
        """Every end line was matched to a launched process."""
        return bool(self.processes) and not self.unmatched

    @property
    def all_ended_ok(self) -> bool:
        return self.known and all(p.ended_ok for p in self.processes)

    @property
    def running(self) -> list[LaunchedProcess]:
        return [p for p in self.processes if p.end is None]

    def name_of(self, line: Signal) -> str | None:
        """The process an end line is about, or None when the launch lines cannot tell."""
        for p in self.processes:
            if p.end is line:
                return p.name
        return next((name for name, s in self.failures if s is line), None)

    def summary(self) -> str:
        """``controller: completed; policy_0: completed; rollout_0: no end reported``."""
        return "; ".join(f"{p.name}: {p.how()}" for p in self.processes)

    @property
    def log_dir(self) -> str | None:
        """The folder the launcher wrote its processes' logs into (its ``output files:`` lines)."""
        return log_dir_of(self.planned)


def log_dir_of(planned: list[Signal]) -> str | None:
    """The folder of the first ``output files: PATH`` a launcher printed (None: it printed none, or ``None``
    when it ran without ``--log-dir`` and its children wrote to its own output, §3.1)."""
    for s in planned:
        path = str(s.fields.get("path") or "")
        if "/" in path:
            return path.rsplit("/", 1)[0]
    return None


def _role_of(value: object) -> Role:
    try:
        return Role(str(value).lower())
    except ValueError:
        return Role.UNKNOWN


def launcher_views(ctx: DetectorContext) -> list[LauncherView]:
    """One view per file that holds launcher lines (a launcher capture, our train stage's log)."""
    by_file: dict[str, list[Signal]] = {}
    for kind in _KINDS:
        for sig in ctx.signals(kind):
            by_file.setdefault(sig.source.path, []).append(sig)
    views: list[LauncherView] = []
    for path, lines in sorted(by_file.items()):
        if not any(s.kind in (*_ENDS, SignalKind.PROCESS_LAUNCHED, SignalKind.TERMINATED_ALL) for s in lines):
            continue
        views.extend(_replay(path, session) for session in _sessions(sorted(lines, key=lambda s: s.line)))
    return views


def _sessions(lines: list[Signal]) -> list[list[Signal]]:
    """The launcher runs in one file (a capture appended to by several launches): each starts with its plan
    (``Number of … replicas``'s companions: the ``output files`` lines) or its controller's launch."""
    out: list[list[Signal]] = [[]]
    launched = False
    for s in lines:
        starts = s.kind is SignalKind.PROCESS_LAUNCHED and s.fields.get("role") == "controller"
        if (starts or s.kind is SignalKind.PROCESS_PLANNED) and launched:
            out.append([])
            launched = False
        launched = launched or s.kind is SignalKind.PROCESS_LAUNCHED
        out[-1].append(s)
    return [session for session in out if session]


def _replay(path: str, lines: list[Signal]) -> LauncherView:
    view = LauncherView(path)
    alive: list[LaunchedProcess] = []
    per_role: dict[Role, int] = {}
    failed: list[tuple[LaunchedProcess | None, Signal, bool]] = []
    ended_before = False
    for s in lines:
        kind = s.kind
        if kind is SignalKind.PROCESS_PLANNED:
            view.planned.append(s)
        elif kind is SignalKind.CONTROLLER_READY:
            view.hosts_controller = True
        elif kind is SignalKind.PROCESS_LAUNCHED:
            role = _role_of(s.fields.get("role"))
            if role is Role.CONTROLLER:
                view.hosts_controller = True
                name = "controller"
            else:
                index = per_role.get(role, 0)
                per_role[role] = index + 1
                name = f"{role.value}_{index}"
            p = LaunchedProcess(name, role, s)
            view.processes.append(p)
            alive.append(p)
        elif kind is SignalKind.TERMINATED_ALL:
            view.killed_all = s
        elif kind in _ENDS:
            position = s.fields.get("process")
            named = _role_of(position)
            taken: LaunchedProcess | None = None
            if isinstance(position, int) and 0 <= position < len(alive):
                taken = alive.pop(position)
            elif named is not Role.UNKNOWN:  # 'Policy failed with exit code N' names its role
                taken = next((p for p in alive if p.role is named), None)
                if taken is not None:
                    alive.remove(taken)
            if taken is not None:
                taken.end = s
            else:
                view.unmatched.append(s)
            if kind is SignalKind.PROCESS_FAILED:
                failed.append((taken, s, not ended_before))
            ended_before = True
    for taken, s, first in failed:
        view.failures.append((taken.name if taken else _unknown_name(view, s, first), s))
    return view


def _unknown_name(view: LauncherView, line: Signal, first: bool) -> str:
    """A failed process the launch lines do not name: the controller when it was the first to end on a node
    that hosts one and the launcher then killed the rest (only the controller's position does that, §2.7),
    else its position."""
    if first and view.hosts_controller and line.fields.get("process") == 0 and view.killed_all is not None:
        return "controller"
    return f"the launcher's process {line.fields.get('process')}"


def controller_failure(ctx: DetectorContext) -> tuple[LauncherView, Signal] | None:
    """The launcher's report that the controller failed (not a coordinated exit), if any."""
    for view in launcher_views(ctx):
        for name, line in view.failures:
            if name == "controller":
                return view, line
    return None


__all__ = ["LaunchedProcess", "LauncherView", "controller_failure", "exit_words", "launcher_views", "log_dir_of",
           "signal_of", "where_to_look"]
