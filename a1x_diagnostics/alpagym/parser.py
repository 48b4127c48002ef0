"""``ClosedLoopParser``: the lines of one file of an AlpaGym run in, closed-loop events out. Pure.

Line families (docs/reference/alpagym.md §4):

- **AlpaGym** (``%(asctime)s %(levelname)s %(name)s: %(message)s``): the host's own lines, and in
  the Cosmos-RL replica logs the rollout worker's and the trainer's (behind torchrun's ``[rankN]:``);
- **AlpaSim** runtime worker (``HH:MM:SS.mmm [W<n>] LEVEL:\\t<message>``, no date; without the
  ``[W<n>]`` in the runtime's own root logger);
- exception lines of tracebacks (``RuntimeError: AlpaSim Wizard exited ...``), read anywhere in a line;
- in a captured host terminal, the role logs the host tees (``controller  | ...``, ``rollout_0   | ...``)
  are skipped (the files themselves are read), other ``name | `` prefixes (docker compose's) peeled.

Cosmos-RL's own lines are the open-loop parser's (``a1x_diagnostics.parsing``); this parser reads only
what it names, plus the controller port the launcher chose. Only lines holding one of ``MARKERS``
can give an event.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from a1x_diagnostics.closed_loop_events import CL, ClosedLoop
from a1x_diagnostics.events import Event, Role, Signal, SignalKind, Source
from a1x_diagnostics.parsing import regex_needles
from a1x_diagnostics.signatures.alpagym import SIGS as HOST_REFUSALS
from a1x_diagnostics.signatures.entry import Sig

_RANK = re.compile(r"\[rank(\d+)\]: ?")
_ALPAGYM = re.compile(
    r"(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<name>[\w.-]+): "
    r"(?P<msg>.*)$"
)
_ALPASIM = re.compile(r"(?P<clock>\d\d:\d\d:\d\d\.\d{3}) (?:\[W(?P<worker>\d+)\] )?(?P<level>[A-Z]+):\t(?P<msg>.*)$")
# A prefix ``name | `` before a line (docker compose's services; the host's tee of the role logs), colours kept
_PREFIX = re.compile(r"(?:\x1b\[[0-9;]*m)?(?P<name>[\w.-]+) *\|(?:\x1b\[0m)? ?(?P<rest>.*)$")
_TEED = re.compile(r"(?:controller|(?:policy|rollout|reference)_\d+)")
MAX_TEXT = 8192
MAX_FIELD = 600

Fields = dict[str, Any]
Reader = Callable[[re.Match[str]], Fields]


def _i(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _f(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[:MAX_FIELD] + "…"


def _dict(text: str) -> dict[str, float]:
    """``{'collision_any': '0.0000', ...}`` as AlpaSim's eval logger prints it (values as strings)."""
    out: dict[str, float] = {}
    for key, value in re.findall(r"'([\w.-]+)': '?(-?[\d.eE+-]+|nan|inf|-inf)'?", text):
        number = _f(value)
        if number is not None:
            out[key] = number
    return out


def _refusal(sig: Sig) -> Reader:
    """The fields of a host refusal as the catalog entry ``sig`` reads them: its reason, the message, the GPU counts."""
    reason = sig.fields["reason"]

    def read(m: re.Match[str]) -> Fields:
        found = m.groupdict()
        out: Fields = {"reason": reason, "message": _clip(found["message"])}
        out.update({k: _i(found[k]) for k in ("available", "required") if found.get(k) is not None})
        return out

    return read


# (regex searched in the message, kind, reader of the fields). Each regex's needles are read from it
# (``a1x_diagnostics.parsing.regex_needles``: a line it matches holds one), never written beside it; a
# regex ``A|B`` gets an entry per needle, in place, as the open-loop rules do (docs/parsing.md).
# Order matters: the first rule whose regex matches names the line.
_RULES: tuple[tuple[str, re.Pattern[str], CL, Reader], ...] = tuple(
    (needle, regex, kind, reader)
    for pattern, kind, reader in (
        # --- host (packages/host/src/alpagym_host/run_lifecycle.py, alpasim_wizard.py, cli.py)
        (r"Starting AlpaGym run: backend=(\S+) run_dir=(\S+) .*?policy_replicas=(\d+) "
         r"rollout_replicas=(\d+)", CL.RUN_STARTED,
         lambda m: {"backend": m[1], "run_dir": m[2], "policy_replicas": _i(m[3]), "rollout_replicas": _i(m[4])}),
        (r"Starting AlpaSim Wizard: runtime_index=(\d+) host=(\S+)", CL.WIZARD_STARTED,
         lambda m: {"runtime_index": _i(m[1]), "host": m[2]}),
        (r"AlpaSim RuntimeService is ready at (\S+)", CL.RUNTIME_READY,
         lambda m: {"endpoint": m[1]}),
        (r"Published AlpaSim runtime: id=(\S+) host=(\S+) port=(\d+) capacity=(\d+)",
         CL.RUNTIME_PUBLISHED, lambda m: {"id": m[1], "host": m[2], "port": _i(m[3]), "capacity": _i(m[4])}),
        (r"Starting Cosmos launcher: ", CL.COSMOS_STARTED, lambda m: {}),
        (r"Cosmos launcher completed\s*$", CL.COSMOS_COMPLETED, lambda m: {}),
        (r"Stopping (\d+) AlpaSim Wizard process", CL.WIZARD_STOPPING,
         lambda m: {"count": _i(m[1])}),
        (r"AlpaSim Wizard exited before readiness with code (-?\d+)",
         CL.BRINGUP_FAILED, lambda m: {"reason": "wizard_exited", "code": _i(m[1])}),
        (r"Timed out waiting for AlpaSim RuntimeService at (\S+)",
         CL.BRINGUP_FAILED, lambda m: {"reason": "runtime_timeout", "path": m[1]}),
        (r"AlpaSim runtime (\d+) reported no scenes", CL.BRINGUP_FAILED,
         lambda m: {"reason": "no_scenes", "runtime_index": _i(m[1])}),
        (r"AlpaSim runtimes reported different scene lists",
         CL.BRINGUP_FAILED, lambda m: {"reason": "scene_lists_differ"}),
        (r"execution\.backend=local_process requires", CL.BRINGUP_FAILED,
         lambda m: {"reason": "no_docker"}),
        (r"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", CL.BRINGUP_FAILED,
         lambda m: {"reason": "driver_too_old"}),
        (r"No module named '(alpasim_grpc[\w.]*)'", CL.BRINGUP_FAILED,
         lambda m: {"reason": "grpc_stubs_missing", "module": m[1]}),
        (r"NCCL master endpoint was not published", CL.BRINGUP_FAILED,
         lambda m: {"reason": "nccl_master_missing"}),
        (r"Could not find an available port in range (\d+)-(\d+)",
         CL.PORT_IN_USE, lambda m: {"what": "sim_ports", "port": _i(m[1]), "last": _i(m[2])}),
        (r"Address already in use", CL.PORT_IN_USE,
         lambda m: {"what": "bind", "port": None}),
        (r"AlpaSim rollout horizon does not match the trainer packer "
         r"budget: n_sim_steps=(\d+) .*?= (\d+) closed-loop policy steps, but expected_valid_steps=(\d+)",
         CL.HORIZON_MISMATCH,
         lambda m: {"where": "config", "n_sim_steps": _i(m[1]), "closed_loop_steps": _i(m[2]),
                    "expected_valid_steps": _i(m[3])}),
        (r"AlpaGym replay session=(\w+) produced (\d+) policy outputs, exceeding "
         r"expected_valid_steps=(\d+)", CL.HORIZON_MISMATCH,
         lambda m: {"where": "packer", "uuid": m[1], "produced": _i(m[2]), "expected_valid_steps": _i(m[3])}),
        (r"nvidia/PhysicalAI-Autonomous-Vehicles-NuRec, but no token was found", CL.NUREC_ACCESS,
         lambda m: {"reason": "no_token", "http": None}),
        (r"cannot access the gated dataset \S+ \(HTTP (\d+)\)", CL.NUREC_ACCESS,
         lambda m: {"reason": "denied", "http": _i(m[1])}),
        (r"Could not reach HuggingFace while validating",
         CL.NUREC_ACCESS, lambda m: {"reason": "unreachable", "http": None}),
        (r"Could not validate HuggingFace access to \S+ \(HTTP (\d+)\)",
         CL.NUREC_ACCESS, lambda m: {"reason": "unreachable", "http": _i(m[1])}),
        # the host's config-validation refusals: the catalog's entries (a1x_diagnostics/signatures/alpagym.py)
        *((sig.pattern, CL.HOST_CONFIG_REJECTED, _refusal(sig)) for sig in HOST_REFUSALS),
        # --- Cosmos-RL's launcher: the controller port it chose (cosmos_rl/launcher/launch_all.py)
        (r"Controller will be launched locally on port (\d+)",
         CL.CONTROLLER_PORT, lambda m: {"port": _i(m[1])}),
        (r"Using local IP: \S+ so launching controller on port (\d+)",
         CL.CONTROLLER_PORT, lambda m: {"port": _i(m[1])}),
        # --- the rollout worker (packages/runtime/src/alpagym_runtime/...)
        (r"Streaming rollout backend ready: runtime=(.*?) driver=.*"
         r"max_concurrent_rollouts=(\d+)", CL.BACKEND_READY, lambda m: {"runtime": m[1], "max_concurrent": _i(m[2])}),
        (r"rollout_generation: (\d+) payloads, is_validation=(\w+)", CL.GENERATION,
         lambda m: {"payloads": _i(m[1]), "validation": m[2] == "True"}),
        (r"Started AlpaGym driver session=(\S+) seed=(-?\d+)", CL.SESSION_STARTED,
         lambda m: {"uuid": m[1], "seed": _i(m[2])}),
        (r"Closed AlpaGym driver session=(\S+) recorded_steps=(\d+)",
         CL.SESSION_CLOSED, lambda m: {"uuid": m[1], "recorded_steps": _i(m[2])}),
        (r"Retrying payload uuid=(\S+) scene=(\S+) attempt=(\d+) retries_left=(-?\d+): ?(.*)",
         CL.EPISODE_RETRY,
         lambda m: {"uuid": m[1], "scene": m[2], "attempt": _i(m[3]), "retries_left": _i(m[4]), "error": _clip(m[5])}),
        (r"Dropping payload after exhausted retries: scene=(\S+) "
         r"last_uuid=(\S+): ?(.*)", CL.EPISODE_DROPPED, lambda m: {"scene": m[1], "uuid": m[2], "error": _clip(m[3])}),
        (r"Rollout payload exhausted retries: prompt_idx=(\d+) "
         r"collected=(\d+)/(\d+)", CL.PAYLOAD_EXHAUSTED,
         lambda m: {"prompt_idx": _i(m[1]), "collected": _i(m[2]), "target": _i(m[3])}),
        (r"non-finite trajectory; re-running inference \((\d+)/(\d+)\)",
         CL.NONFINITE, lambda m: {"what": "trajectory_retry", "attempt": _i(m[1]), "of": _i(m[2])}),
        (r"non-finite trajectory after (\d+) retries", CL.NONFINITE,
         lambda m: {"what": "trajectory", "attempt": _i(m[1])}),
        (r"model returned non-finite log_probs", CL.NONFINITE,
         lambda m: {"what": "log_probs"}),
        (r"rollout payload contains non-finite old_logprobs", CL.NONFINITE,
         lambda m: {"what": "old_logprobs"}),
        (r"model returned non-finite kl_div", CL.NONFINITE,
         lambda m: {"what": "kl_div"}),
        (r"\[GRPO:grad-guard\] non-finite reduced gradient", CL.NONFINITE,
         lambda m: {"what": "grad"}),
        (r"InferenceEngine forward pass failed; killing process",
         CL.ENGINE_FAILED, lambda m: {}),
        # --- the trainer and packer (alpagym_runtime.cosmos.trainer / packer / rollout_filter)
        (r"AlpaGym trainer step start current_step=(\d+) total_steps=(\d+) "
         r"received_rollouts=(\d+) group_size=(\d+)", CL.TRAINER_STEP_START,
         lambda m: {"step": _i(m[1]), "total": _i(m[2]), "received": _i(m[3]), "group_size": _i(m[4])}),
        (r"AlpaGym trainer step end current_step=(\d+) .*?loss_avg=(\S+) kl_avg=(\S+) "
         r".*?clip_fraction=(\S+) grad_norm=(\S+) lr=(\S+)", CL.TRAINER_STEP_END,
         lambda m: {"step": _i(m[1]), "loss_avg": _f(m[2]), "kl_avg": _f(m[3]), "clip_fraction": _f(m[4]),
                    "grad_norm": _f(m[5]), "lr": _f(m[6])}),
        (r"Packed AlpaGym replay artifact session=(\S+) .*?valid_steps=(\d+) "
         r"padded_steps=(\d+) reward=(\S+)", CL.PACKED,
         lambda m: {"uuid": m[1], "valid_steps": _i(m[2]), "padded_steps": _i(m[3]), "reward": _f(m[4])}),
        (r"Using (\d+)/(\d+) stale rollouts \(min_allowed_version=(-?\d+)",
         CL.STALE_USED, lambda m: {"stale": _i(m[1]), "kept": _i(m[2]), "min_allowed": _i(m[3])}),
        (r"has no trainable samples after filtering: current_step=(\d+)",
         CL.NO_SAMPLES, lambda m: {"step": _i(m[1])}),
        # --- AlpaSim's runtime (src/runtime/alpasim_runtime/event_loop.py, worker/*.py; src/eval)
        (r"Session STARTING: uuid=(\S+) scene=(\S+) steps=(\d+)", CL.SIM_STARTED,
         lambda m: {"uuid": m[1], "scene": m[2], "steps": _i(m[3])}),
        (r"Session COMPLETED: uuid=(\S+) scene=(\S+) simulated ([\d.]+) sim seconds in ([\d.]+) "
         r"wall clock seconds .*?\(total rollout ([\d.]+)s", CL.SIM_COMPLETED,
         lambda m: {"uuid": m[1], "scene": m[2], "sim_s": _f(m[3]), "wall_s": _f(m[4]), "total_s": _f(m[5])}),
        (r"Rollout FAILED: job=(\S+) scene=(\S+) uuid=(\S+) error=(.*)", CL.SIM_FAILED,
         lambda m: {"job": m[1], "scene": m[2], "uuid": m[3], "error": _clip(m[4])}),
        (r"Worker (\d+) died with exit code (-?\d+)", CL.SIM_WORKER_DIED,
         lambda m: {"worker": _i(m[1]), "code": _i(m[2])}),
        (r"Evaluation failed in subprocess for session (\S+)",
         CL.SIM_EVAL_FAILED, lambda m: {"uuid": m[1]}),
        (r"Aggregated metrics for (\S+): (\{.*\})", CL.SIM_METRICS,
         lambda m: {"uuid": m[1], "metrics": _dict(m[2])}),
    )
    for regex, needles in (regex_needles(pattern),)
    for needle in needles
)
# Error lines of the two formatted families that no rule names: ERROR_LINE for ``unexplained_error``.
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL"})
MARKERS: tuple[str, ...] = tuple(dict.fromkeys([r[0] for r in _RULES] + [" ERROR ", " CRITICAL ", "ERROR:\t",
                                                                         "CRITICAL:\t"]))
"""A line holding none of these gives no closed-loop event."""


def _stamp(text: str) -> datetime | None:
    try:
        return datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                        int(text[17:19]), int(text[20:23]) * 1000)
    except ValueError:
        return None


class ClosedLoopParser:
    """One per file. ``feed(lineno, text)`` -> events; never raises on odd input."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._capture = source.role in (Role.LAUNCHER, Role.STAGE)

    def teed(self, text: str) -> bool:
        """A line of a captured host terminal that repeats a role log the run folder holds."""
        if not self._capture or "|" not in text:
            return False
        m = _PREFIX.match(text)
        return m is not None and _TEED.fullmatch(m["name"]) is not None

    def feed(self, lineno: int, text: str) -> list[Event]:
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT]
        body = text
        rank: int | None = None
        m = _RANK.match(body)
        if m:
            rank = int(m[1])
            body = body[m.end():]
        elif self._capture and "|" in body:
            p = _PREFIX.match(body)
            if p is not None:
                if _TEED.fullmatch(p["name"]):
                    return []
                body = p["rest"]
        ts: datetime | None = None
        level: str | None = None
        clock: str | None = None
        msg = body
        a = _ALPAGYM.match(body)
        if a is not None:
            ts, level, msg = _stamp(a["ts"]), a["level"], a["msg"]
        else:
            s = _ALPASIM.match(body)
            if s is not None:
                clock, level, msg = s["clock"], s["level"], s["msg"]
        for needle, regex, kind, reader in _RULES:
            if needle not in msg:
                continue
            if kind is CL.HOST_CONFIG_REJECTED and not self._capture:
                continue  # the host's validation errors; a replica's own assertion is the open-loop engine's
            found = regex.search(msg)
            if found is None:
                continue
            try:
                fields = reader(found)
            except (IndexError, ValueError):
                continue
            return self._events(kind, fields, lineno, text, ts, level, rank, clock)
        if level in _ERROR_LEVELS:
            return [Signal(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank,
                           kind=SignalKind.ERROR_LINE, fields={"message": _clip(msg)})]
        return []

    def _events(self, kind: CL, fields: Mapping[str, Any], lineno: int, text: str, ts: datetime | None,
                level: str | None, rank: int | None, clock: str | None) -> list[Event]:
        event = ClosedLoop(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank, kind=kind,
                           fields=dict(fields), clock=clock)
        if kind is CL.COSMOS_COMPLETED:
            # The host's end of the Cosmos-RL launcher (subprocess.run(check=True) returned): for the outcome, the
            # processes the launcher started completed.
            done = Signal(source=self.source, line=lineno, text=text, ts=ts, level=level, rank=rank,
                          kind=SignalKind.PROCESS_COMPLETED, fields={"process": "cosmos launcher"})
            return [event, done]
        return [event]


def parse_closed_loop(lines: list[str], source: Source, first_lineno: int = 1) -> list[Event]:
    """``ClosedLoopParser`` over a list (tests, small files)."""
    parser = ClosedLoopParser(source)
    out: list[Event] = []
    for i, line in enumerate(lines):
        out.extend(parser.feed(first_lineno + i, line))
    return out


__all__ = ["MARKERS", "ClosedLoopParser", "parse_closed_loop"]
