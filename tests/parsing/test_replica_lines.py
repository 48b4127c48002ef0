"""Policy and rollout lines (docs/reference/cosmos-rl.md §3.6, §5, §6) and the recipe's prefetch lines (recipe §9.3)."""

from __future__ import annotations

import pytest
from parsing_helpers import UUID, cosmos, interesting, one, parse

from a1x_diagnostics.events import (
    Checkpoint,
    CheckpointPhase,
    ConfigDump,
    LogLine,
    Prefetch,
    PromptRejected,
    Role,
    SignalKind,
    SyncPhase,
    WeightSync,
)

RECV_DONE = ("[Rollout] All 812 at step {step} recv operations finished in 2.345 seconds with 16384.0 MB received. "
             "While 0 non-trainable splitted params skipped and 812 trainable splitted params transferred.")


@pytest.mark.parametrize("rank", [None, 0, 3])
@pytest.mark.parametrize(("step", "expected"), [("10", 10), ("None", None)])
def test_recv_done_incl_initial_load(rank: int | None, step: str, expected: int | None) -> None:
    ev = one(cosmos(RECV_DONE.format(step=step), rank=rank), WeightSync, Role.ROLLOUT)
    assert (ev.phase, ev.step, ev.seconds, ev.megabytes, ev.rank) == (SyncPhase.RECV_DONE, expected, 2.345, 16384.0,
                                                                       rank)


def test_weight_sync_phases() -> None:
    lines = [
        cosmos("[Rollout] Starting to execute 812; 812, 812 weight sync receives ...", rank=0),
        cosmos("[Rollout] Starting broadcasting of parameters to all replicas.", rank=0),
        cosmos("[Rollout] Finished broadcasting of parameters to all replicas. While 0 unsplitted non-trainable params "
               "skipped and 812 unsplitted params transferred.", rank=0),
        cosmos("[Rollout] Starting full-model broadcast (broadcast_all_params=true).", rank=0),
        cosmos("[Rollout] Finished full-model broadcast: 812 params, 16384.0 MB, 3.210 s", rank=0),
        cosmos("[Rollout] Setting weight_synced after broadcast (n_dst=3, step=4)", rank=0),
        cosmos("[WeightSyncThread] Enqueued P2R (step=6, seq=3, buf_ver=2, qdepth=1, max_qdepth=2)", rank=0),
        cosmos("[WeightSyncThread] Enqueued R2R (step=6, seq=4, buf_ver=2, qdepth=2, max_qdepth=2)", rank=0),
        cosmos("[WeightSyncThread] P2R done (step=6, ver=3, 1234.5 ms, qdepth_after=0, executed=3)", rank=0),
        cosmos("[WeightSyncThread] R2R done: 812 params, 16384.0 MB, 2500 ms, step=6, ver=3, qdepth_after=1, "
               "executed=4", rank=0),
        cosmos("[R2R Barrier] Timed out after 120s waiting for go signal (step=7). Proceeding anyway.", "WARNING", 0),
    ]
    got = [(e.phase, e.step, e.seconds, e.megabytes, e.queue_depth) for e in interesting(parse(lines, Role.ROLLOUT))
           if isinstance(e, WeightSync)]
    assert got == [
        (SyncPhase.RECV_START, None, None, None, None),
        (SyncPhase.BROADCAST_START, None, None, None, None),
        (SyncPhase.BROADCAST_DONE, None, None, None, None),
        (SyncPhase.BROADCAST_START, None, None, None, None),
        (SyncPhase.BROADCAST_DONE, None, 3.21, 16384.0, None),
        (SyncPhase.SYNCED_AFTER_BROADCAST, 4, None, None, None),
        (SyncPhase.ASYNC_ENQUEUED, 6, None, None, 1),
        (SyncPhase.ASYNC_ENQUEUED, 6, None, None, 2),
        (SyncPhase.ASYNC_DONE, 6, 1.2345, None, 0),
        (SyncPhase.ASYNC_DONE, 6, 2.5, 16384.0, 1),
        (SyncPhase.BARRIER_TIMEOUT, 7, 120.0, None, None),
    ]


def test_policy_send_debug_line() -> None:
    msg = ("[Policy] All 812 at step 6 send operations of finished in 2.113 seconds with 16384.0 MB sent. While 0 "
           "non-trainable splitted params skipped and 812 splitted params transferred.")
    ev = one(cosmos(msg, "DEBUG", 0), WeightSync, Role.POLICY)
    assert (ev.phase, ev.step, ev.seconds, ev.megabytes) == (SyncPhase.POLICY_SEND_DONE, 6, 2.113, 16384.0)


def test_prompt_rejected() -> None:
    msg = ("[Rollout rank=0] prompt rejected: prompt.weight_version=9 current_weight_version=4 allowed_outdated=4 "
           "ceiling=8; head-of-queue will be re-checked until current_weight_version advances")
    ev = one(cosmos(msg, rank=0), PromptRejected, Role.ROLLOUT)
    assert (ev.prompt_version, ev.current_version, ev.allowed_outdated, ev.ceiling) == (9, 4, 4, 8)


def test_checkpoint_lines() -> None:
    path = "/out/20250609120000/checkpoints/step_50/policy"
    lines = [
        cosmos("[Policy] Saving cosmos checkpoint at step 50...", rank=0),
        cosmos(f"[Policy] Step: 50, checkpoint saved successfully at {path}.", rank=0),
        cosmos(f"Checkpoint complete marker for rank 3 not found at {path}. Marking checkpoint as incomplete.",
               "WARNING"),
        cosmos(f"Checkpoint config not found at {path}. Marking checkpoint as incomplete.", "WARNING"),
        cosmos("Async checkpoint save/upload failed: disk full", "ERROR"),
        cosmos("Failed to finalize checkpoint manager: timeout", "ERROR"),
        cosmos("Pruned corrupted checkpoint: /out/x/checkpoints/step_40"),
    ]
    got = [(e.phase, e.step, e.path) for e in interesting(parse(lines, Role.POLICY)) if isinstance(e, Checkpoint)]
    assert got == [
        (CheckpointPhase.SAVING, 50, None),
        (CheckpointPhase.SAVED, 50, path),
        (CheckpointPhase.INCOMPLETE, 50, path),
        (CheckpointPhase.INCOMPLETE, 50, path),
        (CheckpointPhase.FAILED, None, None),
        (CheckpointPhase.FAILED, None, None),
        (CheckpointPhase.PRUNED, 40, "/out/x/checkpoints/step_40"),
    ]


def test_config_dumps_literal_eval_and_tolerance() -> None:
    full = ("[Policy] Loaded configuration: {'train': {'train_batch_per_replica': 48, 'output_dir': "
            "'/o/20250609120000', 'train_policy': {'allowed_outdated_steps': 4, 'temperature': nan}}, "
            "'custom': {'alpamayo': {'prefetch': {'capacity': 16}}}, 'redis': '12801', 'path': PosixPath('/x')}")
    dump = one(cosmos(full, rank=0), ConfigDump, Role.POLICY)
    assert dump.scope == "full" and dump.config is not None
    assert dump.config["train"]["train_batch_per_replica"] == 48
    assert dump.config["custom"]["alpamayo"]["prefetch"]["capacity"] == 16
    assert dump.config["path"] == "/x"
    rollout = one(cosmos("[Rollout] Loaded rollout configuration: {'n_generation': 12, 'batch_size': 2}", rank=0),
                  ConfigDump, Role.ROLLOUT)
    assert rollout.scope == "rollout" and rollout.config == {"n_generation": 12, "batch_size": 2}
    cut = one(cosmos("[Policy] Loaded configuration: {'train': {'epoch': 15, 'outp"), ConfigDump, Role.POLICY)
    assert cut.config is None


def test_config_dump_text_is_capped_but_fully_parsed() -> None:
    big = "{" + ", ".join(f"'k{i}': {i}" for i in range(5000)) + "}"
    dump = one(cosmos(f"[Policy] Loaded configuration: {big}"), ConfigDump, Role.POLICY)
    assert dump.config is not None and dump.config["k4999"] == 4999
    assert len(dump.text) <= 8192


def test_replica_lifecycle_signals() -> None:
    lines = [
        cosmos(f"POLICY Replica started at global rank 0, with replica name: {UUID}", rank=0),
        cosmos(f"POLICY Replica {UUID} registered to controller", rank=0),
        cosmos("[Policy] Building lr schedulers for total steps 60", rank=0),
        cosmos("[Policy] Training complete at global step 60, skip training.", rank=0),
        cosmos("[Policy] HF/safetensors export is disabled (set ALPAMAYO_ENABLE_HF_EXPORT=1 to enable). Cosmos "
               "checkpoint saving remains enabled.", "WARNING", 0),
    ]
    kinds = [(s.kind, dict(s.fields)) for s in interesting(parse(lines, Role.POLICY))]
    assert kinds == [
        (SignalKind.REPLICA_STARTED, {"role": "POLICY", "global_rank": 0, "uuid": UUID}),
        (SignalKind.REPLICA_REGISTERED, {"role": "POLICY", "uuid": UUID}),
        (SignalKind.TRAINING_STARTED, {"total_steps": 60}),
        (SignalKind.TRAINING_COMPLETE, {"step": 60}),
        (SignalKind.HF_EXPORT_DISABLED, {}),
    ]
    rollout = [
        cosmos("[Rollout] Engine initialized.", rank=0),
        cosmos(f"[Rollout] Main loop of {UUID} finished", rank=0),
        cosmos("[Rollout] execute: entering destroy_worker()", rank=0),
    ]
    assert [s.kind for s in interesting(parse(rollout, Role.ROLLOUT))] == [
        SignalKind.ENGINE_INITIALIZED, SignalKind.ROLLOUT_MAIN_LOOP_FINISHED, SignalKind.ROLLOUT_DESTROY_WORKER
    ]


def test_prefetch_lines_values_are_reprs() -> None:
    line = ("[AlpamayoPrefetch][warn] 2025-06-09 22:14:29 pid=4242 client_rpc_timeout "
            "socket='/tmp/alpamayo_prefetch_1_node 1_train.sock' recv_timeout_s=30.0 payload={'op': 'get', 'n': 3}")
    ev = one(f"[rank2]:{line}", Prefetch, Role.POLICY)
    assert (ev.prefetch_level, ev.pid, ev.event, ev.level, ev.rank) == (
        "warn", 4242, "client_rpc_timeout", "WARNING", 2)
    assert ev.fields == {"socket": "/tmp/alpamayo_prefetch_1_node 1_train.sock", "recv_timeout_s": "30.0",
                         "payload": "{'op': 'get', 'n': 3}"}
    assert ev.ts is not None and ev.ts.year == 2025
    bare = one("[AlpamayoPrefetch][info] 2025-06-09 22:14:29 pid=1 server_already_running", Prefetch, Role.ROLLOUT)
    assert bare.fields == {}


def test_unparseable_prefetch_line_is_a_prefetch_logline() -> None:
    (ev,) = parse("[AlpamayoPrefetch][info] garbled", Role.POLICY)
    assert isinstance(ev, LogLine) and ev.family == "prefetch"


def test_gates_ignore_a_rule_text_inside_debug_noise_of_replica_logs() -> None:
    # A DEBUG reward line that happens to quote a rule's text is not a signal in a replica log ...
    quoted = "[Rollout] All 8 at step 3 recv operations finished in 1.000 seconds with 2.0 MB received."
    noisy = cosmos(f"[RolloutGroup] payload echo: {quoted}", "DEBUG", 0)
    assert interesting(parse(noisy, Role.ROLLOUT)) == []
    # ... while the same message at its real level is, and a launcher capture is read without gates.
    assert one(cosmos(quoted, rank=0), WeightSync, Role.ROLLOUT)
    assert one(noisy, WeightSync, Role.LAUNCHER)
