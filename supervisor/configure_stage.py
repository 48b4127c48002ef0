"""The ``configure`` stage program: ``python -m supervisor.configure_stage RUN_DIR``.

Renders the training TOML from the run spec with ``configs.render`` and picks the Hydra config
for the Alpamayo version. The recipe's entry scripts hard-code the Alpamayo 1.5 Hydra config
(alpamayo-recipe.md §8.1: "For Alpamayo 1 the entry must be edited"); for Alpamayo 1 a copy of
the entry script with the other name is written into the run directory. The user's checkout is
never edited. Writes ``config/train.toml``, the copy if any, and ``config/configure.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from configs import render
from configs.render import TemplateChoices
from supervisor.rundir import RunDir
from supervisor.spec import RunSpec, SpecError, load_spec

# alpamayo-recipe.md §8.1: the name both shipped entry scripts use.
SHIPPED_HYDRA_CONFIG = "alpamayo1_5_rvla_rl_pai"


def template_choices(spec: RunSpec) -> TemplateChoices:
    """``configs.render.TemplateChoices`` for this spec."""
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
    rundir = RunDir(run_dir)
    spec = load_spec(rundir.spec_path)
    text = render.render_toml(template_choices(spec))
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


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m supervisor.configure_stage RUN_DIR", file=sys.stderr)
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
