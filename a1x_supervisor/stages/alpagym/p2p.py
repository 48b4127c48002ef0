"""The alpagym ``p2p`` stage: AlpaGym's NCCL peer-to-peer check on this node's two GPUs
(``torchrun --nproc-per-node=2 install/check_nccl_p2p.py``; docs/reference/alpagym.md §5 "P2P",
upstream docs/ONBOARDING.md:148-172). The policy and rollout replicas exchange weights over NCCL
send/recv; where the direct transport stalls, the first weight sync hangs.

Verified by the check's own line, ``NCCL P2P send/recv OK``: its exit code is 0 on a single-GPU host
too. Retry policy: a failed check is run once more with ``NCCL_P2P_DISABLE=1``; when only that passes,
the train stage runs with it (``outputs["nccl_p2p_disable"]``), as the onboarding says to.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass

from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import AfterFailure, Command, StageSpec, VerifyResult
from a1x_supervisor.stages.alpagym._common import uv_run
from a1x_supervisor.stages.context import StageContext

CHECK_SCRIPT = "install/check_nccl_p2p.py"
OK_LINE = "NCCL P2P send/recv OK"  # upstream install/check_nccl_p2p.py:78
NEEDS_TWO = "This check needs 2 GPUs"  # :42-46, printed before it returns 0
DISABLE_KEY = "nccl_p2p_disable"


def verify_p2p(log_text: str, outputs: MutableMapping[str, str] | None = None) -> VerifyResult:
    """The last verdict line the check printed (the stage log holds every attempt)."""
    verdict = ""
    for line in log_text.splitlines():
        if OK_LINE in line or NEEDS_TWO in line:
            verdict = line
    if OK_LINE in verdict:
        disabled = "NCCL_P2P_DISABLE=1" in verdict
        if outputs is not None:
            outputs[DISABLE_KEY] = "1" if disabled else "0"
        how = " only with NCCL_P2P_DISABLE=1 (training runs with it)" if disabled else ""
        return VerifyResult.passed(f"NCCL peer-to-peer send/recv works between GPU 0 and 1{how}")
    if NEEDS_TWO in verdict:
        return VerifyResult.failed(
            "the NCCL P2P check found fewer than 2 GPUs: AlpaGym's 10B model needs two (CUDA_VISIBLE_DEVICES?)"
        )
    return VerifyResult.failed("the NCCL P2P check printed no verdict ('NCCL P2P send/recv OK')")


@dataclass
class P2pRetry:
    """A failed check once more with ``NCCL_P2P_DISABLE=1``; then the stage fails."""

    outputs: MutableMapping[str, str]
    fallback: bool = False  # the next attempt is the fallback this policy asked for

    def after_failure(self, output: str, attempt: int, *, monitor_stopped: bool) -> AfterFailure | None:
        if NEEDS_TWO in output or self.outputs.get(DISABLE_KEY) == "1":
            return None  # no second GPU, or it failed with P2P disabled too: nothing left to try
        self.outputs[DISABLE_KEY] = "1"
        self.fallback = True
        return AfterFailure(
            "NCCL P2P check failed: trying again with NCCL_P2P_DISABLE=1 (weight sync through host memory)",
            retry_in_s=0.0,
        )


def stage(ctx: StageContext) -> StageSpec:
    outputs = ctx.outputs
    retry = P2pRetry(outputs)

    def prepare() -> list[Command]:
        if not retry.fallback:  # a check run afresh tests the direct transport, whatever an earlier run found
            outputs.pop(DISABLE_KEY, None)
        retry.fallback = False
        env = {"NCCL_P2P_DISABLE": "1"} if outputs.get(DISABLE_KEY) == "1" else {}
        argv = ("torchrun", "--nproc-per-node=2", CHECK_SCRIPT)
        return [uv_run(ctx, *argv, env=env, label="NCCL P2P check (2 GPUs)")]

    return StageSpec(
        name="p2p",
        title="NCCL peer-to-peer check between the two GPUs",
        prepare=prepare,
        verify=lambda: verify_p2p(ctx.stage_log_text("p2p"), outputs),
        progress=LastLine,
        retry=retry,
    )
