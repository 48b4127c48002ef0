"""Preflight's questions to the Hugging Face Hub, asked through huggingface_hub's own client.

Is the token valid (``whoami``)? May it read the gated repositories the run downloads (the Alpamayo
checkpoint and the Cosmos-Reason2 VLM for ``convert``, the PAI dataset for ``download``; licence
accepted?) through the Hub's ``auth-check``? With ``HF_HUB_OFFLINE=1`` no question is asked: the
files the stages read must already be in the cache (docs/reference/alpamayo-recipe.md §3, §4: ``convert`` snapshots
the Alpamayo repository and the VLM's tokenizer and processor files into the cache, training reads
the processor from it).

``huggingface_hub`` is imported here only, and this module only by preflight: ``--check`` never
loads it. The token is handed to the client and never written anywhere; answers are words, not the
client's messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DEFAULT_ENDPOINT = "https://huggingface.co"
PAI_DATASET = "nvidia/PhysicalAI-Autonomous-Vehicles"  # docs/reference/alpamayo-recipe.md §5
# Files of the VLM that convert copies and training reads through the cache (docs/reference/alpamayo-recipe.md §3-§4).
VLM_FILES = ("config.json", "tokenizer_config.json", "preprocessor_config.json")
ALPAMAYO_FILES = ("config.json", "model.safetensors.index.json")  # and every shard the index names

Answer = Literal["ok", "unauthorized", "gated", "not_found", "forbidden", "rate_limited", "unreachable", "offline"]


@dataclass(frozen=True, slots=True)
class HubRepo:
    repo_id: str
    repo_type: Literal["model", "dataset"]
    what: str  # "the Alpamayo checkpoint", ...
    stages: tuple[str, ...]
    files: tuple[str, ...] = ()  # what must be cached to run offline

    def page(self, endpoint: str) -> str:
        prefix = "datasets/" if self.repo_type == "dataset" else ""
        return f"{endpoint.rstrip('/')}/{prefix}{self.repo_id}"


@dataclass(frozen=True, slots=True)
class HubReply:
    answer: Answer
    detail: str = ""  # words for the line: the user name, Retry-After, the exception's type
    data: Mapping[str, Any] = field(default_factory=dict)


def offline(environ: Mapping[str, str]) -> bool:
    """``HF_HUB_OFFLINE`` as huggingface_hub reads it (1, true, yes, on)."""
    return environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _classify(exc: Exception) -> HubReply:
    from huggingface_hub.utils import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
    )

    if isinstance(exc, OfflineModeIsEnabled):
        return HubReply("offline", "HF_HUB_OFFLINE is set in this process")
    if isinstance(exc, GatedRepoError):  # before RepositoryNotFoundError, its base class
        return HubReply("gated")
    if isinstance(exc, RepositoryNotFoundError):
        return HubReply("not_found")
    if isinstance(exc, HfHubHTTPError):
        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        headers = getattr(response, "headers", None) or {}
        if status == 401:
            return HubReply("unauthorized", "HTTP 401")
        if status == 429:
            after = headers.get("Retry-After")
            return HubReply("rate_limited", f"HTTP 429, Retry-After {after} s" if after else "HTTP 429")
        if status == 403:
            return HubReply("forbidden", "HTTP 403")
        return HubReply("unreachable", f"HTTP {status}")
    return HubReply("unreachable", type(exc).__name__)


class HubClient:
    """``huggingface_hub.HfApi`` for one endpoint and token (``None``: anonymous)."""

    def __init__(self, *, endpoint: str, token: str | None) -> None:
        from huggingface_hub import HfApi

        self.endpoint = endpoint
        # The token preflight found (environment or token file), or False: the client reads none of its own.
        self._api = HfApi(endpoint=endpoint, token=token if token else False)
        self._token = token

    def whoami(self) -> HubReply:
        if not self._token:
            return HubReply("unauthorized", "no token")
        try:
            me = self._api.whoami()
        except Exception as exc:  # the client's errors, and the network's
            return _classify(exc)
        name = me.get("name") if isinstance(me, dict) else None
        return HubReply("ok", f"user {name}" if name else "")

    def can_read(self, repo: HubRepo) -> HubReply:
        try:
            check = getattr(self._api, "auth_check", None)
            if check is not None:
                check(repo.repo_id, repo_type=repo.repo_type)
            else:  # huggingface_hub before auth_check: the repo's metadata (a gate is not seen there)
                self._api.repo_info(repo.repo_id, repo_type=repo.repo_type)
        except Exception as exc:
            return _classify(exc)
        return HubReply("ok")


def missing_from_cache(repo: HubRepo, cache_dir: Path) -> list[str]:
    """The files of ``repo`` that the cache lacks (for an Alpamayo repo also every shard of its index)."""
    from huggingface_hub import try_to_load_from_cache

    def cached(name: str) -> str | None:
        found = try_to_load_from_cache(repo.repo_id, name, cache_dir=cache_dir, repo_type=repo.repo_type)
        return found if isinstance(found, str) else None

    missing = []
    wanted: list[str] = list(repo.files)
    for name in wanted:
        path = cached(name)
        if path is None:
            missing.append(name)
            continue
        if name == "model.safetensors.index.json":
            try:
                index = json.loads(Path(path).read_text(encoding="utf-8"))
                shards = sorted(set(index.get("weight_map", {}).values()))
            except (OSError, ValueError, AttributeError):
                missing.append(f"{name} (unreadable)")
                continue
            missing += [shard for shard in shards if cached(shard) is None]
    return missing


def repos_for(stages: Sequence[str], *, alpamayo_model: str, vlm: str) -> list[HubRepo]:
    """The gated repositories the stages read, each once."""
    wanted: dict[str, HubRepo] = {}

    def add(repo: HubRepo) -> None:
        old = wanted.get(repo.repo_id)
        wanted[repo.repo_id] = repo if old is None else HubRepo(
            repo.repo_id, repo.repo_type, repo.what, old.stages + repo.stages, old.files or repo.files
        )

    if "convert" in stages:
        add(HubRepo(alpamayo_model, "model", "the Alpamayo checkpoint", ("convert",), ALPAMAYO_FILES))
        add(HubRepo(vlm, "model", "the VLM (tokenizer and processor)", ("convert",), VLM_FILES))
    if "download" in stages:
        add(HubRepo(PAI_DATASET, "dataset", "the PAI dataset", ("download",)))
    for stage in ("train", "evaluate"):  # each model load builds the processor (docs/reference/alpamayo-recipe.md §3)
        if stage in stages:
            add(HubRepo(vlm, "model", "the VLM (tokenizer and processor)", (stage,), VLM_FILES))
    return list(wanted.values())
