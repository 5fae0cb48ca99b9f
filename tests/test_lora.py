"""LoRA on the backbone, as keras-hub's `enable_lora` / `save_lora_weights` / `load_lora_weights`: the share of
trainable weights, training, the adapters' file (keras-hub's layout, read by keras-hub's own loader), the `.keras`
round trip, `save_pretrained` merging the adapters, and a rank above the hidden size refused."""

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertClassifier
from tests.backend_utils import to_numpy
from tests.task_harness import TINY
from tests.test_task_models import _inputs


def _count(weights):
    return sum(int(np.prod(w.shape)) for w in weights)


def _backbone_outputs(backbone, x):
    return {k: to_numpy(v) for k, v in backbone(x, training=False).items()}


def _one_step(model, x, y):
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, y, batch_size=len(y), epochs=1, verbose=0)


@pytest.mark.filterwarnings("ignore:.*initialized randomly")
def test_lora_minilm_classifier_trains_two_percent_and_its_adapters_reload_identically(minilm_path, tmp_path):
    x, y = _inputs(seq=12), np.array([0, 1, 1], "int32")
    x["token_ids"] = x["token_ids"] + 1000  # ordinary WordPiece ids of MiniLM's vocabulary
    x["token_ids"][:, 0] = 101
    model = BertClassifier.from_pretrained(minilm_path, num_classes=2)
    before = to_numpy(model(x, training=False))
    model.backbone.enable_lora(4)
    np.testing.assert_allclose(to_numpy(model(x, training=False)), before, atol=1e-6)  # B starts at 0
    share = _count(model.trainable_weights) / _count(model.weights)
    assert share <= 0.02, share
    # A and B of the 6 layers' query and value projections (their kernels and biases frozen); and the head.
    assert len(model.backbone.trainable_weights) == 6 * 2 * 2
    frozen = {w.path: to_numpy(w) for w in model.non_trainable_weights}
    _one_step(model, x, y)
    assert np.abs(to_numpy(model(x, training=False)) - before).max() > 1e-4
    assert all(np.array_equal(to_numpy(w), frozen[w.path]) for w in model.non_trainable_weights)

    path = str(tmp_path / "adapters.lora.h5")
    model.backbone.save_lora_weights(path)
    fresh = BertBackbone.from_pretrained(minilm_path)
    fresh.enable_lora(4)
    fresh.load_lora_weights(path)
    expected = _backbone_outputs(model.backbone, x)
    for name, value in _backbone_outputs(fresh, x).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)


@pytest.mark.tensorflow
def test_lora_file_has_keras_hubs_layout_and_keras_hubs_loader_reads_it(tmp_path):
    import h5py
    import keras_hub

    backbone = BertBackbone(TINY)
    plain = backbone.get_weights()
    backbone.enable_lora(2)
    for layer in backbone._layers_with_weights():
        if getattr(layer, "lora_enabled", False):
            layer.lora_kernel_b.assign(keras.random.normal(layer.lora_kernel_b.shape, seed=1))
    path = str(tmp_path / "tiny.lora.h5")
    backbone.save_lora_weights(path)
    with h5py.File(path, "r") as f:
        assert int(f["lora/vars/rank"][()]) == 2
        assert sorted(int(k) for k in f["lora"] if k != "vars") == sorted(backbone._lora_enabled_layers)
        first = f[f"lora/{backbone._lora_enabled_layers[0]}/vars"]
        assert sorted(first) == ["lora_kernel_a", "lora_kernel_b"]
        assert first["lora_kernel_a"].shape == (TINY.hidden_size, TINY.num_attention_heads, 2)
    fresh = BertBackbone(TINY)
    fresh.set_weights(plain)
    keras_hub.models.Backbone.load_lora_weights(fresh, path)  # keras-hub's own reader, on our backbone
    x = _inputs()
    expected = _backbone_outputs(backbone, x)
    for name, value in _backbone_outputs(fresh, x).items():
        np.testing.assert_array_equal(value, expected[name], err_msg=name)
    with pytest.raises(ValueError, match="rank 2"):
        other = BertBackbone(TINY)
        other.enable_lora(3)
        other.load_lora_weights(path)


def test_lora_classifier_round_trips_through_keras_file_and_save_pretrained_merges_the_adapters(tmp_path):
    x, y = _inputs(), np.array([0, 2, 1], "int32")
    model = BertClassifier(BertBackbone(TINY), num_classes=3)
    model.backbone.enable_lora(4)
    _one_step(model, x, y)
    expected = to_numpy(model(x, training=False))

    path = str(tmp_path / "lora.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.backbone.lora_rank == 4
    assert _count(restored.trainable_weights) == _count(model.trainable_weights)
    np.testing.assert_allclose(to_numpy(restored(x, training=False)), expected, atol=1e-6)

    directory = str(tmp_path / "merged")
    model.save_pretrained(directory)
    merged = BertClassifier.from_pretrained(directory, num_classes=3)
    assert merged.backbone.lora_rank is None
    np.testing.assert_allclose(to_numpy(merged(x, training=False)), expected, atol=1e-5)


def test_a_lora_rank_outside_one_to_the_hidden_size_is_refused_in_python_and_by_the_recipe(tmp_path, capsys):
    from keras_bert_impl.utils.errors import UserInputError
    from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task

    backbone = BertBackbone(TINY)
    hidden = backbone.config.hidden_size
    for rank, what in ((hidden + 1, f"more than the hidden size {hidden}"), (0, "not a positive integer")):
        with pytest.raises(UserInputError) as refused:
            backbone.enable_lora(rank)
        assert str(refused.value) == (f"rank {rank} (an int) is {what}: expected a LoRA rank from 1 to {hidden}.")
    assert len(backbone.trainable_weights) == len(backbone.weights)  # the refused calls froze nothing
    backbone.enable_lora(hidden)  # the largest rank the kernels allow

    flags = run_glue_flags(write_sst2_task(str(tmp_path / "data")), str(tmp_path / "out"), "--lora_rank=1000")
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main(flags)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "error: --lora_rank: rank 1000 (an int) is more than the hidden size 16: expected a LoRA rank from 1 to 16.")
