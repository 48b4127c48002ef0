"""Loading the recipe TOML: defaults of Cosmos-RL 747d1bd, unknown keys, errors with file/path/line."""

from __future__ import annotations

from pathlib import Path

import pytest
from config_helpers import JOINT, MOTION, findings, load_text, text_of, variant

from a1x_diagnostics.config import ConfigError, load_config


def test_shipped_shape_loads_with_the_files_values_and_747_defaults() -> None:
    cfg = load_config(MOTION)
    assert cfg.get("train.train_batch_per_replica") == 48
    assert cfg.get("train.train_policy.dataset.split") == "train"  # dotted key inside a table
    assert cfg.get("custom.alpamayo.prefetch.capacity") == 16
    # not in the file: 747d1bd defaults
    assert cfg.get("rollout.max_response_length") == 2048
    assert cfg.get("rollout.enforce_eager") is True
    assert cfg.get("train.ckpt.export_safetensors") is True
    assert not cfg.is_set("rollout.max_response_length")
    assert cfg.is_set("train.train_policy.dataset.split")


def test_schema_defaults_that_bite_when_keys_are_missing() -> None:
    cfg = load_text("[train]\noutput_dir = 'x'\n[train.train_policy]\nkl_beta = 0.0\n")
    assert cfg.get("policy.parallelism.tp_size") == 2  # schema default, launcher assumes 1
    assert cfg.get("train.compile") is True
    assert cfg.get("train.train_policy.mini_batch") == 2
    assert cfg.get("train.ckpt.enable_checkpoint") is False
    assert cfg.get("logging.logger") == []
    assert cfg.get("custom.alpamayo.prefetch.capacity") == 0  # missing = prefetch off
    assert cfg.get("custom.alpamayo.prefetch.log_level") == "debug"


def test_747_heuristic_overrides_an_explicit_grpo_type() -> None:
    cfg = load_text("[train.train_policy]\ntype = 'grpo'\nmini_batch = 1\n")
    assert cfg.get("train.train_policy.type") == "sft"
    assert cfg.data["train"]["train_policy"]["type"] == "grpo"  # the file's data is untouched


def test_shipped_ignored_keys_are_unknown_but_marked_harmless() -> None:
    cfg = load_config(JOINT)
    assert {u.path for u in cfg.unknown_keys} == {"train.validation_step", "train.validation_batch_per_replica"}
    assert all(u.note and "harmless" in u.note for u in cfg.unknown_keys)


def test_misspelled_prefetch_key_gets_a_suggestion_and_its_line() -> None:
    text = variant(MOTION, ready=False).replace("capacity = 16", "capacty = 16")
    cfg = load_text(text)
    (unknown,) = [u for u in cfg.unknown_keys if "prefetch" in u.path]
    assert unknown.path == "custom.alpamayo.prefetch.capacty"
    assert unknown.suggestion == "custom.alpamayo.prefetch.capacity"
    assert unknown.message == "[custom.alpamayo.prefetch] capacty: unknown key, did you mean capacity?"
    assert text.split("\n")[unknown.line - 1] == "capacty = 16"
    assert cfg.get("custom.alpamayo.prefetch.capacity") == 0  # what the recipe will use


def test_fields_of_newer_cosmos_are_unknown_at_747_with_a_note() -> None:
    cfg = load_text("[rollout]\nprefetch_rollout = true\n[train.train_policy]\nkl_beta = 0.0\nmax_inflight_steps = 2\n")
    notes = {u.path: u.note for u in cfg.unknown_keys}
    assert set(notes) == {"rollout.prefetch_rollout", "train.train_policy.max_inflight_steps"}
    assert all(n and "747d1bd" in n for n in notes.values())


def test_top_level_key_after_a_table_is_reported_as_misplaced() -> None:
    cfg = load_text("[train]\noutput_dir = 'x'\nmode = 'colocated'\n")
    (unknown,) = cfg.unknown_keys
    assert unknown.path == "train.mode" and unknown.note and "above the first table" in unknown.note
    assert cfg.get("mode") == "disaggregated"


def test_unknown_table_is_one_unknown_key() -> None:
    cfg = load_text("[rollout.bogus]\nx = 1\ny = 2\n")
    assert [u.path for u in cfg.unknown_keys] == ["rollout.bogus"]


def test_custom_tables_other_than_alpamayo_are_the_entry_scripts_not_cosmos_rls() -> None:
    (unknown,) = load_text("[custom.mine]\nanything = 1\n").unknown_keys
    assert unknown.note == "no entry script of the recipe reads [custom.mine] (only [custom.alpamayo]); your own may"
    assert "unknown_toml_key" not in findings("[custom.mine]\nanything = 1\n")  # a note of lint, no warning


def test_locate_key_inline_table_and_missing_key() -> None:
    text = "[rollout]\nn_generation = 12\nsampling_config = { temperature = 0.6 }\n"
    cfg = load_text(text, "r.toml")
    assert cfg.locate("rollout.n_generation").line == 2
    inline = cfg.locate("rollout.sampling_config.temperature")
    assert inline.line == 3 and inline.text.startswith("sampling_config")
    header = cfg.locate("rollout.batch_size")
    assert header.line == 1 and header.text == "[rollout]"
    assert cfg.locate("policy.model_name_or_path") is None


def test_get_unknown_path_raises_key_error() -> None:
    with pytest.raises(KeyError):
        load_config(MOTION).get("rollout.no_such_key")


def test_syntax_error_names_file_table_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text("[train]\nepoch = 15\noutput_dir = /x\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: [train] (line 3): Cosmos-RL's TOML parser (toml 0.10.2) refuses it: ")
    assert "TOML 1.0: Unexpected character: '/' (col 13)" in message  # tomlkit's reason too
    assert info.value.finding_id == "toml_rejected"
    assert "\n" not in message


def test_wrong_type_names_toml_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text_of(MOTION).replace("train_batch_per_replica = 48", 'train_batch_per_replica = "many"'))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert (err.toml_path, err.line) == ("train.train_batch_per_replica", 25)
    assert str(err).startswith(f"{path}: train.train_batch_per_replica (line 25): ")
    assert "'many'" in str(err)


def test_wrong_type_inside_the_policy_union_has_no_member_tag() -> None:
    with pytest.raises(ConfigError) as info:
        load_text("[train.train_policy]\nkl_beta = 0.0\nmini_batch = [1]\n")
    assert info.value.toml_path == "train.train_policy.mini_batch"
    assert info.value.line == 3


def test_duplicate_key_is_a_config_error_with_line() -> None:
    with pytest.raises(ConfigError) as info:
        load_text("[train]\nepoch = 1\nepoch = 2\n")
    assert info.value.line == 3 and "Duplicate keys!" in str(info.value)
    assert 'Key "epoch" already exists' in str(info.value)


def test_unreadable_file_is_flagged_as_such(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "missing.toml")
    assert info.value.unreadable
    binary = tmp_path / "bin.toml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError) as info:
        load_config(binary)
    assert info.value.unreadable and "UTF-8" in str(info.value)


def test_crlf_file_loads_and_evidence_has_no_carriage_return(tmp_path: Path) -> None:
    path = tmp_path / "crlf.toml"
    path.write_bytes(text_of(MOTION).replace("\n", "\r\n").encode())
    cfg = load_config(path)
    evidence = cfg.locate("train.epoch")
    assert evidence.text == "epoch = 15" and evidence.line == 9
