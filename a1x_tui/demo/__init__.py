"""The demo: a complete run through the real supervisor, diagnostics and UI, with no GPU and no network.

Its stages are small Python programs (``a1x_tui.demo.programs``) that write what the real stages
write: Cosmos-RL logs in the launcher's layout and line formats (``logs/logs_<ts>/controller.log``,
``policy_0.log``, ``rollout_0.log``, ``logs_latest``), checkpoints, an export. The training stage
plays a scripted scenario (``a1x_tui.demo.scenario``) with three troubles the real detectors
catch: pending rollouts growing, a vLLM out-of-memory in the rollout replica, and a stretch of
collapsed reward std. Each trouble stops once the fix the dashboard proposes is applied to the
run's TOML, so apply-fix and restart-train can be tried for real.

The package ``__init__`` imports nothing, so each stage program starts fast; ``a1x_tui.demo.setup``
prepares a demo run and ``a1x_tui.demo.pipeline`` defines its stages.
"""
