"""The ``env`` stage: the ``a1x_rl`` venv, a two-pass ``uv sync`` and the import contract
(docs/reference/alpamayo-recipe.md §2.1, §2.4). Verified by running the contract in the venv's own Python."""

from __future__ import annotations

import subprocess
from pathlib import Path

from a1x_supervisor.progress import LastLine
from a1x_supervisor.stage import Command, StageError, StageSpec, VerifyResult
from a1x_supervisor.stages.context import StageContext

# docs/reference/alpamayo-recipe.md §2.4 (the import contract) plus its recommended flash_attn check.
IMPORT_CONTRACT: tuple[str, ...] = (
    "import alpamayo_r1, alpamayo, cosmos_rl, vllm",
    "from alpamayo1_x_rl.models.reasoning_vla.base_model import RLWrapperReasoningVLA",
    "from alpamayo.utils.checkpoint_utils import collect_targets, remap_targets",
    "import flash_attn",
)


def verify_env(venv_dir: Path, *, timeout_s: float = 900.0) -> VerifyResult:
    """The venv exists and the import contract holds (run in the venv's own Python)."""
    python = venv_dir / "bin" / "python"
    if not python.exists():
        return VerifyResult.failed(f"no venv at {venv_dir}")
    failure = run_imports(python, "; ".join(IMPORT_CONTRACT), timeout_s=timeout_s)
    if failure is not None:
        return VerifyResult.failed(f"import contract fails: {failure}")
    return VerifyResult.passed(f"venv {venv_dir} passes the import contract")


def run_imports(python: Path, code: str, *, timeout_s: float) -> str | None:
    """Run ``code`` (imports) in ``python``; None when it works, else the line that says why not."""
    code += "; print('ok')"
    try:
        done = subprocess.run(
            [str(python), "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except subprocess.TimeoutExpired:
        return f"the imports did not finish within {timeout_s:.0f}s"
    except OSError as exc:
        return f"cannot run {python}: {exc.strerror or exc}"
    if done.returncode != 0 or "ok" not in done.stdout:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        return lines[-1][:200] if lines else f"rc {done.returncode}"
    return None


def stage(ctx: StageContext) -> StageSpec:
    paths, venv = ctx.paths, ctx.venv
    local_bin = str(Path("~/.local/bin").expanduser())  # §2.1: uv's install dir, re-exported per command

    def prepare() -> list[Command]:
        recipe = paths.recipe_dir
        if not (recipe / "pyproject.toml").exists():
            raise StageError(f"{recipe}/pyproject.toml is missing: is paths.workspace an alpamayo-recipes checkout?")
        uv_env = {"UV_CACHE_DIR": str(paths.uv_cache_dir)} if paths.uv_cache_dir else {}
        cmds = []
        if not venv.exists():  # §2.1: 'skip if a1x_rl/ exists'
            venv_arg = "a1x_rl" if venv == recipe / "a1x_rl" else str(venv)
            cmds.append(
                Command(
                    argv=("uv", "venv", venv_arg), cwd=recipe, env=uv_env, path_prepend=(local_bin,), label="uv venv"
                )
            )
        active = {**uv_env, **ctx.venv_env}
        front = (str(ctx.venv_bin), local_bin)
        cmds.append(
            Command(
                argv=("uv", "sync", "--active", "--no-install-package", "flash-attn"),
                cwd=recipe,
                env=active,
                path_prepend=front,
                label="uv sync (pass 1: everything but flash-attn)",
            )
        )
        cmds.append(
            Command(
                argv=("uv", "sync", "--active"),
                cwd=recipe,
                env=active,
                path_prepend=front,
                label="uv sync (pass 2: flash-attn)",
            )
        )
        for code in IMPORT_CONTRACT:
            cmds.append(
                Command(
                    argv=(ctx.python, "-c", f"{code}; print('ok')"),
                    cwd=ctx.workspace,
                    env=ctx.venv_env,
                    path_prepend=front,
                    label="import contract",
                )
            )
        return cmds

    return StageSpec(
        name="env",
        title="a1x_rl venv, two-pass uv sync, import contract",
        prepare=prepare,
        verify=lambda: verify_env(venv),
        progress=LastLine,
    )
