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

0.4.7 (§16.1, §16.2) names each process by the pid of its ``launch_*.sh`` wrapper instead: ``Process P
completed (rc=N)`` (rc 0, or the controller's coordinated exit 143 / -15: a success) and ``Process P failed
with return code N``. Only the policies' pids are printed (``Registering policy process P``, in launch
order); the others are told by launch order, since a process started later has a larger pid (Linux hands
pids out in increasing order): the controller is started before every replica, the replicas in the order
of their ``Launching process`` lines. A failure of the controller, or any exit 86 (Cosmos-RL's fatal exit),
makes the launcher kill every process without a line and exit 1; a replica's other failures are logged and
the launcher waits on.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from a1x_diagnostics.detectors._context import DetectorContext
from a1x_diagnostics.events import Role, Signal, SignalKind

_ENDS = (SignalKind.PROCESS_COMPLETED, SignalKind.COORDINATED_SUCCESS, SignalKind.PROCESS_FAILED)
_KINDS = (SignalKind.PROCESS_LAUNCHED, *_ENDS, SignalKind.TERMINATED_ALL, SignalKind.PROCESS_EXITED_EARLY,
          SignalKind.CONTROLLER_READY, SignalKind.PROCESS_PLANNED, SignalKind.PROCESS_REGISTERED)
OUTSIDE_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
FATAL_EXIT = 86  # Cosmos-RL 0.4.7's FATAL_TRANSPORT_EXIT_CODE (utils/transport_failure.py:16, §16.2)


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
    if rc == FATAL_EXIT:
        return ("exit code 86 (Cosmos-RL's fatal exit: the controller's terminal error, or a worker's "
                "[Transport FATAL]; the launcher then stops every process)")
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
    pid: int | None = None  # 0.4.7: its wrapper's pid, as the end lines name it
    pid_by: str | None = None  # how the pid was tied to it: "registered" (printed) or "launch_order" (inferred)

    @property
    def rc(self) -> int | None:
        if self.end is None:
            return None
        rc = self.end.fields.get("rc")
        if self.end.kind is SignalKind.PROCESS_COMPLETED:
            return rc if isinstance(rc, int) else 0
        return rc if isinstance(rc, int) else None

    @property
    def ended_ok(self) -> bool:
        return self.end is not None and self.end.kind is not SignalKind.PROCESS_FAILED

    def how(self) -> str:
        if self.end is None:
            return "no end reported"
        if self.end.kind is SignalKind.PROCESS_COMPLETED:
            return "completed" if not self.rc else f"completed (rc={self.rc}: the controller's coordinated exit)"
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
    by_pid: bool = False  # 0.4.7: the end lines name pids, not list positions
    silent_kill: Signal | None = None  # 0.4.7: the failure after which the launcher killed every process silently

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

    def pid_words(self, name: str) -> str | None:
        """How a 0.4.7 pid was tied to ``name``: ``pid 1254, older than every replica's: the controller``."""
        p = next((q for q in self.processes if q.name == name), None)
        if p is None or p.pid is None:
            return None
        if p.pid_by == "registered":
            return f"pid {p.pid}, registered by the launcher as a policy process"
        return (f"pid {p.pid}: the launcher names its processes by pid, and by launch order (a process started "
                f"later has a larger pid) this one is {name}")

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
    view = LauncherView(path, by_pid=_pids_named(lines))
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
        elif kind is SignalKind.PROCESS_REGISTERED:
            pass  # 0.4.7's pids of the policies (``_match_pids``); 0.4.4 prints them too, for its signal handler
        elif view.by_pid:
            pass  # 0.4.7's ends name pids: matched below, once every pid of the output is known
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
    if view.by_pid:
        _match_pids(view, lines)
        return view
    for taken, s, first in failed:
        view.failures.append((taken.name if taken else _unknown_name(view, s, first), s))
    return view


def _pids_named(lines: list[Signal]) -> bool:
    """The output is 0.4.7's: an end line carries its rc after 'completed', or names a process number no list
    position can be."""
    launched = sum(1 for s in lines if s.kind is SignalKind.PROCESS_LAUNCHED)
    for s in lines:
        if s.kind in (SignalKind.PROCESS_COMPLETED, SignalKind.PROCESS_FAILED):
            number = s.fields.get("process")
            if s.kind is SignalKind.PROCESS_COMPLETED and "rc" in s.fields:
                return True
            if isinstance(number, int) and number >= max(launched, 1) and number > 16:
                return True  # no list position (a node runs at most 8 GPUs' worth of processes): a pid
    return False


def _match_pids(view: LauncherView, lines: list[Signal]) -> None:
    """0.4.7: tie each end line's pid to a launched process: the registered policy pids first, then the others
    by launch order (pids grow with it: between two known pids lie the processes launched between them)."""
    policies = [p for p in view.processes if p.role is Role.POLICY]
    registered = [s for s in lines if s.kind is SignalKind.PROCESS_REGISTERED]
    for p, s in zip(policies, registered, strict=False):
        pid = s.fields.get("pid")
        if isinstance(pid, int):
            p.pid, p.pid_by = pid, "registered"
    ends = [s for s in lines if s.kind in (SignalKind.PROCESS_COMPLETED, SignalKind.PROCESS_FAILED)]
    known = {p.pid: p for p in view.processes if p.pid is not None}
    unknown = sorted({n for s in ends if isinstance(n := s.fields.get("process"), int) and n not in known})
    # the launch-order slots between known pids, each with the unknown pids that fall there
    slots: list[tuple[list[LaunchedProcess], list[int]]] = [([], [])]
    for p in view.processes:
        if p.pid is not None:
            slots.append(([], []))
        else:
            slots[-1][0].append(p)
    bounds = [p.pid for p in view.processes if p.pid is not None]
    for pid in unknown:
        slots[sum(1 for b in bounds if b < pid)][1].append(pid)
    for free, pids in slots:
        # the earliest launched first; when fewer pids than processes, the ones that ended are unknown: tie them
        # only when the slot holds one process (else the launch order cannot tell which ended)
        if pids and (len(pids) == len(free) or (len(free) == 1 and len(pids) == 1)):
            for p, pid in zip(free, pids, strict=False):
                p.pid, p.pid_by = pid, "launch_order"
    by_pid = {p.pid: p for p in view.processes if p.pid is not None}
    for s in ends:
        number = s.fields.get("process")
        taken = by_pid.get(number) if isinstance(number, int) else None
        if taken is not None and taken.end is None:
            taken.end = s
        else:
            view.unmatched.append(s)
        if s.kind is SignalKind.PROCESS_FAILED:
            name = taken.name if taken is not None else f"the launcher's process {number}"
            view.failures.append((name, s))
            rc = s.fields.get("rc")
            if view.silent_kill is None and (rc == FATAL_EXIT or (taken is not None and taken.role is Role.CONTROLLER)):
                view.silent_kill = s


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
