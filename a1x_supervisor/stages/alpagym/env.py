"""The alpagym ``env`` stage: ``uv sync --all-packages`` in the AlpaGym checkout (docs/reference/alpagym.md
§5 "Set-up"; upstream docs/ONBOARDING.md:86). Verified by importing the host, the runtime, the policy
bundle and Cosmos-RL in the checkout's venv (``<checkout>/.venv``)."""

from __future__ import annotations

from pathlib import Path

from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages.alpagym._common import LOCAL_BIN, venv_python
from a1x_supervisor.stages.context import StageContext
from a1x_supervisor.stages.env import run_imports

# The packages a run loads: the host CLI, the Cosmos-RL adapters, the Alpamayo policy bundle, Cosmos-RL.
IMPORTS = "import alpagym_host, alpagym_runtime, alpagym_alpamayo_r1, cosmos_rl"


def verify_env(python: Path, *, timeout_s: float = 600.0) -> VerifyResult:
    if not python.exists():
        return VerifyResult.failed(f"no venv at {python.parent.parent} (uv sync --all-packages makes it)")
    failure = run_imports(python, IMPORTS, timeout_s=timeout_s)
    if failure is not None:
        return VerifyResult.failed(f"the AlpaGym venv is incomplete: {failure}")
    return VerifyResult.passed(f"{python.parent.parent}: AlpaGym, its runtime, the policy bundle and Cosmos-RL import")


def stage(ctx: StageContext) -> StageSpec:
    checkout = ctx.workspace

    def prepare() -> list[Command]:
        if not (checkout / "packages" / "host").is_dir() or not (checkout / "pyproject.toml").is_file():
            raise StageError(
                f"{checkout} is not an AlpaGym checkout (no packages/host, pyproject.toml): paths.workspace"
            )
        env = {"UV_CACHE_DIR": str(ctx.paths.uv_cache_dir)} if ctx.paths.uv_cache_dir else {}
        argv = ("uv", "sync", "--all-packages")
        return [Command(argv=argv, cwd=checkout, env=env, path_prepend=(LOCAL_BIN,), label="uv sync --all-packages")]

    return StageSpec(
        name="env",
        title="AlpaGym venv (uv sync --all-packages)",
        prepare=prepare,
        verify=lambda: verify_env(venv_python(ctx)),
        progress=LastLine,
    )
