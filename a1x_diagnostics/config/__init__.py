"""The recipe TOML: a typed model with Cosmos-RL 747d1bd defaults, lint rules and safe fixes.

``load_config`` reads a TOML the way Cosmos-RL would (and says where it is wrong), ``lint_config``
and ``lint_report`` judge it before launch, ``plan_fix`` / ``apply_fix`` cure a finding with the
smallest edit that keeps the rest of the file byte for byte.
"""

from __future__ import annotations

from a1x_diagnostics.config.fixes import FixPlan, FixRefused, FixResult, apply_fix, parse_value, plan_fix
from a1x_diagnostics.config.loader import ConfigError, LoadedConfig, UnknownKey, load_config, parse_config
from a1x_diagnostics.config.report import lint_report
from a1x_diagnostics.config.rules import RULES, LintContext, lint_config, make_context
from a1x_diagnostics.config.schema import RecipeConfig

__all__ = [
    "RULES",
    "ConfigError",
    "FixPlan",
    "FixRefused",
    "FixResult",
    "LintContext",
    "LoadedConfig",
    "RecipeConfig",
    "UnknownKey",
    "apply_fix",
    "lint_config",
    "lint_report",
    "load_config",
    "make_context",
    "parse_config",
    "parse_value",
    "plan_fix",
]
