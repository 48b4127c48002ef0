"""The demo's ``configure`` stage: the real training TOML, rendered from the run spec.

``python -m a1x_tui.demo.programs.configure RUN_DIR``. The TOML is the recipe's local template as
``a1x_configs.render`` fills it for the spec (what the real configure stage writes), with one change
so the simulated node needs two GPUs: the policy's ``dp_shard_size`` is 1. Its values decide which
troubles the training scenario plays (``a1x_tui.demo.scenario.Trouble.from_toml``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RECORD = "demo-configure.json"


def configure(run_dir: Path) -> Path:
    from a1x_configs import render
    from a1x_diagnostics.config.edit import Edit, edit_text
    from a1x_supervisor.rundir import RunDir
    from a1x_supervisor.spec import load_spec
    from a1x_supervisor.stages.configure import template_choices

    rundir = RunDir(run_dir)
    spec = load_spec(rundir.spec_path)
    text = render.render_toml(template_choices(spec))
    text = edit_text(text, [Edit("policy.parallelism.dp_shard_size", 1)])
    rundir.config_dir.mkdir(parents=True, exist_ok=True)
    rundir.train_toml.write_text(text, encoding="utf-8")
    record = {"spec_digest": spec.digest(), "toml": str(rundir.train_toml)}
    (rundir.config_dir / RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return rundir.train_toml


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m a1x_tui.demo.programs.configure RUN_DIR", file=sys.stderr)
        return 2
    path = configure(Path(args[0]))
    print(f"wrote {path} (the recipe's local motion template, policy dp_shard_size 1 for the simulated node)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
