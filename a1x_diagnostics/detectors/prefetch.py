"""The recipe's node prefetch server failing at runtime, or configured and never started.

Mechanism (docs/reference/alpamayo-recipe.md §9.2-§9.4): one prefetch server per node caches samples in POSIX
shared memory; clients ask it over a Unix socket (30 s timeout, one retry) and fall back to
loading synchronously on a miss. Its lines are ``[AlpamayoPrefetch][lvl] ts pid=N event k=v``
(§9.3). Failures show as client RPC timeouts/failures, shared-memory blocks vanishing (capacity
too small, or /dev/shm full), dying workers, or the server never starting; the fatal ones end as
``RuntimeError`` tracebacks. With ``capacity > 0`` and an info-or-chattier log level, a run that
trains without a single prefetch line has prefetch silently off. The TOML rules (capacity vs batch
size, ``data_dispatch_as_rank_in_mesh``, misspelled keys) are the linter's (``a1x-tui lint``).
"""

from __future__ import annotations

from a1x_diagnostics.detectors._base import DetectorContext, Verdict, detector, fix, make_finding, verdict_of
from a1x_diagnostics.detectors._config import clip_text
from a1x_diagnostics.events import Prefetch, Role, Traceback
from a1x_diagnostics.findings import Fix, Severity

ERROR_EVENTS = (
    "client_rpc_failed",
    "client_server_start_timeout",
    "client_get_server_error",
    "client_shm_attach_failed",
    "server_prefetch_worker_error",
)
WARN_EVENTS = ("server_worker_died", "client_rpc_timeout", "client_shm_attach_retry")
STALE_EVENTS = ("client_cleaned_stale_socket", "server_socket_stale_unlink")
MIN_WARNINGS = 3
MIN_STALE = 3
QUIET_LEVELS = {"off", "error", "warn", "warning"}


def _prefetch_fixes(ctx: DetectorContext, events: set[str], texts: str) -> tuple[list[Fix], str | None]:
    cfg = ctx.config
    fixes: list[Fix] = []
    actions: list[str] = []
    capacity = cfg.integer("custom.alpamayo.prefetch.capacity")
    per_replica = cfg.integer("train.train_batch_per_replica")
    if events & {"client_shm_attach_failed", "client_shm_attach_retry"} or "shared_memory disappeared" in texts:
        proposed = max((capacity or 0) * 2, per_replica or 0, 16)
        fixes.append(
            fix(
                cfg,
                "custom.alpamayo.prefetch.capacity",
                proposed,
                "entries are evicted before clients attach: the cache is too small (§9.4); trade-off: more of the "
                "node's /dev/shm",
            )
        )
    if events & {"client_rpc_timeout", "server_worker_died", "client_rpc_failed"} or "Failed to RPC" in texts:
        workers = cfg.integer("custom.alpamayo.prefetch.num_workers")
        fixes.append(
            fix(
                cfg,
                "custom.alpamayo.prefetch.num_workers",
                max((workers or 1) * 2, 5),
                "a starved server loop times out client RPCs (§9.4); trade-off: more forked worker processes, more "
                "CPU and host memory",
            )
        )
    if "No space left on device" in texts:
        actions.append("Enlarge /dev/shm (e.g. docker --shm-size); the cache lives in POSIX shared memory.")
    if "capacity must be > 0" in texts:
        fixes = [f for f in fixes if f.path != "custom.alpamayo.prefetch.capacity"]  # one edit per key
        fixes.append(
            fix(
                cfg,
                "custom.alpamayo.prefetch.capacity",
                per_replica or 16,
                "the server refuses to start with capacity <= 0; trade-off: the cache takes /dev/shm",
            )
        )
    if "dispatch bases" in texts:
        actions.append(
            "Set policy.parallelism.n_init_replicas and rollout.parallelism.n_init_replicas explicitly in the TOML."
        )
    if events & set(STALE_EVENTS):
        actions.append(
            "Put custom.alpamayo.prefetch.socket_dir on a node-local path (or export HOSTNAME/JOB_ID): "
            "processes keep removing each other's sockets."
        )
    return fixes, " ".join(actions) or None


@detector("prefetch_misconfig")
def prefetch_misconfig(ctx: DetectorContext) -> Verdict:
    store = ctx.store
    errors: list[Prefetch] = [e for name in ERROR_EVENTS for e in (store.prefetch.get(name) or [])]
    warnings: list[Prefetch] = [e for name in WARN_EVENTS for e in (store.prefetch.get(name) or [])]
    stale: list[Prefetch] = [e for name in STALE_EVENTS for e in (store.prefetch.get(name) or [])]
    fatal = ctx.hits("prefetch_error")
    seen_events = {e.event for e in (*errors, *warnings, *stale)}
    texts = " ".join([*(h.event.text for h in fatal), *(e.text for e in errors)])
    if isinstance(fatal[0].event if fatal else None, Traceback):
        texts += " " + " ".join(" ".join(h.event.lines[-3:]) for h in fatal if isinstance(h.event, Traceback))

    findings = []
    if fatal or errors or len(warnings) >= MIN_WARNINGS or len(stale) >= MIN_STALE:
        parts = []
        if fatal:
            parts.append(f"a process stopped on a prefetch error ({clip_text(fatal[0].event.text.strip(), 160)})")
        if errors:
            names = sorted({e.event for e in errors})
            parts.append(f"the prefetch client/server logged errors: {', '.join(names)}")
        if len(warnings) >= MIN_WARNINGS:
            names = sorted({e.event for e in warnings})
            parts.append(f"{len(warnings)} prefetch warnings ({', '.join(names)})")
        if len(stale) >= MIN_STALE:
            parts.append(f"{len(stale)} stale-socket clean-ups (several servers fighting over one socket name)")
        fixes, action = _prefetch_fixes(ctx, seen_events, texts)
        severity = Severity.CRITICAL if any(isinstance(h.event, Traceback) for h in fatal) else None
        findings.append(
            make_finding(
                "prefetch_misconfig",
                "The node prefetch server is failing: " + "; ".join(parts) + ". A miss degrades to slow synchronous "
                "loading; a client error stops the replica.",
                [*fatal[:2], *errors[:2], *warnings[-2:], *stale[-1:]],
                fixes=fixes,
                action=action,
                severity=severity,
                data={"errors": len(errors), "warnings": len(warnings), "fatal": len(fatal)},
            )
        )

    capacity = ctx.config.integer("custom.alpamayo.prefetch.capacity")
    level = str(ctx.config.get("custom.alpamayo.prefetch.log_level") or "debug").lower()
    replica_files = ctx.files(Role.POLICY, Role.ROLLOUT)
    trained = ctx.metrics.step is not None or bool(store.stats)
    if capacity and capacity > 0 and level not in QUIET_LEVELS and replica_files and trained and not store.prefetch:
        located = ctx.config.locate("custom.alpamayo.prefetch.capacity")
        first_step = store.steps.first or store.stats.first
        findings.append(
            make_finding(
                "prefetch_misconfig",
                f"The config asks for a prefetch cache (capacity = {capacity}, log_level = {level!r}) but no replica "
                "log has a single `[AlpamayoPrefetch]` line although the run is training: prefetch never started, "
                "so every sample is loaded synchronously inside the step.",
                [located, first_step],
                action="Check that the entry script is the recipe's (it installs the prefetch wrapper) and that "
                "[custom.alpamayo.prefetch] is spelled exactly so; see docs/reference/alpamayo-recipe.md §9.",
                data={"capacity": capacity},
            )
        )
    if not findings and not store.prefetch and not ctx.config.is_set("custom.alpamayo"):
        return Verdict.skipped("not an Alpamayo recipe run (no [custom.alpamayo] in the config, no prefetch lines)")
    return verdict_of(*findings)
