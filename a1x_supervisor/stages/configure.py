"""The ``configure`` stage, and its program: ``python -m a1x_supervisor.stages.configure RUN_DIR``.

The program renders the training TOML from the run spec with ``a1x_configs.render`` and picks the Hydra
config for the Alpamayo version. The recipe's entry scripts hard-code the Alpamayo 1.5 Hydra config
(docs/reference/alpamayo-recipe.md §8.1: "For Alpamayo 1 the entry must be edited"); for Alpamayo 1 a copy of the
entry script with the other name is written into the run directory. The user's checkout is never
edited. Writes ``config/train.toml``, the copy if any, and ``config/configure.json``. The stage is
verified against that record and the TOML (§8.1, §8.4), and runs again when the spec changed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tomlkit

from a1x_supervisor.progress import LastLine
from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec, SpecError, load_spec
from a1x_supervisor.stage import Command, StageSpec, VerifyResult
from a1x_supervisor.stages._files import read_json
from a1x_supervisor.stages.context import StageContext

if TYPE_CHECKING:
    from a1x_configs.render import TemplateChoices

# docs/reference/alpamayo-recipe.md §8.1: the name both shipped entry scripts use.
SHIPPED_HYDRA_CONFIG = "alpamayo1_5_rvla_rl_pai"
# docs/reference/alpamayo-recipe.md §8.1 / §14 row 16: the Hydra config each Alpamayo version needs.
HYDRA_CONFIG_NAMES: dict[str, str] = {"1.5": "alpamayo1_5_rvla_rl_pai", "1": "alpamayo1_rvla_rl_pai"}
_REPO_ROOT = Path(__file__).resolve().parents[2]  # for `python -m a1x_supervisor.stages.configure`


def template_choices(spec: RunSpec) -> TemplateChoices:
    """``a1x_configs.render.TemplateChoices`` for this spec."""
    from a1x_configs.render import TemplateChoices  # only the program and preflight render: the daemon need not load it

    return TemplateChoices(
        alpamayo_version=spec.alpamayo_version,
        reward_mode=spec.reward_mode,
        wandb=spec.wandb.enabled,
        wandb_project=spec.wandb.project,
        wandb_experiment=spec.wandb.experiment,
        compute=spec.compute,
        output_dir=str(spec.paths.output_dir),
        model_dir=str(spec.paths.model_dir),
        grader_dir=str(spec.paths.grader_dir),
        policy_replicas=spec.replicas.policy,
        rollout_replicas=spec.replicas.rollout,
    )


def entry_for_version(source: Path, hydra_name: str, out_dir: Path) -> Path:
    """The entry script to launch: ``source`` itself, or a copy using ``hydra_name``."""
    if hydra_name == SHIPPED_HYDRA_CONFIG:
        return source
    text = source.read_text(encoding="utf-8")
    needle = f'"{SHIPPED_HYDRA_CONFIG}"'
    count = text.count(needle)
    if count != 1:
        raise SpecError(f"{source}: expected one {needle} to switch to {hydra_name!r}, found {count}")
    copy = out_dir / source.name
    copy.write_text(text.replace(needle, f'"{hydra_name}"'), encoding="utf-8")
    return copy


def configure(run_dir: Path) -> dict[str, Any]:
    """What the program does: write the TOML, the entry copy and the record; returns the record."""
    from a1x_configs import render

    rundir = RunDir(run_dir)
    spec = load_spec(rundir.spec_path)
    text = render.render_toml(template_choices(spec))
    unread = cosmos_unread(text)
    if unread is not None:  # never hand Cosmos-RL a TOML its parser reads otherwise (docs/reference/cosmos-rl.md §8.1)
        raise SpecError(f"the rendered training TOML: {unread}")
    rundir.config_dir.mkdir(parents=True, exist_ok=True)
    rundir.train_toml.write_text(text, encoding="utf-8")
    hydra_name = render.hydra_config_name(spec.alpamayo_version)
    entry_rel = Path(render.entry_script(spec.reward_mode))
    source = entry_rel if entry_rel.is_absolute() else spec.paths.workspace / entry_rel
    if not source.is_file():
        raise SpecError(f"{source}: the entry script is missing from the checkout")
    entry = entry_for_version(source, hydra_name, rundir.config_dir)
    # cosmos-rl is started from the workspace root; the shipped entry keeps its README form.
    entry_arg = str(entry_rel) if entry == source and not entry_rel.is_absolute() else str(entry)
    record = {
        "spec_digest": spec.digest(),
        "toml": str(rundir.train_toml),
        "alpamayo_version": spec.alpamayo_version,
        "hydra_config_name": hydra_name,
        "entry_script": str(entry),
        "entry_arg": entry_arg,
        "entry_source": str(source),
    }
    rundir.configure_record.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return record


def cosmos_unread(text: str, path: Path = Path("train.toml")) -> str | None:
    """Why Cosmos-RL's own TOML parser (toml 0.10.2) would not read ``text`` as written; None when it does."""
    from a1x_diagnostics.config.fixes import not_read_as_written
    from a1x_diagnostics.config.loader import ConfigError, parse_config

    try:
        return not_read_as_written(parse_config(text, path))
    except ConfigError as exc:
        return str(exc)


def verify_configured(
    record_path: Path,
    *,
    spec_digest: str,
    alpamayo_version: str,
    model_dir: Path,
    output_dir: Path,
    grader_dir: Path | None,
) -> VerifyResult:
    record = read_json(record_path)
    if not isinstance(record, dict):
        return VerifyResult.failed(f"{record_path} is missing")
    if record.get("spec_digest") != spec_digest:
        return VerifyResult.failed("the run spec changed since the TOML was written")
    toml_path = Path(str(record.get("toml", "")))
    try:
        text = toml_path.read_text(encoding="utf-8")
        data = tomlkit.parse(text).unwrap()
    except Exception as exc:
        return VerifyResult.failed(f"{toml_path}: cannot read the training TOML ({exc})")
    unread = cosmos_unread(text, toml_path)
    if unread is not None:
        return VerifyResult.failed(f"{toml_path}: {unread}")
    checks: list[tuple[str, Any, str]] = [
        ("policy.model_name_or_path", data.get("policy", {}).get("model_name_or_path"), str(model_dir)),
        ("train.output_dir", data.get("train", {}).get("output_dir"), str(output_dir)),
    ]
    if grader_dir is not None:
        custom = data.get("custom", {}).get("alpamayo", {})
        checks.append(
            (
                "custom.alpamayo.reasoning_grading_model_path",
                custom.get("reasoning_grading_model_path"),
                str(grader_dir),
            )
        )
    for key, got, want in checks:
        if got != want:
            return VerifyResult.failed(f"{toml_path}: {key} is {got!r}, the spec says {want!r}")
    loggers = data.get("logging", {}).get("logger", [])
    if "console" not in (loggers or []):
        # docs/reference/cosmos-rl.md §4.5: without the console logger there are no 'Step: n/N' lines to judge training
        # by.
        return VerifyResult.failed(f"{toml_path}: [logging].logger lacks 'console' (no Step lines would be logged)")
    hydra = record.get("hydra_config_name")
    want_hydra = HYDRA_CONFIG_NAMES[alpamayo_version]
    if hydra != want_hydra:
        return VerifyResult.failed(f"hydra config {hydra!r} does not fit Alpamayo {alpamayo_version} ({want_hydra!r})")
    entry = Path(str(record.get("entry_script", "")))
    try:
        entry_text = entry.read_text(encoding="utf-8")
    except OSError:
        return VerifyResult.failed(f"entry script {entry} is missing")
    if f'"{hydra}"' not in entry_text:
        return VerifyResult.failed(f"{entry} does not use hydra config {hydra!r}")
    return VerifyResult.passed(f"{toml_path.name} written; hydra config {hydra}")


def stage(ctx: StageContext) -> StageSpec:
    spec, paths, rundir = ctx.spec, ctx.paths, ctx.rundir

    def prepare() -> list[Command]:
        argv = (sys.executable, "-m", "a1x_supervisor.stages.configure", str(rundir.run_dir))
        env = {"PYTHONPATH": str(_REPO_ROOT)}
        return [Command(argv=argv, cwd=rundir.run_dir, env=env, label="render the training TOML")]

    def verify() -> VerifyResult:
        return verify_configured(
            rundir.configure_record,
            spec_digest=spec.digest(),
            alpamayo_version=spec.alpamayo_version,
            model_dir=paths.model_dir,
            output_dir=paths.output_dir,
            grader_dir=paths.grader_dir if spec.entry.grader else None,
        )

    return StageSpec(
        name="configure",
        title="render the training TOML and pick the Hydra config",
        prepare=prepare,
        verify=verify,
        progress=LastLine,
    )


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m a1x_supervisor.stages.configure RUN_DIR", file=sys.stderr)
        return 2
    try:
        record = configure(Path(args[0]))
    except (SpecError, OSError) as exc:
        print(f"configure: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {record['toml']}")
    print(f"hydra config {record['hydra_config_name']}; entry {record['entry_script']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
