"""The pipelines a supervisor runs, by the spec's ``pipeline`` name: the Alpamayo RL pipeline, composed
from ``a1x_supervisor.stages``, and any an application registers (a1x-tui registers its demo's stages).

A ``Pipeline`` says which stages a spec has, in order, and builds them; ``register_pipeline`` adds
one. The supervisor imports no application: a daemon forked by a1x-tui inherits what it registered.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass

from a1x_supervisor.rundir import RunDir
from a1x_supervisor.spec import RunSpec
from a1x_supervisor.stage import STAGE_NAMES, StageError, StageSpec
from a1x_supervisor.stages import configure, convert, curate, download, env, evaluate, export, grader, train, verify
from a1x_supervisor.stages.context import StageContext


@dataclass(frozen=True, slots=True)
class Pipeline:
    """A named list of stages. ``build_stages``' ``outputs`` is shared state (the export folder, the
    checkpoint) that the supervisor keeps in ``state.json``."""

    name: str
    stage_names: Callable[[RunSpec], list[str]]
    build_stages: Callable[[RunSpec, RunDir, MutableMapping[str, str]], list[StageSpec]]


_PIPELINES: dict[str, Pipeline] = {}


def register_pipeline(pipeline: Pipeline) -> None:
    """Make ``pipeline`` the one for specs that name it (again: the newer one counts)."""
    _PIPELINES[pipeline.name] = pipeline


def _pipeline(spec: RunSpec) -> Pipeline:
    found = _PIPELINES.get(spec.pipeline)
    if found is None:
        raise StageError(
            f"no pipeline {spec.pipeline!r} in this process (registered: {', '.join(sorted(_PIPELINES))}): "
            "the program that defines it registers it before stages are built (a1x-tui does for its demo)"
        )
    return found


def stage_names(spec: RunSpec) -> list[str]:
    """The stages of this spec, in order."""
    return _pipeline(spec).stage_names(spec)


def build_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    """Every stage of ``spec``, in order (``outputs``: see ``Pipeline``)."""
    return _pipeline(spec).build_stages(spec, rundir, outputs)


def select_stages(
    names: Sequence[str], *, from_stage: str | None, only: str | None, skip: Sequence[str] = ()
) -> list[str]:
    """The stages a run executes (``skip``: left out, e.g. ``--skip evaluate``). Raises ``StageError`` with one
    line for a bad name."""
    for wanted in (from_stage, only, *skip):
        if wanted is None:
            continue
        if wanted not in STAGE_NAMES:
            raise StageError(f"unknown stage {wanted!r} (stages: {', '.join(names)})")
        if wanted not in names:
            raise StageError(f"stage {wanted!r} does not apply to this run (stages: {', '.join(names)})")
    if only is not None and only in skip:
        raise StageError(f"--only {only} and --skip {only} contradict each other")
    if only is not None:
        return [only]
    if from_stage is not None:
        return [n for n in names[names.index(from_stage) :] if n not in skip]
    return [n for n in names if n not in skip]


# -- the Alpamayo RL pipeline (docs/reference/alpamayo-recipe.md §1-§12, docs/reference/cosmos-rl.md §2;
# docs/supervisor.md "Stages") --
_ALPAMAYO: dict[str, Callable[[StageContext], StageSpec]] = {
    "env": env.stage,
    "convert": convert.stage,
    "download": download.stage,
    "curate": curate.stage,
    "grader": grader.stage,
    "configure": configure.stage,
    "train": train.stage,
    "export": export.stage,
    "verify": verify.stage,
    "evaluate": evaluate.stage,
}


def _alpamayo_names(spec: RunSpec) -> list[str]:
    """Every stage in ``STAGE_NAMES`` order: curate for motion data, grader for a reward that grades the
    reasoning (a1x_diagnostics.recipe_entries), p2p closed-loop only."""
    entry = spec.entry
    skip = ("curate" if entry.reasoning_data else "", "" if entry.grader else "grader", "p2p")
    return [name for name in STAGE_NAMES if name not in skip]


def _alpamayo_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    ctx = StageContext(spec, rundir, outputs)
    return [_ALPAMAYO[name](ctx) for name in _alpamayo_names(spec)]


register_pipeline(Pipeline("alpamayo", _alpamayo_names, _alpamayo_stages))


# -- the alpagym pipeline: closed-loop training with AlpaGym (docs/supervisor.md "The alpagym pipeline",
# docs/reference/alpagym.md). Its stage modules are loaded only for such a run.
def _alpagym_names(spec: RunSpec) -> list[str]:
    from a1x_supervisor.stages.alpagym import stage_names as alpagym_stage_names

    return alpagym_stage_names(spec)


def _alpagym_stages(spec: RunSpec, rundir: RunDir, outputs: MutableMapping[str, str]) -> list[StageSpec]:
    from a1x_supervisor.stages.alpagym import build as build_alpagym

    return build_alpagym(StageContext(spec, rundir, outputs))


register_pipeline(Pipeline("alpagym", _alpagym_names, _alpagym_stages))
