"""Built-in example runs for ``a1x-tui --check --example NAME`` (package data: real log folders).

Both are real Cosmos-RL 0.4.4 runs recorded on an H200 (tests/fixtures/cosmos/v0.4.4/): each holds
the launcher's own output (``run.out``), ``logs_<ts>/controller.log``, ``policy_0.log``,
``rollout_0.log`` and the ``logs_latest`` link (discovery falls back to the newest ``logs_<ts>`` when
a packaged copy lost the link).

- ``healthy``: a tiny GRPO job that trains its 8 steps and exits cleanly.
- ``sick``: the same job whose rollout runs out of GPU memory at step 4; the launcher keeps going and
  the controller trains on from buffered rollouts until the run idles.
"""

# What ``a1x-tui --check --example`` lists beside each name (the folders above, one line each).
DESCRIPTIONS = {
    "healthy": "a tiny GRPO job that trains its 8 steps and exits cleanly (exit 0)",
    "sick": "the same job whose rollout runs out of GPU memory at step 4 and trains on from buffered rollouts "
    "(exit 2)",
}
