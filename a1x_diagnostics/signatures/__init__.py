r"""The catalog of every message shape a1x-tui recognises: one entry a message, grouped by who prints it.

=============== =====================================================================================
``controller``  the Cosmos-RL controller (``controller.log``)
``replicas``    the policy and rollout processes (``policy_<i>.log``, ``rollout_<i>.log``)
``launcher``    the ``cosmos-rl`` launcher, torchrun's agent, the shell and Slurm around them
``recipe_hub``  the Alpamayo recipe, the Hugging Face Hub, W&B
``other_stacks`` torch, NCCL, vLLM, SGLang, Ray, Hydra
``alpagym``     AlpaGym's host: its config-validation refusals
``closed_loop`` AlpaGym's host, rollout worker and trainer, AlpaSim: closed-loop events (``CL``), read by
                ``a1x_diagnostics.alpagym.parser`` (with ``alpagym``'s refusals), not by the open-loop readers
=============== =====================================================================================

A ``Sig`` (``entry.py``) is a line that gives an event: its regex, the event (a ``SignalKind``, or an
event class with typed fields), its gate in controller and replica logs, where the message comes from
(``repo@rev:file:line`` or the issue it was seen in) and real sample lines. A ``Hit`` is a text that
marks a traceback or an unclaimed error line with an error id the detectors ask for (``oom``,
``nccl``...). A ``Benign`` is an error text that is not a failure (``BENIGN``), with the reason why.
The readers derive everything else from the entries (``a1x_diagnostics.parsing``): the needle looked up
before each regex, the strings a scanner looks for, which entries a line of a replica log may hold.
Entries are tried in catalog order (``SIGS``); the first that matches wins.

**Adding a message**: one entry with a real sample line (or, where no recording shows it, a line rendered
from the source's format string, in ``rendered``), in the file of who prints it, e.g. in ``replicas.py``::

    Sig("nccl_error.ha_readiness_failed", r"nccl readiness failed after (?P<attempts>\d+) attempts", S.NCCL_ERROR,
        gate=OWN, fields={"kind": "ha_failed"}, read_in=Role.POLICY,
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/utils/distributed.py:817 (docs/reference/cosmos-rl.md §16.1)",
        samples=(), rendered=("[rank0]:RuntimeError: [HA_NCCL][global_rank 0, replica_rank 0] c60c51a2-… nccl "
                              "readiness failed after 3 attempts.",)),

``tests/signatures`` reads every sample as a line of its file (a replica log for ``replicas.py``,
``read_in=`` otherwise) and checks that it gives this entry's event and that no earlier entry takes it.
A detector is needed only when the event needs new logic (docs/findings.md, "Adding a message").
"""

from __future__ import annotations

from a1x_diagnostics.events import SignalKind
from a1x_diagnostics.signatures import alpagym, closed_loop, controller, launcher, other_stacks, recipe_hub, replicas
from a1x_diagnostics.signatures.entry import OWN, Benign, Hit, Sig

GROUPS = {"controller": controller, "replicas": replicas, "launcher": launcher, "recipe_hub": recipe_hub,
          "other_stacks": other_stacks, "alpagym": alpagym, "closed_loop": closed_loop}
"""Each group's module, in catalog order."""

SIGS: tuple[Sig, ...] = (
    *controller.SIGS, *replicas.SIGS, *launcher.WRAPPERS, *other_stacks.SIGS, *launcher.SIGS, *controller.LATE,
    *replicas.LATE, *recipe_hub.SIGS, *alpagym.SIGS,
)
"""Every line entry, in the order they are tried: a message another may quote comes after it (a wrapper
quotes any error; an NCCL or HTTP failure of Cosmos-RL may quote torch's text)."""

HITS: tuple[Hit, ...] = tuple(h for g in GROUPS.values() for h in g.HITS)
"""Every text entry, in the order they are tried (a hit id is given once per text: its first entry)."""

BENIGN: tuple[Benign, ...] = tuple(b for g in GROUPS.values() for b in getattr(g, "BENIGN", ()))
"""Every error text that is not a failure, in the order they are asked (``detectors._errors.benign_reason``)."""

HIT_OF_KIND: dict[SignalKind, str] = {
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
"""The hit id a signal of each kind counts as (the same vocabulary as the ``Hit`` entries)."""

__all__ = ["BENIGN", "GROUPS", "HITS", "HIT_OF_KIND", "OWN", "SIGS", "Benign", "Hit", "Sig"]
