"""Hits: one vocabulary for "this error was seen", whether the parser named it or not.

The parser turns the lines it knows into ``Signal`` events; the same errors also reach the logs as
the last line of a Python traceback, or as a line of a family it does not classify (a recipe
``RuntimeError`` text, a vLLM error). Detectors ask for *hits* by id and get both: the signal
events mapped below, and the tracebacks / unclaimed error lines whose text matches a probe. Every
pattern is a verbatim message from the references (section named per probe).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from a1x_diagnostics.events import Event, LogLine, Signal, SignalKind, Traceback


@dataclass(frozen=True, slots=True)
class Hit:
    """An event that shows error ``id``; ``fields`` holds what the text says (a name, a kind)."""

    id: str
    event: Event
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Probe:
    id: str
    needles: tuple[str, ...]  # any of these substrings (fast pre-check)
    pattern: re.Pattern[str] | None = None  # then this must match, if given
    kind: str | None = None  # a fixed 'kind' field for the hit


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


PROBES: tuple[Probe, ...] = (
    # docs/reference/alpamayo-recipe.md §8.1 / §14 row 7
    Probe("missing_env_var", ("Missing required env var",), _p(r"Missing required env var (?P<name>[A-Z0-9_]+)")),
    # §14 row 1: Hydra turned `null` into the string 'None' and a path ends in /None
    Probe(
        "hydra_none_string",
        ("/None",),
        _p(
            r"(?P<path>[^\s'\"]*/None)(?=['\"\s,):]|$).*(?:does not exist|not found|No such file)"
            r"|(?:does not exist|not found|No such file)[^\n]*?(?P<path2>[^\s'\"]*/None)(?=['\"\s,):]|$)"
        ),
    ),
    # §8.4 / §14 row 14
    Probe(
        "wandb_forbidden",
        ("wandb", "Wandb", "upsertBucket"),
        _p(r"(?i)\b403\b|permission denied|upsertBucket|forbidden"),
    ),
    # §7 / §14 row 5
    Probe(
        "grader_missing",
        ("Reasoning grading model directory does not exist",),
        _p(r"does not exist: '(?P<path>[^']*)'"),
    ),
    # §4 failures / §14 row 3
    Probe("gated_repo", ("GatedRepoError", "Cannot access gated repo", "gated repo"), _p(r"(?P<url>https?://\S+)?")),
    # §5 / §14 row 4
    Probe(
        "hf_rate_limit",
        ("429",),
        _p(r"(?i)\b429\b.*(too many requests|rate.?limit)|(too many requests|rate.?limit).*\b429\b"),
    ),
    # §14 row 8: a Cosmos policy checkpoint loaded as if it were an HF model
    Probe(
        "pth_loaded_directly",
        ("model_rank_", "does not appear to have a file named"),
        _p(
            r"(?i)(could not|cannot|unable to|failed to) load\b.*model_rank_\S*\.pth"
            r"|checkpoints/step_\d+/policy\S* does not appear to have a file named"
        ),
    ),
    # §2.3 / §8.3 / §14 row 17
    Probe(
        "redis_missing",
        ("redis-server", "redis server"),
        _p(
            r"Failed to start redis server with command: .* with return code 127"
            r"|redis-server: (?:command )?not found|No such file or directory: '?redis-server"
        ),
    ),
    # §6 / §14 row 6
    Probe(
        "mini_parquet_missing",
        ("clip_index_mini.parquet", "clip_index_reasoning_mini.parquet"),
        _p(r"(?i)(FileNotFoundError|No such file|does not exist|not found)"),
    ),
    # §8.7 / §14 row 18
    Probe(
        "model_not_converted", ("not supported for vLLM rollout",), _p(r"Model type (?P<model_type>\S+) not supported")
    ),
    # §8.7 / §14 row 19
    Probe(
        "recipe_parallelism_unsupported",
        ("not supported for ReasoningVLACosmos", "Pipeline Parallel is not supported for Reasoning VLA"),
        _p(r"(?P<what>TP|CP|Compile) not supported for ReasoningVLACosmos|(?P<pp>Pipeline Parallel) is not supported"),
    ),
    # §12.3 / §14 row 25
    Probe("export_rank_mismatch", ("Rank key mismatch", "Unsupported placements for"), None),
    # §9.3: the prefetch client's RuntimeErrors and the server's fatal config errors
    Probe(
        "prefetch_error",
        (
            "Timed out waiting for node prefetch server",
            "Failed to RPC to node prefetch server",
            "shared_memory disappeared",
            "prefetch.capacity must be > 0 to run server",
            "Prefetch enabled but",
            "[Rollout] Prefetch fetch failed",
        ),
        None,
    ),
    # docs/reference/cosmos-rl.md §5.3, §5.4: checkpoint saves that raised
    Probe(
        "checkpoint_failed",
        (
            "Final checkpoint failed",
            "Final checkpoint invalidation failed",
            "Failed to finalize checkpoint manager",
            "Async checkpoint save/upload failed",
        ),
        None,
    ),
    # docs/reference/cosmos-rl.md §6.7: vLLM / torch out-of-memory texts
    Probe("oom", ("No available memory for the cache blocks",), None, kind="no_cache_blocks"),
    Probe("oom", ("KV cache is needed, which is larger than the available KV cache memory",), None, kind="kv_cache"),
    Probe("oom", ("that can be stored in KV cache",), None, kind="kv_cache"),
    Probe("oom", ("is less than desired GPU memory utilization",), None, kind="free_memory"),
    Probe("oom", ("larger than the available KV cache memory",), None, kind="kv_cache"),
    Probe("oom", ("CUDA Error: out of memory",), None, kind="cumem"),  # vLLM's cumem allocator (sleep mode)
    Probe(
        "oom",
        ("CUDA out of memory", "OutOfMemoryError", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED",
         "Cuda failure 2 'out of memory'", "Cuda failure 'out of memory'"),
        None,
        kind="cuda_oom",
    ),
    # §6.3
    Probe(
        "rollout_generation_failed",
        ("Failed in rollout generation:",),
        _p(r"Failed in rollout generation: (?P<error>.*)"),
    ),
    # §13.6 NCCL
    Probe("nccl", ("NCCL: raw host call exceeded",), None, kind="host_call_timeout"),
    Probe("nccl", ("NCCL: async error detected",), None, kind="async_error"),
    Probe("nccl", ("NCCL: non-blocking enqueue timed out",), None, kind="enqueue_timeout"),
    Probe("nccl", ("[Watchdog] NCCL block exceeded",), None, kind="watchdog"),
    Probe("nccl", ("Watchdog caught collective operation timeout",), None, kind="torch_watchdog"),
    Probe("nccl", ("wait for nccl comm ready timeout",), None, kind="comm_timeout"),
    Probe("nccl", ("[HA_NCCL]",), _p(r"nccl op '\w+' failed after"), kind="ha_failed"),
    # §13.6 heartbeat / controller unreachable
    Probe("http", ("Failed to send heartbeat to controller",), None, kind="heartbeat"),
    Probe("http", ("Failed to register to controller",), None, kind="register"),
    Probe("http", ("Failed to communicate with controller after attempts",), None, kind="communicate"),
    Probe("http", ("Failed in fetching next prompt from controller",), None, kind="fetch_prompt"),
    Probe("http", ("Failed in sending rollout completion to controller",), None, kind="send_rollout"),
    Probe("http", ("send train ack to controller after retries",), None, kind="train_ack"),
    Probe("http", ("Failed in query commands from controller",), None, kind="query_commands"),
    # docs/reference/cosmos-rl.md §4.1: config validation and controller setup errors
    Probe(
        "config_load_failed",
        ("Failed to load or parse config file",),
        _p(r"Failed to load or parse config file (?P<path>\S+): (?P<error>.*)"),
    ),
    Probe(
        "config_load_failed",
        ("Error reading config file",),
        _p(r"Error reading config file (?P<path>\S+): (?P<error>.*)"),
    ),
    # §2.4 launcher GPU layout errors
    Probe("gpu_layout", ("Replica with GPUs larger than 8",), None, kind="larger_than_node"),
    Probe("gpu_layout", ("Not enough GPUs available. Required:",), None, kind="not_enough"),
    Probe("gpu_layout", ("No GPUs available. Please check your GPU configuration",), None, kind="no_gpus"),
    Probe("gpu_layout", ("Number of GPUs per node must be 1, 2, 4, or 8",), None, kind="bad_per_node"),
    # torchrun's failure summary (§3.4)
    Probe("child_failed", ("ChildFailedError",), None),
)


_SIGNAL_HITS: dict[SignalKind, str] = {
    SignalKind.MISSING_ENV_VAR: "missing_env_var",
    SignalKind.HYDRA_NONE_STRING: "hydra_none_string",
    SignalKind.GRADER_MISSING: "grader_missing",
    SignalKind.GATED_REPO: "gated_repo",
    SignalKind.RATE_LIMITED: "hf_rate_limit",
    SignalKind.PTH_LOAD_FAILED: "pth_loaded_directly",
    SignalKind.MODEL_TYPE_UNSUPPORTED: "model_not_converted",
    SignalKind.RECIPE_UNSUPPORTED_PARALLELISM: "recipe_parallelism_unsupported",
    SignalKind.MINI_PARQUET_MISSING: "mini_parquet_missing",
    SignalKind.OOM: "oom",
    SignalKind.NCCL_ERROR: "nccl",
    SignalKind.HTTP_FAILURE: "http",
    SignalKind.ROLLOUT_GENERATION_FAILED: "rollout_generation_failed",
    SignalKind.CONFIG_LOAD_FAILED: "config_load_failed",
    SignalKind.CONFIG_READ_ERROR: "config_load_failed",
    SignalKind.GPU_LAYOUT_ERROR: "gpu_layout",
    SignalKind.CHILD_FAILED: "child_failed",
    SignalKind.REDIS_FAILURE: "redis_failure",
}

_FORBIDDEN = re.compile(r"(?i)\b403\b|permission denied|upsertBucket|forbidden")
_OOM_KIND_BY_TEXT = tuple((p.needles, p.kind) for p in PROBES if p.id == "oom")


def signal_hits(signal: Signal) -> list[Hit]:
    """The hits a parser signal stands for (most map to one id; some need a look at the text)."""
    if signal.kind is SignalKind.ERROR_LINE:
        return probe_text(signal.text, signal)  # an error line no rule named: the probes still read it
    hits: list[Hit] = []
    hit_id = _SIGNAL_HITS.get(signal.kind)
    fields = dict(signal.fields)
    if signal.kind is SignalKind.OOM and fields.get("kind") == "prompt_too_long":
        hit_id = "rollout_generation_failed"  # a request longer than max_model_len: not a memory problem (§6.7)
    if hit_id is not None:
        if hit_id == "oom" and not fields.get("kind"):
            fields["kind"] = oom_kind(signal.text) or "cuda_oom"
        hits.append(Hit(hit_id, signal, fields))
    if signal.kind is SignalKind.WANDB_INIT_FAILED and (fields.get("forbidden") or _FORBIDDEN.search(signal.text)):
        hits.append(Hit("wandb_forbidden", signal, fields))
    if signal.kind is SignalKind.REDIS_FAILURE and (fields.get("rc") == 127 or "return code 127" in signal.text):
        hits.append(Hit("redis_missing", signal, fields))
    if signal.kind is SignalKind.ROLLOUT_GENERATION_FAILED and oom_kind(signal.text):
        hits.append(Hit("oom", signal, {"kind": oom_kind(signal.text)}))
    return hits


def oom_kind(text: str) -> str | None:
    for needles, kind in _OOM_KIND_BY_TEXT:
        if any(n in text for n in needles):
            return kind
    return None


def probe_text(text: str, event: Event) -> list[Hit]:
    """Probes over one text; at most one hit per probe id."""
    hits: list[Hit] = []
    seen: set[str] = set()
    for probe in PROBES:
        if probe.id in seen or not any(n in text for n in probe.needles):
            continue
        fields: dict[str, Any] = {}
        if probe.pattern is not None:
            match = probe.pattern.search(text)
            if match is None:
                continue
            fields = {k: v for k, v in match.groupdict().items() if v is not None}
        if probe.kind is not None:
            fields["kind"] = probe.kind
        seen.add(probe.id)
        hits.append(Hit(probe.id, event, fields))
    return hits


_PROBED_LEVELS = frozenset({None, "ERROR", "CRITICAL", "WARNING"})


def event_hits(event: Event) -> list[Hit]:
    """Every hit an event shows. Cheap for the lines that cannot matter (INFO/DEBUG log lines)."""
    if isinstance(event, Signal):
        return signal_hits(event)
    if isinstance(event, Traceback):
        tail = "\n".join(event.lines[-4:])
        if event.exc_message and event.exc_message not in tail:
            tail = f"{tail}\n{event.exc_type}: {event.exc_message}"
        return probe_text(tail, event)
    if isinstance(event, LogLine) and event.level in _PROBED_LEVELS:
        return probe_text(event.text, event)
    return []
