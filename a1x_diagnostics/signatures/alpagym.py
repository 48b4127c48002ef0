"""AlpaGym's host: the config-validation refusals it raises before it starts anything (docs/reference/alpagym.md
§4.5), each a ``ValueError`` that Hydra prints after ``Error executing job with overrides``. The closed-loop
reader (``a1x_diagnostics.alpagym.parser``) reads a run folder's host log with these same entries; here they read
a host's captured terminal checked on its own.

One entry a message: see ``a1x_diagnostics/signatures/__init__.py`` for what an entry holds and how to add one."""

from __future__ import annotations

from a1x_diagnostics.events import SignalKind as S
from a1x_diagnostics.signatures.entry import Hit, Sig

_SRC = "NVlabs/alpagym@85ed1f5:packages/host/src/alpagym_host/"

SIGS = (
    Sig("host_config_rejected.model_path", r"(?P<message>policy\.model\.path (?:does not exist|must be an extracted|is a directory without|HF bundle directory must).*)", S.HOST_CONFIG_REJECTED, fields={"reason": "model_path"},
        source=_SRC + "config_validation.py:152-174 (docs/reference/alpagym.md §4.5)",
        samples=("ValueError: policy.model.path does not exist: /tmp/h40agrun/nomodel. Download or export an HF bundle directory containing config.json.",)),
    Sig("host_config_rejected.gpu_capacity", r"(?P<message>Cosmos Slurm GPU capacity is (?P<available>\d+), but policy and rollout replicas require (?P<required>\d+).*)", S.HOST_CONFIG_REJECTED, fields={"reason": "gpu_capacity"},
        source=_SRC + "config_validation.py:325-362 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: Cosmos Slurm GPU capacity is 4, but policy and rollout replicas require 6",)),
    Sig("host_config_rejected.replica_gpus", r"(?P<message>(?:policy|rollout) replica requires (?P<required>\d+) GPUs but each Cosmos Slurm worker exposes (?P<available>\d+).*)", S.HOST_CONFIG_REJECTED, fields={"reason": "gpu_capacity"},
        source=_SRC + "config_validation.py:325-362 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: policy replica requires 8 GPUs but each Cosmos Slurm worker exposes 4",)),
    Sig("host_config_rejected.batch_geometry", r"(?P<message>train_batch_per_replica\(\d+\) must be divisible by .*)", S.HOST_CONFIG_REJECTED, fields={"reason": "batch_geometry"},
        source=_SRC + "config_validation.py:283-322 (docs/reference/alpagym.md §4.5)",
        samples=("ValueError: train_batch_per_replica(3) must be divisible by mini_batch(2); train_batch_per_replica(3) must be divisible by dp_shard_size(1) * mini_batch(2)",)),
    Sig("host_config_rejected.dataset", r"(?P<message>dataset must set exactly one of .*)", S.HOST_CONFIG_REJECTED, fields={"reason": "dataset"},
        source=_SRC + "config_validation.py:93-114 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: dataset must set exactly one of scene_ids or test_suite_id",)),
    Sig("host_config_rejected.cosmos_mode", r"(?P<message>cosmos\.mode must be 'disaggregated' .*)", S.HOST_CONFIG_REJECTED, fields={"reason": "slurm"},
        source=_SRC + "config_validation.py:121 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: cosmos.mode must be 'disaggregated' for slurm execution",)),
    Sig("host_config_rejected.transport", r"(?P<message>transport=nccl requires .*)", S.HOST_CONFIG_REJECTED, fields={"reason": "transport"},
        source=_SRC + "config_validation.py:179-245 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: transport=nccl requires cosmos.mode=disaggregated",)),
    Sig("host_config_rejected.mounts", r"(?P<message>\S+ is not under any execution\.slurm\.container_mounts .*)", S.HOST_CONFIG_REJECTED, fields={"reason": "mounts"},
        source=_SRC + "config_validation.py:417-446 (docs/reference/alpagym.md §4.5)",
        samples=(),
        rendered=("ValueError: policy.model.path=/data/model is not under any execution.slurm.container_mounts source path; mount it into the container",)),
    Sig("host_config_rejected.backend", r"(?P<message>command=submit requires execution\.backend to be a Slurm backend)", S.HOST_CONFIG_REJECTED, fields={"reason": "backend"},
        source=_SRC + "config_validation.py:50-51 (docs/reference/alpagym.md §4.5)",
        samples=("ValueError: command=submit requires execution.backend to be a Slurm backend",)),
    Sig("host_config_rejected.enroot_credentials", r"(?P<message>ENROOT_CONFIG_PATH must point to a directory containing enroot \.credentials.*)", S.HOST_CONFIG_REJECTED, fields={"reason": "slurm"},
        source=_SRC + "slurm.py:453 (docs/reference/alpagym.md §4.5)",
        samples=("ValueError: ENROOT_CONFIG_PATH must point to a directory containing enroot .credentials before AlpaGym can resolve or import a Docker image",)),
    Sig("host_config_rejected.missing_choice", r"(?P<message>You must specify '(?P<key>[\w.]+)', e\.g, [\w.]+=<OPTION>)", S.HOST_CONFIG_REJECTED, fields={"reason": "missing_choice"},
        source="facebookresearch/hydra@v1.3.2:hydra/_internal/config_loader_impl.py (a config group without a value: "
               "for AlpaGym, an experiment Hydra did not find, conf/default.yaml:8; docs/reference/alpagym.md §2.5, §4.5)",
        samples=("You must specify 'topology', e.g, topology=<OPTION>",)),
)

HITS: tuple[Hit, ...] = ()
