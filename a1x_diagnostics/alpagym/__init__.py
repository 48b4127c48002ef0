"""Closed-loop runs: NVIDIA AlpaGym driving the policy in AlpaSim, trained by Cosmos-RL.

What a1x-tui reads of such a run, beside the Cosmos-RL logs the open-loop engine reads as for any
run (docs/parsing.md "Closed-loop runs", docs/reference/alpagym.md):

- ``parser``: AlpaGym's, AlpaSim's and the host's lines in, those events out (pure);
- ``artifacts`` / ``config``: one episode's scores, the host's ``resolved_config.yaml`` (I/O, one-line errors);
- ``state``: the episodes joined by session UUID, the closed-loop metrics per step (pure);
- ``reader``: the I/O edge that feeds a run's ``Collector`` (``--check``) and the live follower;
- ``lint``: the generated ``cosmos_config.toml`` and the Hydra choices behind it.

Which folder is an AlpaGym run and which of its files are read is ``a1x_diagnostics.parsing.alpagym_layout``
(parsing owns every run layout); the closed-loop events (``ClosedLoop``, kind ``CL``, an episode's
artifact) are ``a1x_diagnostics.closed_loop_events``, below the detectors that read them
(``a1x_diagnostics/detectors/closed_loop.py``). Nothing here is imported for other runs, and nothing here
imports the engine or the live follower that call it.
"""
