"""The TOML editor: the intended change and nothing else, byte for byte elsewhere."""

from __future__ import annotations

import difflib
from typing import Any

import pytest
import tomlkit
from config_helpers import JOINT, MOTION, cosmos_keeps, text_of, variant
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from a1x_configs.render import template_text
from a1x_diagnostics.config._locate import scan_keys
from a1x_diagnostics.config.edit import REMOVE, Edit, EditError, _pruned, edit_text, intended

HAND_WRITTEN = """\
# hand-written variant: inline table, quoted key, comments after values, CRLF-free
mode = "disaggregated"  # top level

[rollout]
n_generation = 12 # the group
sampling_config = { temperature = 0.6, top_p = 0.98 }
"odd key" = 'literal'

[policy.parallelism]
tp_size = 1

[train.train_policy]
dataset.split = "train"
dataset.name = ''
kl_beta = 0.0
"""

BASES = {
    "motion": text_of(MOTION),
    "joint": text_of(JOINT),
    "ready": variant(MOTION),
    "local_motion": template_text("local_motion.toml"),
    "local_joint": template_text("local_joint.toml"),
    "cluster": template_text("cluster.toml"),
    "hand": HAND_WRITTEN,
}


def assert_only_edited_lines_changed(old: str, new: str, edits: list[Edit]) -> None:
    """Every original line outside the edited keys' own lines is still there, in order, unchanged."""
    locations = scan_keys(old)
    edited: set[int] = set()
    for e in edits:
        parts = tuple(e.path.split("."))
        for n in range(len(parts), 0, -1):
            loc = locations.get(parts[:n])
            if loc is not None and not loc.header:
                edited.add(loc.line)
                break
    old_lines, new_lines = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            touched = set(range(i1 + 1, i2 + 1))
            assert touched <= edited, f"lines {sorted(touched - edited)} changed: {old_lines[i1:i2]}"


@pytest.mark.parametrize("name", sorted(BASES))
def test_round_trip_is_identity(name: str) -> None:
    text = BASES[name]
    assert tomlkit.parse(text).as_string() == text
    assert edit_text(text, []) == text


def test_rename_in_place_keeps_value_comment_and_position() -> None:
    old = "[custom.alpamayo.prefetch]\n# size\ncapacty = 16  # samples\nnum_workers = 5\n"
    edits = [Edit("custom.alpamayo.prefetch.capacty", REMOVE), Edit("custom.alpamayo.prefetch.capacity", 16)]
    assert edit_text(old, edits) == old.replace("capacty", "capacity")


def test_rename_of_a_dotted_key_part() -> None:
    text = text_of(MOTION).replace("dataset.split", "dataset.splt")
    edits = [Edit("train.train_policy.dataset.splt", REMOVE), Edit("train.train_policy.dataset.split", "train")]
    assert edit_text(text, edits) == text_of(MOTION)


def test_rename_of_a_table_header() -> None:
    text = text_of(MOTION).replace("[custom.alpamayo.prefetch]", "[custom.alpamayo.prefech]")
    value = tomlkit.parse(text).unwrap()["custom"]["alpamayo"]["prefech"]
    edits = [Edit("custom.alpamayo.prefech", REMOVE), Edit("custom.alpamayo.prefetch", value)]
    assert edit_text(text, edits) == text_of(MOTION)


def test_changed_values_keep_their_quote_style_and_comment() -> None:
    text = "[logging]\nlogger = ['console', 'wandb']  # loggers\nname = 'x'\n"
    out = edit_text(text, [Edit("logging.logger", ["console"]), Edit("logging.name", "it's")])
    assert out == "[logging]\nlogger = ['console']  # loggers\nname = \"it's\"\n"


def test_floats_are_written_the_toml_way() -> None:
    assert edit_text("[train]\noptm_lr = 2e-6\n", [Edit("train.optm_lr", 3e-6)]) == "[train]\noptm_lr = 3e-6\n"


def test_new_table_and_top_level_key_land_in_valid_places() -> None:
    text = text_of(MOTION).replace(
        '[train.ckpt]\nenable_checkpoint = true\nsave_freq = 50\nsave_mode = "async"\nmax_keep = 10\n', ""
    )
    edits = [Edit("train.ckpt.enable_checkpoint", True), Edit("mode", "disaggregated")]
    out = edit_text(text, edits)
    assert out.index('mode = "disaggregated"') < out.index("[train]")
    assert "[train.ckpt]\nenable_checkpoint = true\n" in out
    assert_only_edited_lines_changed(text, out, edits)


def test_a_value_in_the_way_is_an_error() -> None:
    with pytest.raises(EditError, match="is a value"):
        edit_text("[train]\nepoch = 1\n", [Edit("train.epoch.x", 1)])


# --- property: the intended change and nothing else -----------------------------------------

_words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8)
_values = st.one_of(
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.text(max_size=12),
    st.lists(_words, max_size=3),
    st.dictionaries(_words, st.integers(min_value=0, max_value=9), min_size=1, max_size=2),
)


def _leaves(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for key, value in node.items():
        if isinstance(value, dict):
            out += _leaves(value, (*prefix, key))
        else:
            out.append((*prefix, key))
    return out


def _tables(node: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for key, value in node.items():
        if isinstance(value, dict):
            out += _tables(value, (*prefix, key))
    return out


@st.composite
def _edit_sets(draw: st.DrawFn) -> tuple[str, list[Edit]]:
    text = BASES[draw(st.sampled_from(sorted(BASES)))]
    data = tomlkit.parse(text).unwrap()
    leaves, tables = _leaves(data), _tables(data)
    edits: list[Edit] = []
    used: set[tuple[str, ...]] = set()
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        kind = draw(st.sampled_from(("change", "remove", "add")))
        if kind == "add":
            path = (*draw(st.sampled_from(tables)), *draw(st.lists(_words, min_size=1, max_size=2)))
            if any(path[: len(leaf)] == leaf for leaf in leaves) or any(t[: len(path)] == path for t in tables):
                continue  # would cross an existing value or replace a table
        else:
            path = draw(st.sampled_from(leaves))
        if any(path[: len(u)] == u or u[: len(path)] == path for u in used):
            continue
        used.add(path)
        edits.append(Edit(".".join(path), REMOVE if kind == "remove" else draw(_values)))
    return text, edits


@pytest.mark.slow  # hypothesis, many documents
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_edit_sets())
def test_edit_changes_exactly_the_intended_keys(case: tuple[str, list[Edit]]) -> None:
    text, edits = case
    try:
        out = edit_text(text, edits)
    except EditError as exc:  # only a value Cosmos-RL's parser would not read back as written is refused
        assert "Cosmos-RL's TOML parser" in str(exc)
        assert not all(cosmos_keeps(e.value) for e in edits if e.value is not REMOVE)
        return
    assert _pruned(tomlkit.parse(out).unwrap()) == intended(tomlkit.parse(text).unwrap(), edits)
    assert_only_edited_lines_changed(text, out, edits)
