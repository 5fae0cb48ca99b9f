"""Checkpoint read errors: a truncated model.safetensors, a corrupt pytorch_model.bin, garbage in a TF1
checkpoint, a config.json that is not JSON and a truncated Keras .weights.h5 each raise one line naming the
file and what is wrong (a `UserInputError`); a recipe reports it as `error: <message>` with exit status 2."""

import importlib.util
import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints import checkpoint_files
from keras_bert_impl.checkpoints.checkpoint_files import CorruptCheckpointError
from keras_bert_impl.utils.errors import CheckpointNotFoundError
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.utils.errors import UserInputError
from tests.tiny_model_files import TINY

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
def _one_line_error(error_info, path, *words):
    """The error's message starts with `path`, is one line and holds every word of `words`."""
    message = str(error_info.value)
    assert isinstance(error_info.value, UserInputError)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_truncated_safetensors_names_the_file_and_both_sizes(model_dir):
    weights = model_dir / "model.safetensors"
    full_size = os.path.getsize(weights)
    os.truncate(weights, full_size // 2)
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    message = _one_line_error(error, weights, "truncated")
    assert f"header says {checkpoint_files.format_size(full_size)}" in message
    assert f"file has {checkpoint_files.format_size(full_size // 2)}" in message


def test_garbage_inside_our_safetensors_is_refused_by_its_digest(model_dir, tiny_backbone):
    weights = model_dir / "model.safetensors"
    header = checkpoint_files.safetensors_header(str(weights))
    assert checkpoint_files.DIGEST_METADATA_KEY in header["__metadata__"]
    raw = bytearray(weights.read_bytes())
    raw[-4096:] = np.random.default_rng(0).bytes(4096)  # 4 KB of garbage in the tensors, size unchanged
    weights.write_bytes(bytes(raw))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, weights, "corrupt", "SHA-256")
    # A file without the digest (as Hugging Face writes them) still loads.
    from safetensors.numpy import save_file

    from keras_bert_impl.checkpoints.weight_tables import backbone_weights_dict

    save_file(backbone_weights_dict(tiny_backbone), str(weights), metadata={"format": "pt"})
    loaded = BertBackbone.from_pretrained(str(model_dir))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded.pooler.kernel),
                                  keras.ops.convert_to_numpy(tiny_backbone.pooler.kernel))


def test_garbage_and_empty_safetensors_name_the_file(model_dir):
    weights = model_dir / "model.safetensors"
    weights.write_bytes(np.random.default_rng(0).bytes(3000))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, weights, "not a safetensors file")
    weights.write_bytes(b"")
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, weights, "file has 0 bytes")


def test_safetensors_header_that_is_not_json_names_the_file(model_dir):
    weights = model_dir / "model.safetensors"
    weights.write_bytes((20).to_bytes(8, "little") + b"{not json at all....")
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, weights, "header is corrupt")


def test_safetensors_index_naming_a_missing_shard_names_the_index(model_dir):
    os.remove(model_dir / "model.safetensors")
    index = model_dir / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"pooler.dense.bias": "model-00001-of-00002.safetensors"}}))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, index, "model-00001-of-00002.safetensors")
    index.write_text("[1, 2")
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, index, "not a safetensors index")


def test_corrupt_and_truncated_pytorch_bin_name_the_file_without_weights_only_advice(model_dir, tiny_backbone):
    torch = pytest.importorskip("torch")
    from keras_bert_impl.checkpoints.weight_tables import backbone_weights_dict

    os.remove(model_dir / "model.safetensors")
    weights = model_dir / "pytorch_model.bin"
    weights.write_bytes(np.random.default_rng(0).bytes(4000))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    message = _one_line_error(error, weights, "truncated or corrupt PyTorch checkpoint", "4000 bytes")
    assert "weights_only" not in message
    # A whole state dict loads; the same file cut in half names the file.
    torch.save({k: torch.from_numpy(v) for k, v in backbone_weights_dict(tiny_backbone).items()}, str(weights))
    loaded = BertBackbone.from_pretrained(str(model_dir))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(loaded.pooler.bias),
                                  keras.ops.convert_to_numpy(tiny_backbone.pooler.bias))
    os.truncate(weights, os.path.getsize(weights) // 2)
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    assert "weights_only" not in _one_line_error(error, weights, "truncated or corrupt PyTorch checkpoint")


class NotATensor:
    """An object a pickle can hold and `torch.load(weights_only=True)` refuses."""


def test_pytorch_bin_holding_more_than_tensors_is_refused_by_name(model_dir):
    torch = pytest.importorskip("torch")
    os.remove(model_dir / "model.safetensors")
    weights = model_dir / "pytorch_model.bin"
    torch.save({"pooler.dense.bias": torch.zeros(16), "extra": NotATensor()}, str(weights))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    assert "weights_only" not in _one_line_error(error, weights, "objects besides tensors")


def _tf1_checkpoint(tiny_backbone, directory):
    pytest.importorskip("tensorflow")
    from keras_bert_impl.checkpoints import tf1_checkpoint
    from keras_bert_impl.checkpoints.weight_tables import backbone_weights_dict

    os.makedirs(directory)
    with open(os.path.join(directory, "bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(TINY, f)
    prefix = os.path.join(directory, "bert_model.ckpt")
    tf1_checkpoint.write_tf1_checkpoint(backbone_weights_dict(tiny_backbone), prefix)
    return prefix


@pytest.mark.tensorflow
def test_tf1_checkpoint_with_garbage_in_its_data_names_the_data_file(tiny_backbone, tmp_path):
    prefix = _tf1_checkpoint(tiny_backbone, str(tmp_path / "google"))
    loaded = BertBackbone.from_pretrained(str(tmp_path / "google"))  # intact: loads the same weights
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded.pooler.kernel),
                               keras.ops.convert_to_numpy(tiny_backbone.pooler.kernel))
    data = prefix + ".data-00000-of-00001"
    raw = bytearray(open(data, "rb").read())
    raw[64:64 + 4096] = np.random.default_rng(0).bytes(len(raw[64:64 + 4096]))  # 4 KB of garbage inside
    open(data, "wb").write(bytes(raw))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(tmp_path / "google"))
    _one_line_error(error, data, "corrupt TensorFlow checkpoint data", "Checksum does not match")


@pytest.mark.tensorflow
def test_truncated_tf1_data_and_garbage_index_name_their_files(tiny_backbone, tmp_path):
    prefix = _tf1_checkpoint(tiny_backbone, str(tmp_path / "google"))
    data = prefix + ".data-00000-of-00001"
    os.truncate(data, os.path.getsize(data) // 2)
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(str(tmp_path / "google"))
    _one_line_error(error, data, "truncated or corrupt")
    with open(prefix + ".index", "wb") as f:
        f.write(np.random.default_rng(0).bytes(300))
    with pytest.raises(CorruptCheckpointError) as error:
        BertBackbone.from_pretrained(prefix)
    _one_line_error(error, prefix + ".index", "truncated or not a checkpoint index")


def test_config_json_that_is_not_json_names_the_file_and_line(model_dir):
    config = model_dir / "config.json"
    config.write_text('{"vocab_size": 24,\n  hidden_size: 16}')
    with pytest.raises(UserInputError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, config, "not valid JSON", "line 2")
    config.write_text("")
    with pytest.raises(UserInputError) as error:
        BertBackbone.from_pretrained(str(model_dir))
    _one_line_error(error, config, "not valid JSON")


def test_missing_checkpoint_is_a_file_not_found_and_a_user_error(tmp_path, model_dir):
    with pytest.raises(CheckpointNotFoundError) as error:
        BertBackbone.from_pretrained(str(tmp_path / "nowhere"))
    assert isinstance(error.value, FileNotFoundError) and isinstance(error.value, UserInputError)
    os.remove(model_dir / "config.json")
    with pytest.raises(FileNotFoundError, match="no config.json or bert_config.json"):
        BertBackbone.from_pretrained(str(model_dir))


def test_truncated_keras_weights_file_names_the_file(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    path = str(tmp_path / "ckpt.weights.h5")
    model.save_weights(path)
    expected = keras.ops.convert_to_numpy(model.layers[0].kernel)
    checkpoint_files.load_keras_weights(model, path)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(model.layers[0].kernel), expected)
    size = os.path.getsize(path)
    os.truncate(path, size // 2)
    with pytest.raises(CorruptCheckpointError) as error:
        checkpoint_files.load_keras_weights(model, path)
    _one_line_error(error, path, "truncated or not a Keras weights file", f"{size // 2} bytes")
    with open(path, "wb") as f:
        f.write(np.random.default_rng(0).bytes(3000))
    with pytest.raises(CorruptCheckpointError) as error:
        checkpoint_files.load_keras_weights(model, path)
    _one_line_error(error, path, "file signature not found")


def test_recipe_reports_a_truncated_checkpoint_as_one_line_and_exit_2(model_dir, tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("extract_features_recipe",
                                                  os.path.join(REPO, "recipes", "extract_features.py"))
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    weights = model_dir / "model.safetensors"
    os.truncate(weights, 100)
    input_file = tmp_path / "input.txt"
    input_file.write_text("hello world\n", encoding="utf-8")
    output_file = tmp_path / "features.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        recipe.main([f"--input_file={input_file}", f"--output_file={output_file}",
                     f"--init_checkpoint={model_dir}", "--layers=-1"])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err.strip().splitlines()
    assert len(stderr) == 1 and stderr[0].startswith(f"error: {weights}: truncated"), stderr
    assert not output_file.exists()
