"""BERT's initializer (`layers/initializers.py`): `from_pretrained` builds its backbone without drawing the
weights the checkpoint gives, and every weight it does not give (a new head, a missing pooler) gets the
value a build that draws everything gives it under the same seed."""

import json

import keras
import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers import initializers
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from tests.backend_utils import to_numpy


def _counting_draws(monkeypatch):
    """The shapes of the truncated-normal draws made from now on."""
    drawn = []
    original = keras.initializers.TruncatedNormal.__call__

    def draw(self, shape, dtype=None):
        drawn.append(tuple(shape))
        return original(self, shape, dtype=dtype)

    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__", draw)
    return drawn


def test_from_pretrained_draws_no_backbone_weight_and_loads_every_one(model_dir, tiny_backbone, monkeypatch):
    drawn = _counting_draws(monkeypatch)
    backbone = BertBackbone.from_pretrained(model_dir)
    assert drawn == []
    for loaded, saved in zip(backbone.weights, tiny_backbone.weights):
        np.testing.assert_array_equal(to_numpy(loaded), to_numpy(saved))
    BertBackbone(BertConfig.from_pretrained(model_dir))  # a build of its own draws every kernel and table
    assert sorted(drawn) == sorted(tuple(v.shape) for v in backbone.weights if v.name in ("kernel", "embeddings"))


def test_a_new_head_gets_the_draws_of_a_build_without_the_skip(model_dir):
    keras.utils.set_random_seed(11)
    built = BertClassifier(BertBackbone(BertConfig.from_pretrained(model_dir)), num_classes=3)
    keras.utils.set_random_seed(11)
    with pytest.warns(UserWarning, match="no classifier weights; initialized randomly"):
        loaded = BertClassifier.from_pretrained(model_dir, num_classes=3)
    assert np.abs(to_numpy(built.output_dense.kernel)).max() > 0
    np.testing.assert_array_equal(to_numpy(loaded.output_dense.kernel), to_numpy(built.output_dense.kernel))


def test_a_checkpoint_without_a_pooler_gives_it_the_draw_of_a_build_without_the_skip(model_dir):
    weights = load_file(str(model_dir / "model.safetensors"))
    save_file({k: v for k, v in weights.items() if not k.startswith("pooler.")}, str(model_dir / "model.safetensors"))
    keras.utils.set_random_seed(5)
    built = BertBackbone(BertConfig.from_pretrained(model_dir))
    keras.utils.set_random_seed(5)
    loaded = BertBackbone.from_pretrained(model_dir, require_pooler=False)
    kernel = to_numpy(loaded.pooler.kernel)
    assert 0 < np.abs(kernel).max() <= 2 * json.loads((model_dir / "config.json").read_text())["initializer_range"]
    np.testing.assert_array_equal(kernel, to_numpy(built.pooler.kernel))
    np.testing.assert_array_equal(to_numpy(loaded.pooler.bias), np.zeros(kernel.shape[1], "float32"))


def test_the_initializer_draws_outside_the_scope_and_round_trips_through_its_config():
    initializer = initializers.truncated_normal(0.5)
    with initializers.skip_initial_draws():
        np.testing.assert_array_equal(to_numpy(initializer((3, 4))), np.zeros((3, 4), "float32"))
        with initializers.skip_initial_draws():
            pass
        np.testing.assert_array_equal(to_numpy(initializer((2,))), np.zeros((2,), "float32"))  # still inside
    drawn = to_numpy(initializer((200,)))
    assert 0.3 < drawn.std() < 0.5 and np.abs(drawn).max() <= 1.0  # cut at two standard deviations
    restored = keras.initializers.deserialize(keras.initializers.serialize(initializer))
    assert type(restored) is initializers.BertTruncatedNormal and restored.stddev == 0.5
