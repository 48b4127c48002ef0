"""Secrets: read when a stage starts, passed only in that child's environment, never written.

``HF_TOKEN`` comes from the environment or the Hugging Face token file (``$HF_TOKEN_PATH``,
``$HF_HOME/token``, ``~/.cache/huggingface/token``); ``WANDB_API_KEY`` from the environment (W&B
itself also reads the netrc file ``wandb login`` writes: ``wandb_login``).
A ``Scrubber`` removes their values from every line the supervisor writes (a launcher that
prints its children's environment would otherwise put them in a stage log).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

SECRET_NAMES: tuple[str, ...] = ("HF_TOKEN", "WANDB_API_KEY")
REDACTED = "[redacted]"
_MIN_SECRET_LEN = 6  # shorter values would blank ordinary words


def hf_token_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where huggingface_hub keeps the token written by ``hf auth login``."""
    env = os.environ if environ is None else environ
    if env.get("HF_TOKEN_PATH"):
        return Path(env["HF_TOKEN_PATH"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "token"
    return Path("~/.cache/huggingface/token").expanduser()


def read_secret(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The current value of a secret, or None. Never logged by callers."""
    env = os.environ if environ is None else environ
    value = env.get(name, "").strip()
    if value:
        return value
    if name == "HF_TOKEN":
        try:
            token = hf_token_file(env).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return token or None
    return None


def secret_source(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """Where a secret would come from ("environment", the token file's path) or None; no value."""
    env = os.environ if environ is None else environ
    if env.get(name, "").strip():
        return "environment"
    if name == "HF_TOKEN" and read_secret(name, env):
        return str(hf_token_file(env))
    return None


def wandb_netrc(environ: Mapping[str, str] | None = None) -> Path:
    """The netrc file ``wandb login`` writes and W&B reads: ``$NETRC``, else ``~/.netrc``."""
    env = os.environ if environ is None else environ
    return Path(env["NETRC"]).expanduser() if env.get("NETRC") else Path("~/.netrc").expanduser()


def wandb_login(environ: Mapping[str, str] | None = None) -> str | None:
    """Where W&B would find its key ("WANDB_API_KEY is set", or ``wandb_netrc`` holding an
    ``api.wandb.ai`` entry), or None; never the key."""
    env = os.environ if environ is None else environ
    if secret_source("WANDB_API_KEY", env):
        return "WANDB_API_KEY is set"
    netrc = wandb_netrc(env)
    try:
        if "api.wandb.ai" in netrc.read_text(encoding="utf-8", errors="replace"):
            return f"W&B credentials in {netrc}"
    except OSError:
        pass
    return None


def child_environment(
    base: Mapping[str, str],
    *,
    additions: Mapping[str, str],
    path_prepend: Iterable[str],
    secrets: Iterable[str],
) -> dict[str, str]:
    """The environment of one stage command: the supervisor's own minus every secret, plus the
    command's additions, plus only the secrets it asked for (read now, from ``base`` or the token file)."""
    env = {k: v for k, v in base.items() if k not in SECRET_NAMES}
    env.update(additions)
    front = [p for p in path_prepend if p]
    if front:
        env["PATH"] = os.pathsep.join([*front, env.get("PATH", os.defpath)])
    for name in secrets:
        value = read_secret(name, base)
        if value:
            env[name] = value
    return env


class Scrubber:
    """Replaces secret values in text. Built from the values known when a stage starts."""

    def __init__(self, values: Iterable[str]) -> None:
        self._values = sorted({v for v in values if len(v) >= _MIN_SECRET_LEN}, key=len, reverse=True)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Scrubber:
        return cls(v for name in SECRET_NAMES if (v := read_secret(name, environ)))

    def scrub(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self._values)
