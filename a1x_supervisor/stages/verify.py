"""The ``verify`` stage: runs nothing; its verdict is the check of the exported checkpoint
(docs/reference/alpamayo-recipe.md §12.4), made every time, even when the other stages were skipped."""

from __future__ import annotations

from pathlib import Path

from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.export import current_export, verify_export


def stage(ctx: StageContext) -> StageSpec:
    outputs = ctx.outputs

    def verify() -> VerifyResult:
        if outputs.get("export_dir"):
            checkpoint = Path(outputs["checkpoint"]) if outputs.get("checkpoint") else None
            return verify_export(Path(outputs["export_dir"]), checkpoint=checkpoint, ranks=ctx.ranks())
        return current_export(ctx)

    def no_commands() -> list[Command]:
        return []

    return StageSpec(
        name="verify",
        title="check the exported checkpoint",
        prepare=no_commands,
        verify=verify,
        kind="check",
        skip_if_verified=False,
    )
