"""Preflight through huggingface_hub's own client, against a local Hub (``HF_ENDPOINT``).

The server answers the endpoints the client calls: ``/api/whoami-v2`` (the token) and
``/api/{models,datasets}/<repo>/auth-check`` (may the token read it? 403 with ``X-Error-Code:
GatedRepo`` when the licence is not accepted), with 200, 401, 403 and 429 as the real Hub does.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from supervisor_helpers import REPO, World

from a1x_diagnostics.findings import Report
from a1x_supervisor.preflight import preflight, render_text
from a1x_supervisor.spec import RunSpec, parse_spec

TOKEN = "hf_HUBTESTsecret0123456789"
ALPAMAYO = "nvidia/Alpamayo-1.5-10B"
VLM = "nvidia/Cosmos-Reason2-8B"
PAI = "nvidia/PhysicalAI-Autonomous-Vehicles"
WHOAMI = "/api/whoami-v2"


def check_path(repo: str, kind: str = "models") -> str:
    return f"/api/{kind}/{repo}/auth-check"


@dataclass
class Hub:
    endpoint: str
    answers: dict[str, tuple[int, dict[str, str], dict]] = field(default_factory=dict)
    seen: list[tuple[str, str]] = field(default_factory=list)  # (path, Authorization header)

    def answer(self, path: str, status: int = 200, body: dict | None = None, **headers: str) -> None:
        self.answers[path] = (status, {k.replace("_", "-"): v for k, v in headers.items()}, body or {})

    @property
    def paths(self) -> list[str]:
        return [p for p, _ in self.seen]


@pytest.fixture
def hub() -> Iterator[Hub]:
    state = Hub(endpoint="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.seen.append((self.path, self.headers.get("Authorization", "")))
            status, headers, body = state.answers.get(self.path, (404, {"X-Error-Code": "RepoNotFound"}, {}))
            data = json.dumps(body or {"error": "x"}).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


def _spec(world: World) -> RunSpec:
    return parse_spec(world.spec_text(), base=world.root)


def _preflight(world: World, hub: Hub, stages: list[str], **env: str) -> Report:
    environ = {"HF_TOKEN": TOKEN, "HF_HOME": str(world.root / "hfhome"), "HF_ENDPOINT": hub.endpoint, **env}
    report = preflight(
        _spec(world),
        stages=stages,
        target="run.toml",
        environ=environ,
        gpu_probe=lambda: "none",
        disk_free=lambda _p: 10**15,
        which=lambda name: f"/usr/bin/{name}",
    )
    printed = render_text(report) + report.model_dump_json()
    assert TOKEN not in printed  # never a secret in what preflight prints
    return report


def _state(report: Report, cid: str) -> tuple[str, str | None]:
    check = {c.id: c for c in report.checks}[cid]
    return check.state.value, check.note


def _finding(report: Report, cid: str):  # type: ignore[no-untyped-def]
    return next(f for f in report.findings if f.id == cid)


def test_a_valid_token_with_the_licences_accepted_passes(world: World, hub: Hub) -> None:
    hub.answer(WHOAMI, body={"name": "ana", "type": "user"})
    for path in (check_path(ALPAMAYO), check_path(VLM), check_path(PAI, "datasets")):
        hub.answer(path)
    report = _preflight(world, hub, ["convert", "download"])
    assert not {f.id for f in report.findings} & {"hf_token_invalid", "gated_repo", "hf_rate_limit"}
    assert _state(report, "hf_token_invalid") == ("ok", "the Hub accepts the token from environment (user ana)")
    assert _state(report, "gated_repo") == ("ok", f"the token may read {ALPAMAYO}, {VLM}, {PAI}")
    assert hub.paths == [WHOAMI, check_path(ALPAMAYO), check_path(VLM), check_path(PAI, "datasets")]
    assert {auth for _, auth in hub.seen} == {f"Bearer {TOKEN}"}  # the client sent the token, preflight showed none


def test_a_rejected_token_is_one_finding_with_the_fix(world: World, hub: Hub) -> None:
    hub.answer(WHOAMI, 401, X_Error_Message="Invalid credentials in Authorization header")
    report = _preflight(world, hub, ["convert", "download", "train"])
    finding = _finding(report, "hf_token_invalid")
    assert finding.severity.value == "critical" and report.exit_code == 2
    assert [e.text for e in finding.evidence] == ["whoami: HTTP 401 for the token from environment"]
    assert finding.action is not None and finding.action.startswith("`hf auth login --force`")
    assert hub.paths == [WHOAMI]  # each repository would be refused too: not asked
    assert _state(report, "gated_repo") == ("blind", "not asked: the token is rejected")


def test_a_gated_repository_whose_licence_is_not_accepted_names_its_page(world: World, hub: Hub) -> None:
    hub.answer(WHOAMI, body={"name": "ana"})
    hub.answer(check_path(ALPAMAYO))
    hub.answer(check_path(VLM))
    hub.answer(check_path(PAI, "datasets"), 403, X_Error_Code="GatedRepo", X_Error_Message="Access is restricted")
    report = _preflight(world, hub, ["convert", "download"])
    finding = _finding(report, "gated_repo")
    assert [e.text for e in finding.evidence] == [
        f"{PAI} (the PAI dataset, for download): gated, and the licence is not accepted for this token's account"
    ]
    assert finding.action is not None and f"accept the licences at {hub.endpoint}/datasets/{PAI}" in finding.action
    assert finding.data["repos"] == [PAI]


def test_a_repository_the_token_cannot_see_is_refused_too(world: World, hub: Hub) -> None:
    hub.answer(WHOAMI, body={"name": "ana"})
    hub.answer(check_path(VLM))  # the Alpamayo check gets the server's default: 404 RepoNotFound
    report = _preflight(world, hub, ["convert"])
    assert [e.text for e in _finding(report, "gated_repo").evidence] == [
        f"{ALPAMAYO} (the Alpamayo checkpoint, for convert): not found, or this token may not read it"
    ]


def test_a_rate_limited_hub_is_a_warning_and_the_rest_is_still_asked(world: World, hub: Hub) -> None:
    hub.answer(WHOAMI, 429, Retry_After="30")
    hub.answer(check_path(PAI, "datasets"))
    report = _preflight(world, hub, ["download"])
    finding = _finding(report, "hf_rate_limit")
    assert finding.severity.value == "warning" and report.exit_code == 1
    assert [e.text for e in finding.evidence] == ["whoami: HTTP 429, Retry-After 30 s"]
    assert _state(report, "hf_token_invalid") == ("blind", "whoami is rate-limited: the token was not checked")
    assert _state(report, "gated_repo") == ("ok", f"the token may read {PAI}")


def test_an_unreachable_hub_is_said_not_guessed(world: World) -> None:
    dead = Hub(endpoint="http://127.0.0.1:9")  # the discard port: nothing listens
    report = _preflight(world, dead, ["download"])
    assert not {f.id for f in report.findings} & {"hf_token_invalid", "gated_repo"}
    assert _state(report, "gated_repo")[0] == "blind"
    assert any(n.startswith("could not ask the Hub at http://127.0.0.1:9") for n in report.notes)


def _cache_repo(cache: Path, repo: str, files: dict[str, str]) -> None:
    folder = cache / ("models--" + repo.replace("/", "--"))
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("c0ffee")
    snapshot = folder / "snapshots" / "c0ffee"
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text)


def test_offline_with_the_files_cached_asks_nothing(world: World, hub: Hub) -> None:
    cache = world.root / "hfhome" / "hub"
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    _cache_repo(
        cache,
        ALPAMAYO,
        {
            "config.json": "{}",
            "model.safetensors.index.json": json.dumps(index),
            "model-00001-of-00002.safetensors": "w",
            "model-00002-of-00002.safetensors": "w",
        },
    )
    _cache_repo(cache, VLM, {"config.json": "{}", "tokenizer_config.json": "{}", "preprocessor_config.json": "{}"})
    report = _preflight(world, hub, ["convert", "train"], HF_HUB_OFFLINE="1")
    assert not {f.id for f in report.findings} & {"hf_cache_missing", "hf_token_invalid", "gated_repo"}
    assert _state(report, "hf_cache_missing") == (
        "ok",
        f"HF_HUB_OFFLINE=1: {ALPAMAYO}, {VLM} in the cache {cache}; the Hub is not asked about them",
    )
    assert hub.seen == []
    # A shard the index names is missing: convert would fail offline.
    snapshot = cache / f"models--{ALPAMAYO.replace('/', '--')}" / "snapshots" / "c0ffee"
    (snapshot / "model-00002-of-00002.safetensors").unlink()
    report = _preflight(world, hub, ["convert", "train"], HF_HUB_OFFLINE="1")
    finding = _finding(report, "hf_cache_missing")
    assert [e.text for e in finding.evidence] == [
        f"{ALPAMAYO} (the Alpamayo checkpoint, for convert): model-00002-of-00002.safetensors not in {cache}"
    ]
    assert "HF_HUB_OFFLINE=0" in (finding.action or "")
    # The download stage goes online whatever this shell says: the dataset is still asked about.
    hub.answer(WHOAMI, body={"name": "ana"})
    hub.answer(check_path(PAI, "datasets"))
    report = _preflight(world, hub, ["download"], HF_HUB_OFFLINE="1")
    assert hub.paths == [WHOAMI, check_path(PAI, "datasets")]
    assert _state(report, "hf_cache_missing")[0] == "skipped"


def test_preflight_and_check_load_huggingface_hub_only_when_asking() -> None:
    code = (
        "import sys; import a1x_supervisor.preflight; from a1x_tui.cli import main; "
        "rc = main(['--check', '--example', 'healthy']); "
        "assert 'huggingface_hub' not in sys.modules, 'huggingface_hub imported'; sys.exit(rc)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60, check=False)
    assert p.returncode == 0, p.stderr


NUREC = "nvidia/PhysicalAI-Autonomous-Vehicles-NuRec"


def test_alpagym_preflight_asks_the_hub_about_the_gated_nurec_scenes(world: World, hub: Hub) -> None:
    """pipeline = "alpagym": the scenes AlpaSim downloads are gated; a token without access is
    nurec_access_denied before anything runs (the host would refuse it first, docs/reference/alpagym.md §1.3)."""
    spec = parse_spec(world.alpagym_spec_text(), base=world.root)
    hub.answer(WHOAMI, body={"name": "ana", "type": "user"})
    hub.answer(check_path(NUREC, "datasets"), 403, X_Error_Code="GatedRepo")
    hub.answer(check_path(ALPAMAYO))
    environ = {"HF_TOKEN": TOKEN, "HF_HOME": str(world.root / "hfhome"), "HF_ENDPOINT": hub.endpoint}
    report = preflight(spec, stages=["download", "train"], target="run.toml", environ=environ,
                       gpu_probe=lambda: "none", disk_free=lambda _p: 10**15, which=lambda name: None)
    finding = _finding(report, "nurec_access_denied")
    assert finding.severity.value == "critical"
    assert finding.evidence[0].text == f"{NUREC}: gated, and access is not granted to this token's account"
    assert f"{hub.endpoint}/datasets/{NUREC}" in (finding.action or "")
    assert _state(report, "gated_repo") == ("ok", f"the token may read {ALPAMAYO}")
    assert TOKEN not in render_text(report) + report.model_dump_json()
