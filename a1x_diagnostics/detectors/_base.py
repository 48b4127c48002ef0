"""The detector contract: a pure function of a ``DetectorContext`` that returns a ``Verdict``.

A detector never reads files or the clock: the context carries the metrics, the retained events,
the config and the time facts (the newest log timestamp, and ``now`` for runs still being written).
Register one with ``@detector("finding_id")``; the id must be in ``a1x_diagnostics.catalog``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from a1x_diagnostics.catalog import entry
from a1x_diagnostics.detectors._config import RunConfig, clip_text
from a1x_diagnostics.detectors._config import duration as duration

# The contract's names, for detectors: the context and its time helpers live below the facts.
from a1x_diagnostics.detectors._context import DetectorContext as DetectorContext
from a1x_diagnostics.detectors._context import ts_of as ts_of
from a1x_diagnostics.detectors._errors import stopped_from_outside as stopped_from_outside
from a1x_diagnostics.detectors._probes import Hit
from a1x_diagnostics.detectors.facts import RunFacts
from a1x_diagnostics.events import Event, Signal, SignalKind, Traceback
from a1x_diagnostics.findings import CheckState, Evidence, Finding, Fix, RunOutcome, Severity

MAX_EVIDENCE = 6


@dataclass(slots=True)
class Verdict:
    """What a detector concluded. ``state`` None = FINDING if there are findings, else OK."""

    findings: list[Finding] = field(default_factory=list)
    state: CheckState | None = None
    note: str | None = None

    @classmethod
    def blind(cls, note: str) -> Verdict:
        return cls(state=CheckState.BLIND, note=note)

    @classmethod
    def skipped(cls, note: str) -> Verdict:
        return cls(state=CheckState.SKIPPED, note=note)

    @classmethod
    def ok(cls, note: str | None = None) -> Verdict:
        return cls(state=CheckState.OK, note=note)

    def resolved_state(self) -> CheckState:
        if self.findings:
            return CheckState.FINDING
        return self.state or CheckState.OK


DetectorFn = Callable[[DetectorContext], Verdict]


@dataclass(frozen=True, slots=True)
class Conclusion:
    """What a concluding detector sees: the context, every finding before it, the run's outcome and the
    facts it was decided from (read once per evaluation)."""

    ctx: DetectorContext
    findings: list[Finding]
    outcome: RunOutcome
    facts: RunFacts


ConcludingFn = Callable[[Conclusion], Verdict]


@dataclass(frozen=True, slots=True)
class Detector:
    id: str
    fn: Callable[..., Verdict]
    module: str
    concluding: bool = False  # runs after the others, on a ``Conclusion``


REGISTRY: dict[str, Detector] = {}


def _register(finding_id: str, fn: Callable[..., Verdict], concluding: bool) -> None:
    entry(finding_id)  # KeyError for an id outside the contract
    if finding_id in REGISTRY:
        raise ValueError(f"two detectors for {finding_id!r}")
    REGISTRY[finding_id] = Detector(finding_id, fn, fn.__module__, concluding)


def detector(finding_id: str) -> Callable[[DetectorFn], DetectorFn]:
    """Register ``fn`` as the check for ``finding_id`` (a catalog id)."""

    def register(fn: DetectorFn) -> DetectorFn:
        _register(finding_id, fn, False)
        return fn

    return register


def concluding(finding_id: str) -> Callable[[ConcludingFn], ConcludingFn]:
    """Register ``fn`` as a check for ``finding_id`` that judges what the other detectors left: it runs
    after them, in registration order, and sees their findings and the run's outcome."""

    def register(fn: ConcludingFn) -> ConcludingFn:
        _register(finding_id, fn, True)
        return fn

    return register


# --- building findings -------------------------------------------------------------------------------
def to_evidence(item: Event | Hit | Evidence) -> Evidence:
    if isinstance(item, Evidence):
        return item
    event = item.event if isinstance(item, Hit) else item
    if isinstance(event, Traceback):
        text = event.lines[-1] if event.lines else event.text
        if event.exc_type and event.exc_message is not None and not text.strip():
            text = f"{event.exc_type}: {event.exc_message}"
        return Evidence(file=event.source.path, line=event.last_line, text=clip_text(text))
    return Evidence(file=event.source.path, line=event.line, text=clip_text(event.text))


def evidence_list(items: Iterable[Event | Hit | Evidence | None], limit: int = MAX_EVIDENCE) -> list[Evidence]:
    """Evidence in the given order (most telling first), without duplicates, at most ``limit``."""
    out: list[Evidence] = []
    seen: set[tuple[str, int | None]] = set()
    for item in items:
        if item is None:
            continue
        ev = to_evidence(item)
        key = (ev.file, ev.line)
        if key in seen:
            continue
        seen.add(key)
        out.append(ev)
        if len(out) >= limit:
            break
    return out


def make_finding(
    finding_id: str,
    explanation: str,
    evidence: Sequence[Event | Hit | Evidence | None],
    *,
    fixes: Sequence[Fix] = (),
    action: str | None = None,
    data: dict[str, Any] | None = None,
    severity: Severity | None = None,
    title: str | None = None,
) -> Finding | None:
    """A finding with the catalog's title and severity; None when there is no evidence."""
    cat = entry(finding_id)
    items = evidence_list(evidence)
    if not items:
        return None
    return Finding(
        id=finding_id,
        severity=severity or cat.severity,
        title=title or cat.title,
        explanation=explanation,
        evidence=items,
        fixes=list(fixes),
        action=action,
        data=data or {},
    )


def verdict_of(*findings: Finding | None) -> Verdict:
    return Verdict(findings=[f for f in findings if f is not None])


def fix(config: RunConfig, path: str, proposed: Any, why: str, *, seen: Any = None) -> Fix:
    """A Fix whose ``current`` is the user's value (TOML if given, else what the run used, else ``seen``:
    the value a log line showed)."""
    current = config.current(path)
    return Fix(path=path, current=seen if current is None else current, proposed=proposed, why=why)


def fmt(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "?"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


# --- run arithmetic shared by detectors ----------------------------------------------------------------
def batch_per_step(ctx: DetectorContext) -> int | None:
    """Completions one policy step consumes: train_batch_per_replica × policy replicas (§1)."""
    per_replica = ctx.config.integer("train.train_batch_per_replica")
    replicas = ctx.config.integer("policy.parallelism.n_init_replicas")
    if per_replica and replicas:
        return per_replica * replicas
    report = ctx.store.train_reports.last
    if report is not None and report.rollouts > 0:
        return report.rollouts  # 'Train report data from total N rollouts' is that product (§4.5)
    return None


def run_mode(ctx: DetectorContext) -> str:
    mode = ctx.config.get("mode")
    return mode if isinstance(mode, str) and mode else "disaggregated"


def gpus_per_replica(ctx: DetectorContext, section: str) -> int | None:
    """The launcher's per-replica GPU count: tp × dp_replicate × pp × cp × dp_shard (§2.2)."""
    if not ctx.config.known:
        return None
    total = 1
    for key in ("tp_size", "dp_replicate_size", "pp_size", "cp_size", "dp_shard_size"):
        value = ctx.config.integer(f"{section}.parallelism.{key}")
        if value is None:
            value = 1
        if key == "dp_shard_size" and value < 1:
            value = 1
        total *= value
    return total


# --- what the run has: its engine and its GPUs (fixes stay within them) -----------------------------------
# Backends whose engine reads rollout.gpu_memory_utilization (docs/reference/cosmos-rl.md §9: vllm_rollout.py:299,
# vllm_rollout_async.py:169, trtllm_rollout.py:101 at 747d1bd); a custom backend is taken as vLLM by its name (the
# recipe's reasoning_vla_vllm_rollout). example_hf, vla, gym... never read it.
_MEMORY_FRACTION_BACKENDS = frozenset({"vllm", "vllm_async", "trtllm"})


def rollout_backend(ctx: DetectorContext) -> str | None:
    """``rollout.backend`` as the next run will use it: the TOML's when one was given (defaults included: an unset
    key is vLLM, §8.4), else what the run's config dump logged; None when neither is known."""
    toml = ctx.config.toml
    if toml is not None:
        value = toml.get("rollout.backend")
        if isinstance(value, str) and value:
            return value
    for dump in ctx.config.dumps:
        value = dump.get("rollout.backend")
        if isinstance(value, str) and value:
            return value
    return None


def engine_reads_memory_fraction(backend: str | None) -> bool:
    """True when the rollout engine sizes itself by ``rollout.gpu_memory_utilization``."""
    return backend is not None and (backend in _MEMORY_FRACTION_BACKENDS or "vllm" in backend.lower())


def detected_gpus(ctx: DetectorContext) -> tuple[int | None, Signal | None]:
    """GPUs the launcher saw on this node (``Detected N GPUs: …`` in its output, §2.3), with that line; (None,
    None) when the logs do not say (no launcher output, or a multi-node job: then a node's count is not the
    job's)."""
    sig = ctx.store.signal(SignalKind.GPUS_DETECTED).last
    workers = ctx.store.signal(SignalKind.WORKERS_REQUIRED).last
    nodes = workers.fields.get("count") if workers is not None else None
    if sig is None or (isinstance(nodes, int) and nodes > 1):
        return None, None
    count = sig.fields.get("count")
    return (count, sig) if isinstance(count, int) and count > 0 else (None, None)


def policy_gpus_needed(ctx: DetectorContext, dp_shard: int) -> int | None:
    """GPUs the run's replicas need with the policy's ``dp_shard_size`` set to ``dp_shard`` (§2.2, §2.3): policy
    replicas × their GPUs, plus the rollouts' in disaggregated mode (colocated modes share the policies')."""
    replicas = ctx.config.integer("policy.parallelism.n_init_replicas")
    each = gpus_per_replica(ctx, "policy")
    shard = ctx.config.integer("policy.parallelism.dp_shard_size") or 1
    if not replicas or not each:
        return None
    policy = replicas * (each // max(1, shard)) * dp_shard
    if run_mode(ctx) != "disaggregated":
        return policy
    rollouts = ctx.config.integer("rollout.parallelism.n_init_replicas") or 0
    rollout_each = gpus_per_replica(ctx, "rollout") or 1
    return policy + rollouts * rollout_each
