"""Launcher: the ``cosmos-rl`` launcher's own output, torchrun's agent, the shell and Slurm around them
(docs/reference/cosmos-rl.md §2, §11; docs/reference/foreign-errors.md E3-E5).

One entry a message: see ``a1x_diagnostics/signatures/__init__.py`` for what an entry holds and how
to add one."""

from __future__ import annotations

from a1x_diagnostics.events import Role
from a1x_diagnostics.events import SignalKind as S
from a1x_diagnostics.signatures.entry import OWN, Hit, Monitor, Sig

# Failures that quote another error (read too): tried before other stacks' entries.
WRAPPERS = (
    Sig("config_load_failed.failed_to_load_or_parse", r"Failed to load or parse config file (?P<path>.+?\.toml|\S+): (?P<error>.*?)\.?\s*$", S.CONFIG_LOAD_FAILED, wrapper=True, read_in=Role.CONTROLLER,
        source="cosmos-rl@89f2e5b5:run_web_panel.py:905 (docs/reference/cosmos-rl.md §4.1)",
        samples=("Traceback (most recent call last):\n  File \"/opt/cosmos_rl/entry.py\", line 12, in main\nRuntimeError: Failed to load or parse config file /tmp/tmpx.toml: Missing required env var ALPAMAYO_PAI_LOCAL_DIR (expected PAI dataset root, e.g. /path/to/PAI_mini).",)),
    Sig("config_read_error.error_reading_config_file", r"Error reading config file (?P<path>.+?\.toml|\S+): (?P<error>.*)$", S.CONFIG_READ_ERROR, wrapper=True,
        source="cosmos-rl@89f2e5b5:launch_all.py:100 (docs/reference/cosmos-rl.md §2.4)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - ERROR - Error reading config file /x/run.toml: Duplicate keys!",)),
)

SIGS = (
    Sig("gpus_detected.detected_gpus", r"Detected (?P<count>\d+) GPUs: ?(?P<ids>.*)$", S.GPUS_DETECTED,
        source="cosmos-rl@89f2e5b5:utility.py:60 (docs/reference/cosmos-rl.md §2.3)",
        samples=(
            "INFO:cosmos:Detected 2 GPUs: 0, 1",
            "[cosmos] 2026-11-29 15:02:24,359 - cosmos - INFO - Detected 1 GPUs: 0",
        )),
    Sig("replicas_planned.number_of_replicas", r"Number of (?P<role>policy|rollout|reference) replicas: (?P<count>\d+) with (?P<gpus_each>\d+) gpus each", S.REPLICAS_PLANNED,
        source="cosmos-rl@89f2e5b5:launcher/utility.py:831 (docs/reference/cosmos-rl.md §2.3)",
        samples=(
            "INFO:cosmos:Number of policy replicas: 1 with 2 gpus each",
            "INFO:cosmos:Number of rollout replicas: 0 with 1 gpus each",
        )),
    Sig("workers_required.number_of_workers_required", r"Number of workers required: (?P<count>\d+)", S.WORKERS_REQUIRED,
        source="cosmos-rl@89f2e5b5:launch_all.py:844 (docs/reference/cosmos-rl.md §2.3)",
        samples=(
            "[cosmos] 2026-11-29 15:02:24,361 - cosmos - INFO - Number of workers required: 1",
            "[cosmos] 2026-12-01 20:07:23,712 - cosmos - INFO - Number of workers required: 1",
        )),
    Sig("multiple_workers.multiple_worker_nodes_will_be", r"Multiple worker nodes will be used", S.MULTIPLE_WORKERS,
        source="cosmos-rl@89f2e5b5:launch_all.py:849 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "[cosmos] 2026-11-29 15:02:23,357 - cosmos - INFO - Multiple worker nodes will be used. Ensure that the launch script is excuted on all worker nodes.",
            "[cosmos] 2026-11-29 14:56:07,550 - cosmos - INFO - Multiple worker nodes will be used. Ensure that the launch script is excuted on all worker nodes.",
        )),
    Sig("controller_ready.controller_is_ready_at", r"Controller is ready at (?P<url>\S+)", S.CONTROLLER_READY,
        source="cosmos-rl@89f2e5b5:launch_all.py:925 (docs/reference/cosmos-rl.md §2.6)",
        samples=(
            "[cosmos] 2026-11-29 15:02:52,392 - cosmos - INFO - Controller is ready at localhost:8600",
            "[cosmos] 2026-11-29 15:02:44,132 - cosmos - INFO - Controller is ready at localhost:8300",
        )),
    Sig("process_launched.controller", r"Launching process with command: \S*launch_controller\.sh", S.PROCESS_LAUNCHED, fields={"role": "controller"},
        source="cosmos-rl@89f2e5b5:cosmos_rl/launcher/utility.py:406 (docs/reference/cosmos-rl.md §2.3, §2.7)",
        samples=("[cosmos] 2026-11-29 15:02:24,362 - cosmos - INFO - Launching process with command: /tmp/crl_run.HtJQ/site/cosmos_rl/launcher/launch_controller.sh --config /tmp/tmplcacvuch.toml --port 8600 --script /work/main/tools/fixture_recorder/entry_tiny_grpo.py ",)),
    Sig("process_launched.replica", r"Launching process with command: \S*launch_replica\.sh .*?--type (?P<role>policy|rollout|reference)\b", S.PROCESS_LAUNCHED,
        source="cosmos-rl@89f2e5b5:cosmos_rl/launcher/utility.py:406 (docs/reference/cosmos-rl.md §2.3, §2.7)",
        samples=("[cosmos] 2026-11-29 15:02:52,393 - cosmos - INFO - Launching process with command: /tmp/crl_run.HtJQ/site/cosmos_rl/launcher/launch_replica.sh --type policy --ngpus 1 --backend example_hf --config /tmp/tmplcacvuch.toml --script /work/main/tools/fixture_recorder/entry_tiny_grpo.py ",)),
    Sig("process_planned.output_files", r"Appending command: .*? output files: (?P<path>[^,\s]+)", S.PROCESS_PLANNED,
        source="cosmos-rl@89f2e5b5:cosmos_rl/launcher/utility.py:406 (docs/reference/cosmos-rl.md §2.3, §3.1)",
        samples=("[cosmos] 2026-11-29 15:02:24,361 - cosmos - INFO - Appending command: /tmp/crl_run.HtJQ/site/cosmos_rl/launcher/launch_replica.sh --type policy --ngpus 1 --backend example_hf --config /tmp/tmplcacvuch.toml --script /work/main/tools/fixture_recorder/entry_tiny_grpo.py  with gpu devices: 0, control URL: localhost:8600, output files: /tmp/fx747/buffer_growth/logs_20261129-150224/policy_0.log, env: None",)),
    Sig("process_failed.failed_with_return_code", r"Process (?P<process>\S+) failed with return code (?P<rc>-?\d+)", S.PROCESS_FAILED,
        source="cosmos-rl@89f2e5b5:launch_all.py:983 (a list position); nvidia-cosmos/cosmos-rl@0.4.7:"
               "cosmos_rl/launcher/launch_all.py:446 (a pid: a worker's failure is logged and the launcher waits on; "
               "the controller's, or any rc 86, kills every process without a line) (docs/reference/cosmos-rl.md "
               "§2.7, §16.2)",
        samples=(
            "[cosmos] 2026-11-29 15:03:40,811 - cosmos - ERROR - Process 1 failed with return code 1",
            "[cosmos] 2026-12-01 20:08:44,479 - cosmos - ERROR - Process 2 failed with return code 1",
            "[cosmos] 2026-12-05 21:44:19,831 - cosmos - ERROR - Process 1574 failed with return code 1",
            "[cosmos] 2026-12-05 21:44:20,699 - cosmos - ERROR - Process 1254 failed with return code 137",
            "[cosmos] 2026-12-05 21:45:03,710 - cosmos - ERROR - Process 1209 failed with return code 86",
        )),
    Sig("process_failed.terminating_other_processes", r"(?P<process>Policy|Rollout|Controller|Reference) failed with exit code (?P<rc>-?\d+)\. Terminating other processes", S.PROCESS_FAILED,
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/tools/slurm/cosmos_rl_job_multi_node.sh:589, :603, :621 (docs/reference/cosmos-rl.md §11.1)",
        samples=("[2025-06-09 01:02:03.456 PM UTC][cosmos-rl-sbatch]: Rollout failed with exit code 137. Terminating other processes.",)),
    Sig("process_completed.completed_successfully", r"Process (?P<process>\S+) completed successfully", S.PROCESS_COMPLETED,
        source="cosmos-rl@89f2e5b5:launch_all.py:968 (docs/reference/cosmos-rl.md §2.7)",
        samples=(
            "[cosmos] 2026-11-29 15:04:32,772 - cosmos - INFO - Process 1 completed successfully",
            "[cosmos] 2026-11-29 15:04:30,240 - cosmos - INFO - Process 1 completed successfully",
        )),
    Sig("process_completed.completed_rc", r"Process (?P<process>\d+) completed \(rc=(?P<rc>-?\d+)\)", S.PROCESS_COMPLETED,
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/launcher/launch_all.py:473 (a pid; rc 0, or the controller's "
               "coordinated exit, rc 143 or -15: a success) (docs/reference/cosmos-rl.md §16.1)",
        samples=("[cosmos] 2026-12-05 21:44:42,976 - cosmos - INFO - Process 1148 completed (rc=0)",),
        rendered=("[cosmos] 2026-12-05 21:46:12,305 - cosmos - INFO - Process 1209 completed (rc=143)",)),
    Sig("process_registered.registering_policy_process", r"Registering (?P<role>policy) process (?P<pid>\d+) for signal handling", S.PROCESS_REGISTERED,
        source="nvidia-cosmos/cosmos-rl@0.4.7:cosmos_rl/launcher/launch_all.py:1008 (the pids of the policy "
               "processes, in launch order) (docs/reference/cosmos-rl.md §16.1)",
        samples=("[cosmos] 2026-12-05 21:43:35,174 - cosmos - INFO - Registering policy process 1760 for signal handling /tmp/crl_run.shiI/site/cosmos_rl/launcher/launch_replica.sh --type policy --ngpus 1 --backend example_hf --config /tmp/tmpefymel2s.toml --script /work/main/.device/recorder/entry_tiny_grpo.py ",)),
    Sig("coordinated_success.exited_via_the_coordinated_shutdown", r"Process (?P<process>\S+) \((?P<role>\w+)\) exited via the coordinated shutdown path \(rc=(?P<rc>-?\d+)\); treating as success", S.COORDINATED_SUCCESS,
        source="cosmos-rl@89f2e5b5:launch_all.py:62 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "[cosmos] 2026-11-29 14:58:27,472 - cosmos - INFO - Process 0 (controller) exited via the coordinated shutdown path (rc=143); treating as success",
            "[cosmos] 2026-11-29 14:57:33,382 - cosmos - INFO - Process 0 (controller) exited via the coordinated shutdown path (rc=143); treating as success",
        )),
    Sig("terminated_all.terminated_all_processes_due_to", r"Terminated all processes due to failure", S.TERMINATED_ALL,
        source="cosmos-rl@89f2e5b5:launch_all.py:987 (docs/reference/cosmos-rl.md §2.7)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - ERROR - Terminated all processes due to failure",)),
    Sig("process_exited_early.exited_with_code", r"Process (?P<pid>\S+) exited with code (?P<rc>-?\d+)\. Exiting", S.PROCESS_EXITED_EARLY,
        source="cosmos-rl@89f2e5b5:launch_all.py:62 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "[cosmos] 2026-12-01 20:01:15,551 - cosmos - ERROR - Process 806 exited with code 1. Exiting.",
            "[cosmos] 2026-12-01 20:07:24,713 - cosmos - ERROR - Process 2332 exited with code 1. Exiting.",
        )),
    Sig("process_exited_early.exited_as_soon_as_launched", r"Process (?P<pid>\S+) exited as soon as launched", S.PROCESS_EXITED_EARLY, fields={"rc": None},
        source="cosmos-rl@89f2e5b5:launch_all.py:62 (docs/reference/cosmos-rl.md §2.4)",
        samples=("[cosmos] 2025-06-09 22:14:29,220 - cosmos - ERROR - Process 4242 exited as soon as launched. Exiting.",)),
    Sig("death_signal.death_signal", r"Received (?:Signals\.)?(?P<sig>\d+|SIG[A-Z]+) death signal", S.DEATH_SIGNAL, gate=OWN,
        source="pytorch/pytorch@v2.5.1:torch/distributed/elastic/agent/server/api.py (docs/reference/foreign-errors.md E3)",
        samples=(
            "WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers",
            "W0409 07:28:49.530000 1359 torch/distributed/elastic/agent/server/api.py:719] Received 15 death signal, shutting down workers",
        )),
    Sig("death_signal.bash_terminated", r"line \d+: +(?P<pid>\d+) Terminated\b", S.DEATH_SIGNAL, gate=OWN, fields={"sig": 15},
        source="bminor/bash@637f5c86:jobs.c:4641 ('NAME: line N: ' then the job's pid and status, siglist.c:111 'Terminated'; docs/reference/foreign-errors.md E5)",
        samples=("/opt/run_cosmos.sh: line 12: 48213 Terminated              torchrun --nproc-per-node=1 --role rank /opt/entry.py",)),
    Sig("job_cancelled.cancelled_at", r"\*\*\* (?:JOB|STEP) (?P<job>\S+) ON (?P<node>\S+) CANCELLED AT (?P<at>\S+)(?: DUE TO (?P<reason>[A-Z][A-Z ]*[A-Z]))?", S.JOB_CANCELLED, gate=OWN,
        source="SchedMD/slurm@284c3b95f0:src/slurmd/slurmstepd/req.c:1122 (and the other 'DUE TO' reasons to :1149; docs/reference/cosmos-rl.md §11.1)",
        samples=("slurmstepd: error: *** JOB 4213377 ON node-017 CANCELLED AT 2026-11-29T14:58:02 DUE TO TIME LIMIT ***",)),
    Sig("fatal_signal.fatal_python_error", r"Fatal Python error: (?P<detail>.*)$", S.FATAL_SIGNAL, gate=OWN, fields={"what": 'fatal_python'},
        source="python/cpython@v3.12.0:Modules/faulthandler.c (faulthandler_fatal_error's 'Fatal Python error: ' and the signal's name; docs/reference/foreign-errors.md E4)",
        samples=(
            "Fatal Python error: Segmentation fault",
            "(RayWorkerWrapper pid=24036) Fatal Python error: Segmentation fault",
        )),
    Sig("fatal_signal.core_dumped", r"(?P<detail>Segmentation fault|Aborted|Bus error|Illegal instruction|Floating point exception)[^(]*\(core dumped\)", S.FATAL_SIGNAL, gate=OWN, fields={"what": 'core_dumped'},
        source="bminor/bash@637f5c86:jobs.c:2105 ('(core dumped)' after the signal's name; docs/reference/foreign-errors.md E5)",
        samples=(
            "Aborted (core dumped)",
            "Segmentation fault (core dumped)",
        )),
    Sig("fatal_signal.segmentation_fault", r"Segmentation fault", S.FATAL_SIGNAL, gate=OWN, fields={"what": 'segfault', "detail": None},
        source="bminor/bash@637f5c86:jobs.c:4641 (the job report, siglist.c:95 'Segmentation fault'; docs/reference/foreign-errors.md E5)",
        samples=("/opt/run_cosmos.sh: line 7: 30412 Segmentation fault      python -m cosmos_rl.rollout.rollout_entrance",)),
    Sig("fatal_signal.killed", r"line \d+: +(?P<pid>\d+) Killed\b", S.FATAL_SIGNAL, gate=OWN, fields={"what": 'killed', "detail": None},
        source="bminor/bash@637f5c86:jobs.c:4641 ('NAME: line N: ' then the job's pid and status, siglist.c:87 'Killed'; docs/reference/foreign-errors.md E5)",
        samples=("run_grpo.sh: line 37: 2291744 Killed                  python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo",)),
    Sig("fatal_signal.killed_bare", r"^Killed$", S.FATAL_SIGNAL, gate=OWN, fields={"what": 'killed', "detail": None, "bare": True},
        source="bminor/bash@637f5c86:jobs.c:4661 (a foreground child killed by a signal: the status alone, without 'line N: pid', siglist.c:87 'Killed'; docs/reference/foreign-errors.md E5); seen in tests/fixtures/cosmos/v0.4.7/controller_killed (the launcher's silent kill-all, docs/reference/cosmos-rl.md §16.2)",
        samples=("Killed",), read_in=Role.POLICY),
    Sig("gpu_layout_error.replica_with_gpus_larger_than", r"Replica with GPUs larger than \d+ occurs but not on Lepton job", S.GPU_LAYOUT_ERROR, fields={"reason": 'larger_than_node'},
        source="cosmos-rl@89f2e5b5:utility.py:270 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify --node-ip-list to provide the IPs of all nodes to enable conenctions to each Rendezvous head node.",
            "    RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify --node-ip-list to provide the IPs of all nodes to enable conenctions to each Rendezvous head node.",
        )),
    Sig("gpu_layout_error.not_enough_gpus_available", r"Not enough GPUs available\.? ?(?:Required: (?P<required>\d+), Available: (?P<available>\d+)|Requested (?P<required2>\d+) GPUs, but only (?P<available2>\d+) are available)?", S.GPU_LAYOUT_ERROR, fields={"reason": 'not_enough'},
        source="cosmos-rl@89f2e5b5:launch_all.py:849 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "AssertionError: Not enough GPUs available. Required: 16, Available: 8",
            "ValueError: Not enough GPUs available. Requested 16 GPUs, but only 8 are available in the cluster.",
        )),
    Sig("gpu_layout_error.no_gpus_available", r"No GPUs available", S.GPU_LAYOUT_ERROR, fields={"reason": 'no_gpus'},
        source="cosmos-rl@89f2e5b5:launch_all.py:657 (docs/reference/cosmos-rl.md §2.4)",
        samples=("RuntimeError: No GPUs available. Please check your GPU configuration.",)),
    Sig("gpu_layout_error.number_of_gpus_per_node", r"Number of GPUs per node must be 1, 2, 4, or 8", S.GPU_LAYOUT_ERROR, fields={"reason": 'bad_per_node'},
        source="cosmos-rl@89f2e5b5:utility.py:481 (docs/reference/cosmos-rl.md §2.3)",
        samples=("AssertionError: Number of GPUs per node must be 1, 2, 4, or 8",)),
    Sig("controller_port_busy.is_already_in_use", r"Controller port (?P<port>\d+)(?: from --url (?P<url>\S+))? is already in use", S.CONTROLLER_PORT_BUSY,
        source="cosmos-rl@89f2e5b5:launch_all.py:739 (docs/reference/cosmos-rl.md §2.4)",
        samples=(
            "RuntimeError: Controller port 8000 is already in use. It cannot be substituted because workers connect to this exact endpoint.",
            "RuntimeError: Controller port 8000 from --url 10.0.0.1:8000 is already in use on this node. It cannot be substituted because all workers connect to this exact endpoint.",
        )),
)

HITS = (
    Hit("hit.config_load_failed", "config_load_failed", ("Failed to load or parse config file",), pattern=r"Failed to load or parse config file (?P<path>\S+): (?P<error>.*)",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/dispatcher/run_web_panel.py:906 (docs/reference/cosmos-rl.md §4.1)",
        samples=("RuntimeError: Failed to load or parse config file /tmp/tmpx.toml: Missing required env var ALPAMAYO_PAI_LOCAL_DIR.",)),
    Hit("hit.config_read_error", "config_load_failed", ("Error reading config file",), pattern=r"Error reading config file (?P<path>\S+): (?P<error>.*)",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/launcher/launch_all.py:100 (docs/reference/cosmos-rl.md §2.4)",
        samples=("Error reading config file /x/run.toml: Duplicate keys!",)),
    Hit("hit.gpu_layout.larger_than_node", "gpu_layout", ("Replica with GPUs larger than 8",), kind="larger_than_node",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/launcher/utility.py:271 (docs/reference/cosmos-rl.md §2.4)",
        samples=("RuntimeError: Replica with GPUs larger than 8 occurs but not on Lepton job, please specify --node-ip-list to provide the IPs of all nodes to connect.",)),
    Hit("hit.gpu_layout.not_enough", "gpu_layout", ("Not enough GPUs available. Required:",), kind="not_enough",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/launcher/launch_all.py:855 (docs/reference/cosmos-rl.md §2.4)",
        samples=("AssertionError: Not enough GPUs available. Required: 12, Available: 8",)),
    Hit("hit.gpu_layout.no_gpus", "gpu_layout", ("No GPUs available. Please check your GPU configuration",), kind="no_gpus",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/launcher/launch_all.py:658 (docs/reference/cosmos-rl.md §2.4)",
        samples=("RuntimeError: No GPUs available. Please check your GPU configuration.",)),
    Hit("hit.gpu_layout.bad_per_node", "gpu_layout", ("Number of GPUs per node must be 1, 2, 4, or 8",), kind="bad_per_node",
        source="nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/launcher/utility.py:486 (docs/reference/cosmos-rl.md §2.3)",
        samples=("AssertionError: Number of GPUs per node must be 1, 2, 4, or 8",)),
    Hit("hit.child_failed", "child_failed", ("ChildFailedError",),
        source="pytorch/pytorch@v2.5.1:torch/distributed/elastic/multiprocessing/errors/__init__.py (ChildFailedError, raised by torchrun's agent; docs/reference/cosmos-rl.md §3.4; docs/reference/foreign-errors.md E2)",
        samples=("[rank0]: torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",)),
)

# The monitor of a Slurm batch script: Cosmos-RL's template (tag cosmos-rl-sbatch) and ours (a1x-tui-sbatch,
# a1x_supervisor/slurm/sbatch.py) print '[<time>][<tag>]: message' lines into slurm_<jobid>.log
# (docs/reference/cosmos-rl.md §11.1; docs/slurm.md). parsing.parse_monitor_log reads the message with these
# entries (the regex anchored at its start); the supervisor takes the job's exit status from them.
_SBATCH = "nvidia-cosmos/cosmos-rl@89f2e5b5:cosmos_rl/tools/slurm/cosmos_rl_job_multi_node.sh:"
_OURS = "a1x_supervisor/slurm/sbatch.py:"
_T = "[2026-03-01 11:00:00.123 AM UTC]"
MONITOR = (
    Sig("monitor.retry", r"^Job failed with status (?P<status>-?\d+)\. Retries remaining: (?P<left>\d+)\. Requeuing", Monitor.RETRY,
        source=_SBATCH + "302; ours: " + _OURS + "661 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: Job failed with status 1. Retries remaining: 2. Requeuing...",)),
    Sig("monitor.no_retries", r"^Job failed with status (?P<status>-?\d+)\. No retries remaining", Monitor.NO_RETRIES,
        source=_SBATCH + "310; ours: " + _OURS + "664 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[a1x-tui-sbatch]: Job failed with status 137. No retries remaining.",)),
    Sig("monitor.autoresume", r"^Received signal (?P<signal>\S+), will requeue for autoresume", Monitor.AUTORESUME,
        source=_SBATCH + "224; ours: " + _OURS + "653 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: Received signal SIGUSR1, will requeue for autoresume",
                  _T + "[a1x-tui-sbatch]: Received signal SIGUSR1, will requeue for autoresume into /lustre/runs/j/slurm/part_1")),
    Sig("monitor.step_failed", r"^(?P<step>[\w-]+) failed with exit code (?P<code>-?\d+)\. Terminating other", Monitor.STEP_FAILED,
        source=_SBATCH + "589, :603, :621; ours: " + _OURS + "611 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: Policy failed with exit code 1. Terminating other processes.",
                  _T + "[a1x-tui-sbatch]: rollout-0 failed with exit code 137. Terminating other processes.")),
    Sig("monitor.final", r"^Final exit status: (?P<status>-?\d+)", Monitor.FINAL,
        source=_SBATCH + "660; ours: " + _OURS + "669 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[a1x-tui-sbatch]: Final exit status: 137",)),
    Sig("monitor.new_run", r"^New run dir: (?P<path>\S+)", Monitor.NEW_RUN,
        source=_SBATCH + "343; ours: " + _OURS + "503 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: New run dir: /lustre/runs/j/slurm/part_0/run_0",)),
    Sig("monitor.resume", r"^Resuming from checkpoint step (?P<step>\d+): (?P<path>\S+)", Monitor.RESUME,
        source=_OURS + "520 (ours only: Cosmos-RL's template resumes nothing itself; docs/slurm.md)", samples=(),
        rendered=(_T + "[a1x-tui-sbatch]: Resuming from checkpoint step 210: /o/t/checkpoints/step_210/policy",)),
    Sig("monitor.resume_skipped", r"^Checkpoint of step (?P<step>\d+) is not complete, not resuming from it", Monitor.RESUME_SKIPPED,
        source=_OURS + "316 (ours only; docs/slurm.md)", samples=(),
        rendered=(_T + "[a1x-tui-sbatch]: Checkpoint of step 215 is not complete, not resuming from it: /o/s",)),
    Sig("monitor.signal", r"^Signal (?P<signal>\S+) caught", Monitor.SIGNAL,
        source=_SBATCH + "146; ours: " + _OURS + "266, :271 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: Signal SIGUSR1 caught. Will terminate job and potentially requeue.",)),
    Sig("monitor.abort", r"^Abort file detected", Monitor.ABORT,
        source=_SBATCH + "218; ours: " + _OURS + "648 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[a1x-tui-sbatch]: Abort file detected (/lustre/runs/j/ABORT-AUTORESUME), will not requeue",)),
    Sig("monitor.started", r"^Job (?:(?P<job>\d+) )?started on (?P<host>\S+)", Monitor.STARTED,
        source=_SBATCH + "323; ours: " + _OURS + "502 (docs/reference/cosmos-rl.md §11.1)", samples=(),
        rendered=(_T + "[cosmos-rl-sbatch]: Job started on node001",
                  _T + "[a1x-tui-sbatch]: Job 4213377 started on node-017 (restart 0)")),
)
