"""One module per stage of the Alpamayo pipeline: what it runs, how its outputs are verified and,
where it has one, its retry policy (docs/supervisor.md "Stages"). ``a1x_supervisor.pipeline`` composes
them; ``StageContext`` (``context``) is what every stage reads of its run, made by the pipeline.

Nothing is imported here, so ``python -m a1x_supervisor.stages.configure`` (the configure stage's own
program) starts without the others.
"""
