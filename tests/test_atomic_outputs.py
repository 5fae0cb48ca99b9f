"""Nothing torn: the files the library and the recipes write appear whole under their final names or not at
all. Each test makes a write fail half-way (a record source raising, a full disk, a rename that never
happens) and checks that no partial file is left under the final name and no temporary file is left over;
a bad flag or input stops a recipe with one line and exit status 2 before any output is opened; an export never
writes over the model directory it reads."""

import errno
import json
import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints import model_directory, weight_tables
from keras_bert_impl.utils.errors import CheckpointNotFoundError
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.tasks import feature_extraction
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_recipe
from tests.tiny_model_files import TINY

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _leftovers(directory):
    """Temporary files of an interrupted atomic write under `directory`."""
    return [name for name in os.listdir(directory) if name.startswith(".tmp-")]


def _records(count, fail_after=None, error=None):
    for i in range(count):
        if fail_after is not None and i == fail_after:
            raise error
        yield {"linex_index": i, "features": []}


# ------------------------------------------------------------------------------------------ features
def test_features_failing_half_way_leave_no_output_and_keep_an_older_one_intact(tmp_path):
    output = tmp_path / "features.jsonl"
    with pytest.raises(RuntimeError, match="record 2"):
        feature_extraction.write_features(str(output), _records(4, fail_after=2, error=RuntimeError("record 2")))
    assert not output.exists() and _leftovers(tmp_path) == []
    assert feature_extraction.write_features(str(output), _records(3)) == 3
    with pytest.raises(RuntimeError):
        feature_extraction.write_features(str(output), _records(4, fail_after=1, error=RuntimeError("record 1")))
    assert [json.loads(line)["linex_index"] for line in output.read_text().splitlines()] == [0, 1, 2]
    assert _leftovers(tmp_path) == []


def test_features_on_a_full_disk_name_the_file_and_leave_nothing(tmp_path):
    output = tmp_path / "features.jsonl"
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    with pytest.raises(UserInputError) as error:
        feature_extraction.write_features(str(output), _records(4, fail_after=2, error=full))
    assert str(error.value) == f"{output}: cannot write the features: {os.strerror(errno.ENOSPC)}."
    assert not output.exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("flag, message", [
    ("--layers=-1,x", "error: --layers: expected comma-separated integers"),
    ("--layers=3", "error: --layers: layer index 3 out of range for a model with 1 encoder layers"),
    ("--max_seq_length=2", "error: --max_seq_length: expected at least 3"),
    ("--max_seq_length=17", "error: --max_seq_length: 17 exceeds the model's max_position_embeddings (16)"),
])
def test_extract_features_bad_flag_exits_2_before_any_output(model_dir, tmp_path, capsys, flag, message):
    input_file = tmp_path / "input.txt"
    input_file.write_text("hello world\nhello ||| world\n", encoding="utf-8")
    output = tmp_path / "out" / "features.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        load_recipe("extract_features").main([f"--input_file={input_file}", f"--output_file={output}",
                                          f"--init_checkpoint={model_dir}", "--max_seq_length=16", flag])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith(message), stderr
    assert not output.exists()


def test_extract_features_non_utf8_input_names_file_and_line(model_dir, tmp_path, capsys):
    input_file = tmp_path / "input.txt"
    input_file.write_bytes(b"hello world\nhello \xff world\n")
    output = tmp_path / "features.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        load_recipe("extract_features").main([f"--input_file={input_file}", f"--output_file={output}",
                                          f"--init_checkpoint={model_dir}", "--layers=-1"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().startswith(f"error: {input_file}:2: not valid UTF-8")
    assert not output.exists()


def test_extract_features_writes_every_line_when_nothing_fails(model_dir, tmp_path):
    input_file = tmp_path / "input.txt"
    input_file.write_text("hello world\nhello ||| world\n", encoding="utf-8")
    output = tmp_path / "features.jsonl"
    count = load_recipe("extract_features").main([f"--input_file={input_file}", f"--output_file={output}",
                                              f"--init_checkpoint={model_dir}", "--layers=-1,0", "--batch_size=1",
                                              "--max_seq_length=16"])
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert count == 2 and [r["linex_index"] for r in records] == [0, 1]
    assert [f["token"] for f in records[1]["features"]] == ["[CLS]", "hello", "[SEP]", "world", "[SEP]"]
    assert [layer["index"] for layer in records[0]["features"][0]["layers"]] == [-1, 0]
    assert len(records[0]["features"][0]["layers"][0]["values"]) == TINY["hidden_size"]
    assert _leftovers(tmp_path) == []


# ----------------------------------------------------------------------------------- model directories
def test_kill_after_weights_land_leaves_no_config_json(tiny_backbone, tmp_path, monkeypatch):
    directory = tmp_path / "final"
    tiny_backbone.save_pretrained(str(directory))  # an older, complete save
    old_config = (directory / "config.json").read_text()

    def killed(path, value):
        raise KeyboardInterrupt("killed right after model.safetensors landed")

    monkeypatch.setattr(file_io, "write_json", killed)
    with pytest.raises(KeyboardInterrupt):
        tiny_backbone.save_pretrained(str(directory))
    assert os.path.getsize(directory / "model.safetensors") > 0
    assert not (directory / "config.json").exists(), "an older config.json beside newer weights looks complete"
    assert _leftovers(directory) == []
    with pytest.raises(CheckpointNotFoundError, match="no config.json"):
        BertBackbone.from_pretrained(str(directory))
    monkeypatch.undo()
    tiny_backbone.save_pretrained(str(directory))
    assert json.loads((directory / "config.json").read_text()) == json.loads(old_config)


def test_safetensors_write_failing_half_way_leaves_nothing_under_the_final_name(tiny_backbone, tmp_path,
                                                                                 monkeypatch):
    import safetensors.numpy

    def half_then_full_disk(weights, path, metadata=None):
        with open(path, "wb") as f:
            f.write(b"\0" * 100)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(safetensors.numpy, "save_file", half_then_full_disk)
    directory = tmp_path / "final"
    with pytest.raises(UserInputError) as error:
        tiny_backbone.save_pretrained(str(directory))
    assert str(error.value) == (f"{directory / 'model.safetensors'}: cannot write the weights: [Errno {errno.ENOSPC}] "
                                f"{os.strerror(errno.ENOSPC)}")
    assert os.listdir(directory) == []


@pytest.mark.tensorflow
def test_tf1_checkpoint_write_interrupted_before_its_index_leaves_no_checkpoint(tiny_backbone, tmp_path,
                                                                                 monkeypatch):
    pytest.importorskip("tensorflow")
    from keras_bert_impl.checkpoints import tf1_checkpoint

    weights = weight_tables.backbone_weights_dict(tiny_backbone)
    prefix = str(tmp_path / "bert_model.ckpt")
    real_replace = os.replace

    def replace_except_index(source, target):
        if target.endswith(".index"):
            raise KeyboardInterrupt("killed before the index was renamed")
        real_replace(source, target)

    monkeypatch.setattr(tf1_checkpoint.os, "replace", replace_except_index)
    with pytest.raises(KeyboardInterrupt):
        tf1_checkpoint.write_tf1_checkpoint(weights, prefix)
    assert model_directory.find_tf1_checkpoint(str(tmp_path)) is None
    assert _leftovers(tmp_path) == []
    monkeypatch.undo()
    tf1_checkpoint.write_tf1_checkpoint(weights, prefix)
    assert sorted(os.listdir(tmp_path)) == ["bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index"]
    read = tf1_checkpoint.read_tf1_checkpoint(prefix)
    np.testing.assert_array_equal(read["pooler.dense.weight"], weights["pooler.dense.weight"])


# ---------------------------------------------------------------------------------------- vocabularies
@pytest.mark.tensorflow
def test_vocab_write_failing_half_way_leaves_no_vocab(tmp_path):
    from keras_bert_impl.tokenizers import tf_vocab_learning

    output = tmp_path / "vocab.txt"

    def tokens():
        yield from ["[PAD]", "[UNK]"]
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with pytest.raises(UserInputError) as error:
        tf_vocab_learning.write_vocab(tokens(), str(output))
    assert str(error.value).startswith(f"{output}: cannot write the vocabulary")
    assert not output.exists() and _leftovers(tmp_path) == []
    tf_vocab_learning.write_vocab(["[PAD]", "a"], str(output))
    assert output.read_text(encoding="utf-8") == "[PAD]\na\n"


@pytest.mark.tensorflow
def test_learn_vocab_without_input_exits_2_and_writes_nothing(tmp_path, capsys):
    output = tmp_path / "vocab.txt"
    with pytest.raises(SystemExit) as exit_info:
        load_recipe("learn_vocab").main([f"--input_files={tmp_path / 'none-*.txt'}", f"--output_file={output}",
                                     "--quiet"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: No input file matches {str(tmp_path / 'none-*.txt')!r}."
    assert not output.exists()


@pytest.mark.tensorflow
def test_export_recipe_refuses_a_missing_model_dir_with_exit_2(tmp_path, capsys, monkeypatch):
    # The recipe sets KERAS_BACKEND=tensorflow when loaded; monkeypatch restores the environment after.
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "tensorflow"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    export_dir = tmp_path / "exported"
    with pytest.raises(SystemExit) as exit_info:
        load_recipe("export_savedmodel").main([f"--model_dir={tmp_path / 'missing'}", f"--export_dir={export_dir}"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: --model_dir: no directory at {tmp_path / 'missing'}"
    assert not export_dir.exists()


@pytest.mark.tensorflow
@pytest.mark.parametrize("export_under, overwrite", [(".", False), (".", True), ("model/saved", True), ("", True)])
def test_export_refuses_its_own_model_dir_and_nested_folders_and_keeps_the_model(model_dir, tmp_path, capsys,
                                                                                  monkeypatch, export_under, overwrite):
    monkeypatch.setenv("KERAS_BACKEND", os.environ.get("KERAS_BACKEND", "tensorflow"))
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", os.environ.get("TF_CPP_MIN_LOG_LEVEL", "3"))
    export_dir = {".": model_dir, "model/saved": model_dir / "saved", "": tmp_path}[export_under]
    before = sorted(os.listdir(model_dir))
    with pytest.raises(SystemExit) as exit_info:
        load_recipe("export_savedmodel").main([f"--model_dir={model_dir}", f"--export_dir={export_dir}",
                                               *["--overwrite"] * overwrite])
    assert exit_info.value.code == 2
    where = {".": "is the --model_dir itself", "model/saved": f"lies inside --model_dir {model_dir}",
             "": f"holds --model_dir {model_dir}"}[export_under]
    assert capsys.readouterr().err.strip() == (f"error: --export_dir {export_dir} {where}: the export would write "
                                               "over the model it reads; choose another --export_dir")
    assert sorted(os.listdir(model_dir)) == before
