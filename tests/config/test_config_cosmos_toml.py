"""Cosmos-RL's own parser decides: what toml 0.10.2 refuses or reads differently is a finding, lint and fix
agree on byte-order marks and line ends, and every TOML we ship or record reads the same in both parsers
(docs/reference/cosmos-rl.md §8.1, docs/config.md "What Cosmos-RL's parser reads")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import toml
import tomlkit
from config_helpers import MOTION, findings, load_text, text_of, variant

from a1x_configs.render import template_text
from a1x_diagnostics.config import FixRefused, apply_fix, lint_report, load_config, make_context, plan_fix
from a1x_diagnostics.config.cosmos_toml import read_like_cosmos

REPO = Path(__file__).resolve().parents[2]
QUIET = make_context(gpus_per_node=8, env={})
READY = variant(MOTION)  # a clean local motion TOML: no finding at all with 8 GPUs


def _with(old: str, new: str, text: str = READY) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_the_ready_file_is_clean() -> None:
    assert findings(READY) == {}


# --- the documents: what tomlkit loads and Cosmos-RL's launcher refuses or misreads -----------------

REJECTED = [
    # a mixed-type array: the float betas with an integer among them
    ("optm_betas = [0.9, 0.999]", "optm_betas = [0.9, 1]", "Not a homogeneous array", "one type"),
    # an inline table split over lines
    ("top_p = 0.98", "top_p = 0.98\nlimits = { low = 1,\n  high = 2 }", "", "on one line"),
    # an inline table with a trailing comma
    ("top_p = 0.98", "top_p = 0.98\nlimits = { low = 1, high = 2, }", "Invalid inline table", "comma"),
]


@pytest.mark.parametrize(("old", "new", "problem", "hint"), REJECTED)
def test_what_toml_0_10_refuses_is_critical_with_its_line(old: str, new: str, problem: str, hint: str) -> None:
    text = _with(old, new, text_of(MOTION))
    tomlkit.parse(text)  # TOML 1.0 reads it: the old lint passed it
    with pytest.raises(toml.TomlDecodeError):
        toml.loads(text)  # what the launcher does (launch_all.py read_config)
    found = findings(text)
    finding = found["toml_rejected"]
    assert finding.severity.value == "critical"
    line = finding.evidence[0].line
    assert line is not None and text.splitlines()[line - 1] in new.split("\n")  # a line of the construct
    assert problem in finding.explanation and "Error reading config file" in finding.explanation
    assert hint in (finding.action or "")
    with pytest.raises(FixRefused, match="toml_rejected"):  # no fix writes on top of it
        plan_fix(load_text(text), "placeholder_path", values={"train.output_dir": "/o"}, context=QUIET)


def test_a_table_then_a_value_in_an_array_is_read_without_the_value() -> None:
    text = _with("[custom.alpamayo.reward]", "[custom.mine]\nitems = [{x = 1}, 2]\n\n[custom.alpamayo.reward]")
    assert toml.loads(text)["custom"]["mine"]["items"] == [{"x": 1}]  # the silent loss the issue quotes
    finding = findings(text)["toml_misread"]
    assert "custom.mine.items = [{x = 1}, 2]" in finding.explanation
    assert "reads [{x = 1}]" in finding.explanation
    assert finding.data["seen"] == {"custom.mine.items": "[{x = 1}]"}
    assert finding.evidence[0].text == "items = [{x = 1}, 2]"


def test_a_string_the_launchers_copy_garbles_is_a_misread_by_the_controller() -> None:
    text = _with('split = "train"', 'split = "train"\ndataset.name = "q\\u0001"')
    finding = findings(text)["toml_misread"]
    assert "the controller (from the launcher's copy)" in finding.explanation
    assert 'reads "qx01"' in finding.explanation


def test_a_string_whose_copy_the_controller_refuses_is_rejected_citing_its_line() -> None:
    # \u001f: toml.dump writes it as an escape that toml.load refuses (found by the hostile-config fuzz)
    text = _with('split = "train"', 'split = "train"\nreasoning_tag = "\\u001f"')
    toml.loads(text)  # the launcher reads the file itself
    finding = findings(text)["toml_rejected"]
    assert "the copy it writes for the controller" in finding.explanation
    assert [e.text for e in finding.evidence] == ['reasoning_tag = "\\u001f"']
    assert finding.evidence[0].line is not None


def test_an_edit_cosmos_would_misread_is_refused_and_the_file_is_untouched(tmp_path: Path) -> None:
    path = tmp_path / "recipe.toml"
    path.write_text(text_of(MOTION))
    before = path.read_bytes()
    with pytest.raises(FixRefused, match="Cosmos-RL's TOML parser"):
        apply_fix(
            path,
            "placeholder_path",
            values={"train.output_dir": "/data/\x1bout", "policy.model_name_or_path": "/m"},
            context=QUIET,
        )
    assert path.read_bytes() == before


# --- every TOML we ship or record: the two parsers agree -------------------------------------------------------


def _recorded_tomls() -> list[Path]:
    found = sorted((REPO / "tests").rglob("*.toml")) + sorted((REPO / "a1x_configs" / "templates").glob("*.toml"))
    return [p for p in found if p.is_file()]


def test_every_shipped_and_recorded_toml_reads_the_same_in_cosmos_rl() -> None:
    paths = _recorded_tomls()
    assert len(paths) > 50  # the recorded Cosmos-RL runs' TOMLs, the test data, the templates
    disagree = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        reading = read_like_cosmos(text)
        try:
            toml10 = tomlkit.parse(text).unwrap()
        except Exception:
            toml10 = None
        if reading.rejected is not None or toml10 is None or reading.misreads(toml10):
            disagree.append(path.relative_to(REPO))
    assert disagree == []


@pytest.mark.parametrize("name", ["local_motion.toml", "local_joint.toml", "cluster.toml"])
def test_templates_raise_no_toml_finding(name: str) -> None:
    found = findings(template_text(name))
    assert "toml_rejected" not in found and "toml_misread" not in found


# --- issue 37 point 7: byte-order marks and line ends, lint and fix alike -----------------------------------


def test_a_byte_order_mark_is_refused_by_lint_and_fix_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "recipe.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text_of(MOTION).encode())
    report = lint_report(path, gpus_per_node=8, env={})
    rejected = next(f for f in report.findings if f.id == "toml_rejected")
    assert "byte-order mark (bytes EF BB BF) at byte 0" in rejected.explanation
    assert "without a byte-order mark" in (rejected.action or "")
    assert "Empty key" not in rejected.explanation  # the old tomlkit message said nothing of the byte
    before = path.read_bytes()
    with pytest.raises(FixRefused, match=r"byte-order mark \(bytes EF BB BF\) at byte 0") as info:
        apply_fix(path, "placeholder_path", values={"train.output_dir": "/o", "policy.model_name_or_path": "/m"})
    assert "\n" not in str(info.value)
    assert path.read_bytes() == before


def _endings(data: bytes) -> list[bytes]:
    return re.findall(rb"\r\n|\r|\n", data)


@pytest.mark.parametrize(
    "shape",
    [
        "crlf_then_lone_cr",  # a CRLF file whose last line ends with a lone CR (it passed lint, fix refused it)
        "mixed",  # LF and CRLF lines in one file
        "lone_cr_between_lines",  # a lone CR that ends a line in the middle of the file
    ],
)
def test_line_ends_work_in_lint_and_fix_alike_and_survive_the_fix(tmp_path: Path, shape: str) -> None:
    lines = text_of(MOTION).split("\n")
    if shape == "crlf_then_lone_cr":
        raw = "\r\n".join(lines) + "\r"
    elif shape == "mixed":
        raw = "".join(line + ("\r\n" if i % 2 else "\n") for i, line in enumerate(lines))
    else:
        raw = "\n".join(lines[:5]) + "\r" + "\n".join(lines[5:])
    path = tmp_path / "recipe.toml"
    path.write_bytes(raw.encode())
    plain = lint_report(MOTION, gpus_per_node=8, env={})
    report = lint_report(path, gpus_per_node=8, env={})
    assert [f.id for f in report.findings] == [f.id for f in plain.findings]  # Cosmos-RL reads the same file
    assert report.findings[0].id == "placeholder_path"
    result = apply_fix(path, "placeholder_path", values={"train.output_dir": "/o", "policy.model_name_or_path": "/m"})
    assert result.written
    after = path.read_bytes()
    assert _endings(after) == _endings(raw.encode())  # every line end as it was, lone CR included
    assert after.replace(b'"/o"', b'"/path/to/alpamayo_cosmos_rl_job/outputs"').replace(
        b'"/m"', b'"/path/to/converted_alpamayo_model"'
    ) == raw.encode()
    assert load_config(path).get("train.output_dir") == "/o"


def test_new_lines_of_a_fix_take_the_files_line_end(tmp_path: Path) -> None:
    raw = READY.replace("\n", "\r\n").replace('[train.ckpt]\r\nenable_checkpoint = true\r\n', "[train.ckpt]\r\n")
    path = tmp_path / "recipe.toml"
    path.write_bytes(raw.encode())
    apply_fix(path, "checkpointing_disabled", context=QUIET)
    after = path.read_bytes()
    assert b"enable_checkpoint = true\r\n" in after and re.search(rb"(?<!\r)\n", after) is None


def test_a_lone_cr_inside_a_string_is_refused_by_both_naming_the_byte(tmp_path: Path) -> None:
    text = READY.replace('project_name = "Alpamayo_RL"', 'project_name = "Alpamayo\rRL"')
    path = tmp_path / "recipe.toml"
    path.write_bytes(text.encode())
    report = lint_report(path, gpus_per_node=8, env={})
    (finding,) = report.findings
    assert finding.id == "toml_rejected"
    offset = text.encode().index(b"\r")
    assert f"a lone carriage return (byte 0x0D) at byte {offset}" in finding.explanation
    with pytest.raises(FixRefused, match=f"byte 0x0D\\) at byte {offset}"):
        apply_fix(path, "placeholder_path", values={"train.output_dir": "/o", "policy.model_name_or_path": "/m"})
