"""The run spec (`a1x-tui init`), secrets, and Hugging Face error classification."""

from __future__ import annotations

from pathlib import Path

import pytest
from supervisor_helpers import World

from a1x_supervisor.hf_errors import repo_from_url, scan_hf_problem
from a1x_supervisor.secrets import Scrubber, child_environment, read_secret
from a1x_supervisor.spec import SpecError, dump_spec, load_spec, parse_spec

REPO = Path(__file__).resolve().parents[2]


def test_init_writes_a_commented_spec_that_loads(world: World) -> None:
    out = world.root / "spec.toml"
    done = world.cli("init", "--out", str(out))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "# a1x-tui run spec" in text and "HF_TOKEN" in text  # says where secrets come from
    assert "chunk_ids = [3116]" in text and "# PAI chunk ids" in text
    spec = load_spec(out)
    assert spec.alpamayo_version == "1.5" and spec.reward_mode == "motion"
    assert spec.paths.workspace == Path.home() / "alpamayo-recipes"  # ~ expanded when read
    assert spec.paths.log_dir is None  # empty: <run dir>/logs
    again = world.cli("init", "--out", str(out))
    assert again.returncode == 2 and "already exists" in again.stderr


def test_relative_paths_are_relative_to_the_spec_and_stored_absolute(tmp_path: Path) -> None:
    text = World(root=tmp_path, env={}).spec_text().replace(f'"{tmp_path}/ws"', '"ws"')
    spec = parse_spec(text, base=tmp_path / "sub")
    assert spec.paths.workspace == tmp_path / "sub" / "ws"
    round_trip = parse_spec(dump_spec(spec), base=Path("/elsewhere"))
    assert round_trip == spec


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('alpamayo_version = "2"', "alpamayo_version"),
        ('reward_mode = "both"', "reward_mode"),
        ('hf_token = "hf_x"', "secrets do not belong in the spec"),
        ("[wandb]\napi_key = 1", "secrets do not belong in the spec"),
        ("[replicas]\npolicy = 0", "replicas.policy"),
        ("bogus = 1", "bogus"),
    ],
)
def test_bad_specs_are_one_clear_line(tmp_path: Path, change: str, message: str) -> None:
    text = World(root=tmp_path, env={}).spec_text()
    key = change.split("=")[0].strip().split("\n")[-1]
    lines = [ln for ln in text.splitlines() if not ln.startswith(f"{key} =")]
    if change.startswith("["):
        section, body = change.split("\n")
        lines = [ln for ln in lines if ln.strip() != section]
        lines += ["", section, body]
    else:
        lines.insert(0, change)
    path = tmp_path / "bad.toml"
    path.write_text("\n".join(lines))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)
    assert "\n" not in str(err.value)


def test_hf_token_comes_from_env_or_token_file(tmp_path: Path) -> None:
    assert read_secret("HF_TOKEN", {"HF_HOME": str(tmp_path)}) is None
    (tmp_path / "token").write_text("hf_fromfile123\n")
    assert read_secret("HF_TOKEN", {"HF_HOME": str(tmp_path)}) == "hf_fromfile123"
    assert read_secret("HF_TOKEN", {"HF_HOME": str(tmp_path), "HF_TOKEN": "hf_env456789"}) == "hf_env456789"
    base = {"HF_HOME": str(tmp_path), "WANDB_API_KEY": "wandb-secret-1", "PATH": "/bin"}
    env = child_environment(base, additions={"A": "1"}, path_prepend=["/venv/bin"], secrets=["HF_TOKEN"])
    assert env["HF_TOKEN"] == "hf_fromfile123"  # read when the stage starts, passed only to it
    assert "WANDB_API_KEY" not in env  # a stage gets only the secrets it asks for
    assert env["PATH"] == "/venv/bin:/bin" and env["A"] == "1"
    assert Scrubber(["hf_fromfile123"]).scrub("token=hf_fromfile123.") == "token=[redacted]."


def test_hf_problems_are_classified() -> None:
    gated = scan_hf_problem(
        "2025 Traceback (most recent call last):\n"
        "2025 huggingface_hub.errors.GatedRepoError: 403 Client Error.\n"
        "2025 Cannot access gated repo for url https://huggingface.co/nvidia/Alpamayo-R1-10B/resolve/main/config.json.\n"
    )
    assert gated is not None and gated.kind == "gated" and gated.repo == "nvidia/Alpamayo-R1-10B"
    fix = gated.fix("/runs/r1", "convert")
    assert "https://huggingface.co/nvidia/Alpamayo-R1-10B" in fix and "a1x-tui restart /runs/r1 --stage convert" in fix
    limited = scan_hf_problem("x 429 Client Error: Too Many Requests for url: https://huggingface.co/api/datasets/a/b")
    assert limited is not None and limited.kind == "rate_limited" and limited.repo == "datasets/a/b"
    assert scan_hf_problem("Fetching 429 files: 100%|###| 429/429") is None
    assert repo_from_url("https://huggingface.co/api/models/nvidia/Cosmos-Reason2-8B/revision/main") == (
        "nvidia/Cosmos-Reason2-8B"
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "a binary file, not a run spec"),
        (b'alpamayo_version = "1.5"\n# caf\xe9\n', "not UTF-8 text (line 2), so not a run spec"),
        (
            (REPO / "a1x_configs" / "templates" / "local_motion.toml").read_bytes(),
            "a Cosmos-RL training TOML ([train], [policy], [rollout]), not a run spec",
        ),
        (b"", "empty (no TOML key), not a run spec"),
        (b"[model]\nname = 1\n", "not a run spec (no run-spec key; it holds model)"),
        (b"hello world\n", "not valid TOML (Invalid key"),
    ],
)
def test_a_file_that_is_not_a_run_spec_says_what_it_is_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str
) -> None:
    from a1x_tui.cli import main

    path = tmp_path / "given.toml"
    path.write_bytes(content)
    for command in ("preflight", "run"):
        code = main([command, "--spec", str(path)])
        err = capsys.readouterr().err.strip()
        assert code in (2, 3) and "\n" not in err and "Traceback" not in err
        assert err.startswith(f"{path}: {says}")
        assert err.endswith("; --spec expects the run spec `a1x-tui init --out FILE` writes")


def test_a_file_where_a_folder_belongs_is_refused_and_the_reverse(tmp_path: Path) -> None:
    text = World(root=tmp_path, env={}).spec_text()
    (tmp_path / "a-file").write_text("x")
    spec = tmp_path / "spec.toml"
    spec.write_text(text.replace(f'model_dir = "{tmp_path}/model"', f'model_dir = "{tmp_path}/a-file"'))
    with pytest.raises(SpecError) as err:
        load_spec(spec)
    assert str(err.value) == f"{spec}: paths.model_dir: {tmp_path}/a-file is a file, not a folder"
    from a1x_supervisor.slurm.spec import ClusterSpec

    with pytest.raises(ValueError, match="is a folder, not a file"):
        ClusterSpec(method="cosmos-dispatch", dispatch_script=tmp_path)


def test_the_commented_closed_loop_example_of_init_is_a_valid_alpagym_spec(tmp_path: Path) -> None:
    from a1x_supervisor.spec import default_spec_text

    text, inside = [], False
    for line in default_spec_text().splitlines():  # the example is the lines after "# [alpagym]", to a blank one
        inside = (inside and bool(line.strip())) or line.startswith("# [alpagym]")
        text.append(line[2:] if inside else line)
    spec = parse_spec("\n".join(text).replace('pipeline = "alpamayo"', 'pipeline = "alpagym"'), base=tmp_path)
    assert spec.pipeline == "alpagym" and spec.alpagym is not None
    assert spec.alpagym.experiment == "alpamayo_1_5_local_2gpu_smoke" and spec.alpagym.deploy == "local"
    assert spec.alpagym.release_dir.is_absolute()  # ~ expanded, like every path of the spec
