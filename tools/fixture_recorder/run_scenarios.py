"""Run tiny Cosmos-RL GRPO scenarios side by side with the genuine `cosmos-rl` launcher (fixture recorder).

Derived from the project's tools/cosmos_tiny{,_747}/run_scenarios.py, with one scenario table per Cosmos-RL
generation (0.4.4 and 0.4.7 from PyPI, and git rev 747d1bd, the revision the Alpamayo recipe pins).

Every log line in a scenario's logs_<ts>/ folder and in its run.out is written by cosmos-rl's own processes
(launcher, controller, torchrun policy/rollout workers). This driver only
  * writes each scenario's TOML (base tiny_grpo.toml + overrides),
  * starts `cosmos-rl --config <toml> --port <p> --log-dir <scenario dir> entry_tiny_grpo.py`,
  * injects faults where a scenario asks for it (SIGKILL or SIGSTOP of a worker or of the controller; through
    the entry script: a CUDA memory cap, a reward function that raises, a failing import; a launcher started
    with one of its dependencies hidden from its module path), noting each action in injection.log,
  * stops a launcher's process group at the scenario's deadline (like coreutils `timeout`),
  * records the launcher's exit status in exit_status.txt.
Files written by the recorder are named <name>.toml / injection.log / exit_status.txt so they are never
mistaken for Cosmos output.

usage: run_scenarios.py --version {0.4.4,0.4.7,747d1bd} --out OUT --scratch SCR --model MODEL_DIR --mode MODE
                        --ngpu N [--gate S] [--cap S] [--first-slot K] [--list] [NAME ...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ENTRY = os.path.join(HERE, "entry_tiny_grpo.py")
BASE_TOML = os.path.join(HERE, "tiny_grpo.toml")

Spec = dict[str, Any]
# Tags every process a scenario starts, so that a fault or the final sweep never reaches a process left over
# from an earlier recording on the same machine (first recording: the 747d1bd rollout_killed SIGKILL also hit two
# such strays, see tests/fixtures/cosmos/README.md).
RUN_ID = f"{os.getpid()}-{int(time.time())}"

# Shorter heartbeats so the controller's "... is dead" verdict lands inside the recording window
# (defaults: COSMOS_HEARTBEAT_TIMEOUT=200 s, COSMOS_HEARTBEAT_SEND_INTERVAL=60 s; docs/reference/cosmos-rl.md §12, §15).
FAST_HEARTBEAT = {"COSMOS_HEARTBEAT_TIMEOUT": "45", "COSMOS_HEARTBEAT_SEND_INTERVAL": "10"}
LONG_RUN = {"train.epoch": 10, "train.max_num_steps": 40}


def scenarios(version: str) -> dict[str, Spec]:
    """name -> spec. Times are seconds after the driver starts all scenarios.

    A spec holds:
      over         TOML overrides, dotted keys ("train.train_policy.mu_iterations": 32)
      env          extra environment for the launcher and everything it starts
      kill         optional fault: dict(trigger=<regex seen in controller.log>,
                   role="Policy"|"Rollout"|"Controller", after=<seconds to keep recording after the SIGKILL>)
      stop         optional fault, same shape as kill: SIGSTOP instead of SIGKILL (the worker hangs without
                   dying; it is never continued: the deadline's SIGTERM/SIGKILL ends it)
      hide         optional: top-level module names to hide from the launcher's module path (PYTHONPATH
                   entries holding them are replaced by a folder of symlinks to everything else)
      linger       optional: seconds to leave this run's remaining processes alone after the launcher has
                   exited on its own (what orphaned workers log without a launcher), then the final sweep
      deadline     seconds after which the launcher's process group gets SIGTERM (then SIGKILL)
      crash_grace  seconds to keep recording after a worker crashed on its own (torchrun 'Root Cause'); 20
      mode         optional: another Cosmos-RL mode for this scenario
    """
    v044 = version in ("0.4.4", "0.4.7")  # the PyPI generation (0.4.7 keeps 0.4.4's variables and launcher flags)
    # 0.4.4/0.4.7 have COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS (record.sh exports 1); 747d1bd does not know it.
    clean_exit: dict[str, str] = {"COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS": "0"} if v044 else {}
    table: dict[str, Spec] = {
        "healthy": dict(over={"train.epoch": 2}, env=dict(clean_exit), deadline=300),
        "healthy_debug": dict(over={"train.epoch": 1, "train.max_num_steps": 4},
                              env=dict(clean_exit, COSMOS_LOG_LEVEL="DEBUG"), deadline=220),
        "grpo_collapse": dict(over={"train.epoch": 2}, env=dict(clean_exit, CRL_REWARD="constant"), deadline=300),
        "rollout_killed": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=330,
                               kill=dict(trigger=r" - Step: 2/", role="Rollout", after=130)),
        "policy_killed": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=330,
                              kill=dict(trigger=r" - Step: 2/", role="Policy", after=130)),
        "buffer_growth": dict(over=dict(LONG_RUN, **{"train.train_policy.mu_iterations": 32}),
                              env=dict(clean_exit), deadline=320),
        "weight_sync_gating": dict(over={"train.epoch": 5, "train.max_num_steps": 20, "train.sync_weight_interval": 4,
                                         "train.train_policy.allowed_outdated_steps": 0},
                                   env=dict(clean_exit), deadline=320),
        "insufficient_gpus": dict(over={"policy.parallelism.dp_shard_size": 2}, env={}, deadline=60),
        "too_many_replicas": dict(over={"train.epoch": 2}, env=dict(clean_exit), deadline=90, mode="disaggregated"),
        "rollout_oom": dict(over=dict(LONG_RUN), env=dict(clean_exit, **FAST_HEARTBEAT, CRL_ROLLOUT_MEM_FRACTION="1e-6",
                                                          CRL_ROLLOUT_OOM_AFTER_GENERATES="16"),
                            deadline=320, crash_grace=75),
    }
    if v044:
        # healthy, but the controller may SIGTERM itself once no policy is left (record.sh's default of 1)
        table["shutdown_hang"] = dict(over={"train.epoch": 2}, env={"COSMOS_SHUTDOWN_ON_NO_POLICY_REPLICAS": "1"},
                                      deadline=320)
        table["rollout_oom_start"] = dict(over={"train.epoch": 2},
                                          env=dict(clean_exit, **FAST_HEARTBEAT, CRL_ROLLOUT_MEM_FRACTION="1e-6"),
                                          deadline=240, crash_grace=75)
    # scenarios added in the second recording (both versions)
    table.update({
        "healthy_long": dict(over={"train.epoch": 4, "train.max_num_steps": 24}, env=dict(clean_exit), deadline=380),
        "policy_stopped": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=400,
                               stop=dict(trigger=r" - Step: 2/", role="Policy", after=245)),
        "rollout_stopped_start": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=400,
                                      stop=dict(trigger=r"All atoms of ROLLOUT Replica \S+ has been set",
                                                role="Rollout", after=245)),
        "reward_raises": dict(over=dict(LONG_RUN), env=dict(clean_exit, **FAST_HEARTBEAT, CRL_REWARD_RAISE_AFTER="80"),
                              deadline=330, crash_grace=120),
        "entry_import_error": dict(over={"train.epoch": 2}, env=dict(clean_exit, CRL_IMPORT_FAIL="1"), deadline=60),
        "launcher_import_error": dict(over={"train.epoch": 2}, env=dict(clean_exit), deadline=60, hide=["toml"]),
    })
    # scenarios added in the third recording (all versions)
    table.update({
        # the controller's python process (launch_controller.sh runs it as a child of bash, so the launcher sees the
        # wrapper's 128+9); the launcher's reaction is the recording; replicas it leaves behind are left alone for
        # `linger` s (what they log with no controller), then swept
        "controller_killed": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=330, linger=75,
                                  kill=dict(trigger=r" - Step: 2/", role="Controller", after=90)),
        # a hang once steps run at a steady pace: the rollout stops, the policy trains what is pending, then silence
        # in every log for about 150 s until the deadline's SIGTERM
        "rollout_stopped": dict(over=dict(LONG_RUN), env=dict(FAST_HEARTBEAT), deadline=400,
                                stop=dict(trigger=r" - Step: 4/", role="Rollout", after=160)),
    })
    return table


def set_dotted(d: dict[str, Any], key: str, val: Any) -> None:
    parts = key.split(".")
    for p in parts[:-1]:
        d = d.setdefault(p, {})
    d[parts[-1]] = val


def now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


def say(*a: object) -> None:
    print(f"[driver {now()}]", *a, flush=True)


def read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return int(next(line for line in f if line.startswith("PPid:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return -1


def _environ(pid: int) -> dict[bytes, bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    except OSError:
        return {}


def scenario_pids(scenario: str) -> list[int]:
    """Every live process started for `scenario` by *this* driver run (tagged CRL_SCENARIO + CRL_RUN_ID)."""
    want = {b"CRL_SCENARIO": scenario.encode(), b"CRL_RUN_ID": RUN_ID.encode()}
    me = os.getpid()
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != me
            and all(_environ(int(d)).get(k) == v for k, v in want.items())]


def find_pids(scenario: str, role: str) -> list[int]:
    """PIDs of torchrun *worker* processes of `role` belonging to `scenario` (env-based, exact); for
    role "Controller" the controller's python process (launch_controller.sh exports COSMOS_ROLE=Controller
    before it starts python; the bash wrapper itself does not carry it)."""
    pids = []
    for pid in scenario_pids(scenario):
        env = _environ(pid)
        if env.get(b"COSMOS_ROLE") != role.encode():
            continue
        if role == "Controller" or (b"LOCAL_RANK" in env and b"TORCHELASTIC_RUN_ID" in env):
            pids.append(pid)
    # keep the top of the tree only (a worker's own subprocesses inherit the same environment)
    return [p for p in pids if _ppid(p) not in pids]


def descendants(pids: list[int]) -> list[int]:
    """Live processes below `pids` (e.g. a worker's heartbeat process and reward pool)."""
    kids: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            kids.setdefault(_ppid(int(d)), []).append(int(d))
    out, todo = [], list(pids)
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return sorted(out)


def hidden_module_path(pythonpath: str, hide: list[str], where: str) -> tuple[str, list[str]]:
    """PYTHONPATH with every entry that holds one of `hide` (package, module or dist-info) replaced by a folder
    of symlinks to all of that entry's other contents. Returns the new PYTHONPATH and a note per replacement."""

    def hidden(entry: str) -> bool:
        for m in hide:
            if entry in (m, f"{m}.py") or (entry.startswith(f"{m}-") and entry.endswith((".dist-info", ".egg-info"))):
                return True
        return False

    out, notes = [], []
    for i, p in enumerate(x for x in pythonpath.split(os.pathsep) if x):
        names = sorted(os.listdir(p)) if os.path.isdir(p) else []
        gone = [n for n in names if hidden(n)]
        if not gone:
            out.append(p)
            continue
        view = os.path.join(where, f"pyview_{i}")
        os.makedirs(view, exist_ok=True)
        for n in names:
            if n not in gone and not os.path.lexists(os.path.join(view, n)):
                os.symlink(os.path.join(p, n), os.path.join(view, n))
        out.append(view)
        notes.append(f"PYTHONPATH entry {p} replaced by {view} (symlinks to its {len(names) - len(gone)} other "
                     f"entries; left out: {', '.join(gone)})")
    return os.pathsep.join(out), notes


class Run:
    def __init__(self, name: str, spec: Spec, args: argparse.Namespace, port: int, redis_port: int) -> None:
        import toml  # on the GPU machine it comes from the carried wheels

        self.name, self.spec = name, spec
        self.dir = os.path.join(args.out, name)
        os.makedirs(self.dir, exist_ok=True)
        self.scr = os.path.join(args.scratch, name)
        os.makedirs(self.scr, exist_ok=True)
        cfg = toml.load(BASE_TOML)
        cfg["redis"] = str(redis_port)
        cfg["mode"] = spec.get("mode", args.mode)
        cfg["train"]["output_dir"] = os.path.join(self.scr, "outputs")
        cfg["policy"]["model_name_or_path"] = args.model
        for k, v in spec["over"].items():
            set_dotted(cfg, k, v)
        self.toml_path = os.path.join(self.dir, f"{name}.toml")
        with open(self.toml_path, "w") as f:
            toml.dump(cfg, f)
        self.port, self.redis_port = port, redis_port
        self.cmd = ["cosmos-rl", "--config", self.toml_path, "--port", str(port), "--log-dir", self.dir, ENTRY]
        self.env = dict(os.environ, CRL_SCENARIO=name, CRL_RUN_ID=RUN_ID,
                        CRL_INJECTION_LOG=os.path.join(self.dir, "injection.log"),
                        CRL_REWARD_COUNT_FILE=os.path.join(self.scr, "reward_calls.count"), **spec["env"])
        self.hide_notes: list[str] = []
        if spec.get("hide"):
            self.env["PYTHONPATH"], self.hide_notes = hidden_module_path(
                self.env.get("PYTHONPATH", ""), spec["hide"], self.scr)
        self.proc: subprocess.Popen[bytes] | None = None
        self.rc: int | None = None
        self.status = "pending"
        # CRL_TEST_TIME_SCALE (local dry runs with dry_run/bin/cosmos-rl only) shrinks deadlines, `after`, crash_grace
        self.scale = float(os.environ.get("CRL_TEST_TIME_SCALE", "1"))
        self.deadline: float = spec["deadline"] * self.scale
        self.killed_at: float | None = None
        self.term_sent: float | None = None
        self.exited_at: float | None = None  # seconds after t0 when the launcher returned by itself
        self.linger_until: float | None = None
        self.t0 = 0.0

    def start(self, t0: float) -> None:
        self.t0 = t0
        if self.spec.get("hide"):
            for n in self.hide_notes:
                self.note(f"injected: launcher's module path: {n}")
            for m in self.spec["hide"]:  # say whether the module is still reachable (e.g. from the base site-packages)
                probe = subprocess.run([sys.executable, "-c", f"import importlib.util as u; print(u.find_spec({m!r}))"],
                                       env=self.env, capture_output=True, text=True, timeout=60)
                self.note(f"module {m!r} as the launcher's python finds it now: {probe.stdout.strip() or probe.stderr}")
        self.out = open(os.path.join(self.dir, "run.out"), "wb")  # noqa: SIM115 - closed in finish()
        self.proc = subprocess.Popen(self.cmd, cwd=self.scr, env=self.env, stdout=self.out,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.status = "running"
        extra = " ".join(f"{k}={v}" for k, v in self.spec["env"].items())
        say(f"{self.name}: started pid {self.proc.pid}: {extra} {' '.join(self.cmd)}")

    def logfile(self, base: str) -> str:
        return os.path.join(self.dir, "logs_latest", base)

    def note(self, msg: str) -> None:
        with open(os.path.join(self.dir, "injection.log"), "a") as f:
            f.write(f"{now()} [driver] {msg}\n")
        say(f"{self.name}: {msg}")

    def killpg(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def step(self, t: float) -> bool:
        """Advance this scenario; return True while still running."""
        if self.status != "running" or self.proc is None:
            return False
        el = t - self.t0
        rc = self.proc.poll()
        if rc is not None:
            if self.exited_at is None:
                self.rc, self.exited_at = rc, el
                linger = min(self.spec.get("linger", 0) * self.scale, self.deadline - el)
                left = scenario_pids(self.name)
                if linger > 0 and left:
                    self.linger_until = el + linger
                    self.note(f"launcher exited by itself (return code {rc}, t+{el:.0f}s); {len(left)} process(es) "
                              f"of this run still alive {left}: left alone for {linger:.0f} s, then swept")
            if (self.linger_until is not None and el < min(self.linger_until, self.deadline)
                    and scenario_pids(self.name)):
                return True
            self.status = "exited"
            self.killpg(signal.SIGKILL)  # leftovers in the launcher's session, if any
            return False
        k = self.spec.get("kill") or self.spec.get("stop")
        sig, signame = (signal.SIGKILL, "SIGKILL") if self.spec.get("kill") else (signal.SIGSTOP, "SIGSTOP")
        grace = self.spec.get("crash_grace", 20) * self.scale
        if not k and self.term_sent is None and self.deadline > el + grace:
            # a worker crashed on its own (nothing SIGKILLed): the launcher would wait forever
            workers = "".join(read(self.logfile(f"{role}_{i}.log")) for role in ("policy", "rollout") for i in range(2))
            if "Root Cause (first observed failure)" in workers:
                self.note(f"a worker crashed (torchrun 'Root Cause' in its log, t+{el:.0f}s): "
                          f"stopping this scenario {grace:.0f} s from now")
                self.deadline = el + grace
        if k and self.killed_at is None:
            trigger = os.environ.get("CRL_TEST_KILL_TRIGGER", k["trigger"])  # local dry runs only
            if re.search(trigger, read(self.logfile("controller.log"))):
                pids = find_pids(self.name, k["role"])
                if pids:
                    below = descendants(pids)
                    for pid in pids:
                        os.kill(pid, sig)
                    self.killed_at = t
                    what = "process" if k["role"] == "Controller" else "worker"
                    self.note(f"injected: {signame} to {k['role']} {what} pid(s) {pids} "
                              f"(trigger {trigger!r} seen in controller.log, t+{el:.0f}s)")
                    if sig == signal.SIGSTOP:
                        self.note(f"  not stopped (their child processes, e.g. heartbeat and reward pool): {below}; "
                                  f"nothing will continue them; recording for {k['after'] * self.scale:.0f} s more")
                    self.deadline = min(self.deadline, el + k["after"] * self.scale)
        if el >= self.deadline and self.term_sent is None:
            self.term_sent = t
            self.note(f"deadline {self.deadline:.0f}s reached: SIGTERM to the launcher's process group")
            self.killpg(signal.SIGTERM)
        elif self.term_sent is not None and t - self.term_sent > 10:
            self.note("still alive 10 s after SIGTERM: SIGKILL to the launcher's process group")
            self.killpg(signal.SIGKILL)
            self.proc.wait()
            self.rc = self.proc.returncode
            self.status = "killed"
            return False
        return True

    def finish(self) -> None:
        self.out.close()
        with open(os.path.join(self.dir, "exit_status.txt"), "w") as f:
            if self.term_sent is None:
                how = "exited on its own"
                if self.linger_until is not None and self.exited_at is not None:
                    how += f" at t+{self.exited_at:.0f}s, the processes it left swept at the end"
            elif self.status == "exited":
                how = "exited after the driver's SIGTERM to its process group at the deadline"
            else:
                how = "SIGKILLed by the driver 10 s after SIGTERM"
            f.write(f"launcher (cosmos-rl) return code: {self.rc} ({how}; wall {time.time() - self.t0:.0f}s)\n")
        for p in range(self.redis_port, self.redis_port + 6):
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["redis-cli", "-p", str(p), "shutdown", "nosave"], capture_output=True, timeout=10)
        # Cosmos/torchrun processes that left the launcher's process group (own sessions, orphans) outlive the
        # launcher: end them so they cannot hold GPU memory or ports, or get matched by a later recording.
        leftovers = scenario_pids(self.name)
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if leftovers:
            self.note(f"SIGKILL to {len(leftovers)} leftover process(es) after the launcher ended: {leftovers}")
        say(f"{self.name}: {self.status} rc={self.rc}")
        summarize(self)


def step_lines(r: Run) -> list[str]:
    c = read(r.logfile("controller.log")) + read(r.logfile("policy_0.log"))
    return re.findall(r" - (Step: \d+/\d+, Reward Mean: \S+, Reward Std: \S+)", c)


def summarize(r: Run) -> None:
    steps = step_lines(r)
    say(f"{r.name}: {len(steps)} Step lines; last: {steps[-1] if steps else '-'}")
    for base in ("run.out", "logs_latest/controller.log", "logs_latest/policy_0.log", "logs_latest/rollout_0.log"):
        lines = read(os.path.join(r.dir, base)).splitlines()
        interesting = [x for x in lines if re.search(r"Error|error|Traceback|exitcode|WARNING|failed", x)]
        print(f"--- {r.name}/{base}: {len(lines)} lines; {len(interesting)} error-ish; tail:")
        for x in ([*interesting[-6:], "...", *lines[-4:]]) if lines else []:
            print("   ", x[:300])
    sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", required=True, choices=["0.4.4", "0.4.7", "747d1bd"])
    ap.add_argument("--out", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--mode", default="colocated_separated")
    ap.add_argument("--ngpu", type=int, required=True)
    ap.add_argument("--gate", type=float, default=200.0, help="stop all if healthy has no Step 1 by then")
    ap.add_argument("--cap", type=float, default=340.0, help="hard cap for the whole driver")
    ap.add_argument("--first-slot", type=int, default=0,
                    help="port slot of the first scenario (drivers running side by side need disjoint slots)")
    ap.add_argument("--list", action="store_true", help="write the TOMLs, print the plan, start nothing")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    specs = scenarios(args.version)
    names = args.names or list(specs)
    runs = []
    for i, n in enumerate(names):
        # NAME__MODE runs scenario NAME in another mode (e.g. healthy__colocated)
        base, _, mode = n.partition("__")
        spec = dict(specs[base], **({"mode": mode} if mode else {}))
        slot = args.first_slot + i
        runs.append(Run(n, spec, args, 8100 + 100 * slot, 12808 + 20 * slot))
    if args.list:
        for r in runs:
            print(f"PLAN {r.name}: port {r.port} redis {r.redis_port} deadline {r.deadline} "
                  f"env {r.spec['env']} kill {r.spec.get('kill')} stop {r.spec.get('stop')} "
                  f"hide {r.spec.get('hide')} toml {r.toml_path}")
            for n in r.hide_notes:
                print(f"     {n}")
        return
    stop = {"asked": False}

    def on_term(signum: int, frame: object) -> None:  # an outer `timeout`: stop every scenario cleanly now
        stop["asked"] = True

    signal.signal(signal.SIGTERM, on_term)
    t0 = time.time()
    for r in runs:
        r.start(t0)
        time.sleep(1.0)
    healthies = [r for r in runs if r.name.split("__")[0] in ("healthy", "healthy_long")]
    gate_open = not healthies
    gate_failed = False
    last_report = 0.0
    active = list(runs)
    while active:
        t = time.time()
        if not gate_open and not gate_failed:
            dead = 0
            for h in healthies:
                logs = read(h.logfile("controller.log")) + read(h.logfile("policy_0.log"))
                workers = read(h.logfile("policy_0.log")) + read(h.logfile("rollout_0.log"))
                if re.search(r" - Step: 1/", logs):
                    gate_open = True
                    say(f"gate open: {h.name} printed Step 1 (t+{t - t0:.0f}s)")
                    break
                if h.status != "running" or "ChildFailedError" in workers or "Root Cause" in workers:
                    dead += 1
            if not gate_open and (t - t0 > args.gate or dead == len(healthies)):
                say("gate FAILED (healthy did not reach Step 1): stopping every scenario")
                gate_failed = True
                time.sleep(5)
                for r in active:
                    r.deadline = min(r.deadline, t - t0)
        if t - t0 > args.cap or stop["asked"]:
            for r in active:
                r.deadline = min(r.deadline, t - t0)
        still = []
        for r in active:
            if r.step(t):
                still.append(r)
            else:
                r.finish()
        active = still
        if t - last_report > 30:
            last_report = t
            for r in active:
                c = read(r.logfile("controller.log")) + read(r.logfile("policy_0.log"))
                steps = re.findall(r" - Step: (\d+)/", c)
                stat = re.findall(r"\[Controller\] Stat: (.*)", c)
                say(f"  {r.name}: t+{t - t0:.0f}s steps={steps[-1] if steps else 0} stat={stat[-1] if stat else '-'}")
        time.sleep(0.5)
    say("all scenarios done")
    for r in runs:
        steps = step_lines(r)
        c = read(r.logfile("controller.log"))
        stat = re.findall(r"\[Controller\] Stat: (.*)", c)
        print(f"SUMMARY {r.name}: {r.status} rc={r.rc} steps={len(steps)} "
              f"last={steps[-1] if steps else '-'} stat={stat[-1] if stat else '-'}")


if __name__ == "__main__":
    main()
