"""Precision that is saved: a dtype policy given to a backbone or task model, and `quantize("int8")`, survive
`get_config`, `.keras` files and `save_pretrained`/`from_pretrained`, on every backend.

Stated tolerance (int8 against float32): Keras' int8 Dense/EinsumDense quantize each kernel per output
channel and each input row per call to 8 bits (a relative rounding of about 1/254 per value), and the
word/segment embeddings per row. Through the 2 layers of `bert_tiny` the outputs move by at most 3% of
their largest magnitude (measured with the seeded weights: 0.5% to 2.0% across outputs and backends,
2.0% for the pretrainer's small next-sentence logits); the bound is the float32 output scale
times 0.03. Reloads, from `.keras` or a Hugging Face directory, are exact (the same variables in the same
dtype): compared with `assert_array_equal`.
"""

import dataclasses
import json
import os
import warnings

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints.model_directory import DTYPE_POLICY_KEY
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.pretrainer import BertPretrainer
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from tests.backend_utils import to_numpy

# bert_tiny (2 layers, H=128) with a 1024-token vocabulary: the word embedding dominates the time of
# quantizing and saving, and its size changes nothing that is checked here.
CONFIG = dataclasses.replace(BertConfig.preset("bert_tiny"), vocab_size=1024)
INT8_RELATIVE_TOLERANCE = 0.03


def _inputs(batch=2, seq=12):
    rng = np.random.RandomState(0)
    padding_mask = (np.arange(seq)[None] < np.array([[seq], [seq - 4]])[:batch]).astype("int32")
    return {
        "token_ids": (rng.randint(1, CONFIG.vocab_size, size=(batch, seq)) * padding_mask).astype("int32"),
        "segment_ids": (np.arange(seq)[None] >= seq // 2).astype("int32") * padding_mask,
        "padding_mask": padding_mask,
    }


def _run(model, x):
    return to_numpy(model.predict_on_batch(x))


def _policy_name(serialized):
    return keras.dtype_policies.deserialize(serialized).name


def test_mixed_bfloat16_backbone_and_classifier_keep_their_policy_through_config_keras_file_and_hf_directory(
    tmp_path,
):
    keras.utils.set_random_seed(0)
    x = _inputs()
    backbone = BertBackbone(CONFIG, dtype="mixed_bfloat16")
    model = BertClassifier(backbone, num_classes=3)
    logits = _run(model, x)
    pooled = to_numpy(backbone.predict_on_batch(x)["pooled_output"])
    assert (backbone.dtype_policy.name, model.dtype_policy.name, model.output_dense.compute_dtype) == (
        "mixed_bfloat16", "mixed_bfloat16", "bfloat16")
    assert _policy_name(backbone.get_config()["dtype"]) == "mixed_bfloat16"
    assert _policy_name(model.get_config()["dtype"]) == "mixed_bfloat16"
    assert _policy_name(model.get_config()["backbone"]["config"]["dtype"]) == "mixed_bfloat16"

    model.save(str(tmp_path / "classifier.keras"))
    backbone.save(str(tmp_path / "backbone.keras"))
    reloaded = keras.saving.load_model(str(tmp_path / "classifier.keras"))
    reloaded_backbone = keras.saving.load_model(str(tmp_path / "backbone.keras"))
    assert reloaded.dtype_policy.name == reloaded_backbone.dtype_policy.name == "mixed_bfloat16"
    assert reloaded_backbone.pooler.compute_dtype == reloaded.output_dense.compute_dtype == "bfloat16"
    np.testing.assert_array_equal(_run(reloaded, x), logits)
    np.testing.assert_array_equal(to_numpy(reloaded_backbone.predict_on_batch(x)["pooled_output"]), pooled)

    model.save_pretrained(str(tmp_path / "hf"))
    with open(os.path.join(tmp_path, "hf", "config.json")) as f:
        assert json.load(f)[DTYPE_POLICY_KEY] == "mixed_bfloat16"
    from_hf = BertClassifier.from_pretrained(str(tmp_path / "hf"), num_classes=3)
    assert from_hf.dtype_policy.name == from_hf.backbone.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_array_equal(_run(from_hf, x), logits)


def _projection_paths(num_layers):
    paths = {"pooler_dense", "embeddings/word_embeddings", "embeddings/token_type_embeddings"}
    for i in range(num_layers):
        for name in ("attention/query", "attention/key", "attention/value", "attention/attention_output",
                     "intermediate_dense", "output_dense"):
            paths.add(f"transformer_layer_{i}/{name}")
    return paths


def _int8_layers(model):
    return {layer.path: layer for layer in model._flatten_layers(include_self=False) if layer.quantization_mode}


def _assert_int8_quantized(model, head_paths):
    layers = _int8_layers(model)
    assert set(layers) == _projection_paths(CONFIG.num_hidden_layers) | head_paths
    for path, layer in layers.items():
        assert layer.quantization_mode == "int8", path
        stored = layer._embeddings if isinstance(layer, keras.layers.Embedding) else layer._kernel
        assert keras.backend.standardize_dtype(stored.dtype) == "int8", path
    position = model.backbone.embeddings.position_embeddings
    assert position.quantization_mode is None
    assert keras.backend.standardize_dtype(position.embeddings.dtype) == "float32"


def _outputs(model, x):
    """Every output of `model` on `x`, as numpy arrays in a fixed order."""
    return [to_numpy(y) for y in keras.tree.flatten(model.predict_on_batch(x))]


def test_int8_task_models_quantize_every_projection_stay_close_and_reload_exactly(tmp_path,
                                                                                   no_collection_per_deleted_kernel):
    """The classifier, the token classifier and the pretrainer (whose masked-LM output is the de-quantized
    word-embedding matrix)."""
    keras.utils.set_random_seed(0)
    x = _inputs()
    pretrainer_x = dict(x, masked_lm_positions=np.array([[1, 2, 3], [4, 5, 0]], "int32"))
    for name, model, head_paths, inputs in (
        ("classifier", BertClassifier(BertBackbone(CONFIG), num_classes=3), {"classifier"}, x),
        ("tagger", BertTokenClassifier(BertBackbone(CONFIG), num_labels=5), {"classifier"}, x),
        ("pretrainer", BertPretrainer(BertBackbone(CONFIG)), {"masked_lm_head/transform_dense", "next_sentence_head"},
         pretrainer_x),
    ):
        float32 = _outputs(model, inputs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.quantize("int8")
        # Keras warns for each layer with nothing to quantize (LayerNormalization, dropout, inputs); ours do not.
        assert not [str(w.message) for w in caught if "quantize" in str(w.message)], name
        _assert_int8_quantized(model, head_paths)
        int8 = _outputs(model, inputs)
        for a, b in zip(float32, int8, strict=True):
            scale = np.abs(a).max()
            print(name, a.shape, "max |int8 - fp32| / max |fp32| =", np.abs(b - a).max() / scale)
            assert 0 < np.abs(b - a).max() <= INT8_RELATIVE_TOLERANCE * scale, (name, scale)

        path = str(tmp_path / f"{name}.keras")
        model.save(path)
        reloaded = keras.saving.load_model(path)
        _assert_int8_quantized(reloaded, head_paths)
        for a, b in zip(_outputs(reloaded, inputs), int8, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)
        # A Hugging Face directory holds float weights: refused, and nothing is written.
        with pytest.raises(ValueError, match="quantized"):
            reloaded.save_pretrained(str(tmp_path / name))
        assert not os.path.exists(tmp_path / name)


def test_quantizing_a_backbone_warns_about_no_layer_it_leaves_as_it_is(no_collection_per_deleted_kernel):
    backbone = BertBackbone(CONFIG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        backbone.quantize("int8")
    # Keras' quantize warns "Layer LayerNormalization does not have a `quantize` method implemented" (and for
    # dropout and the inputs); those layers stay float32 by design.
    assert not [str(w.message) for w in caught if "quantize" in str(w.message)]
    assert set(_int8_layers(backbone)) == _projection_paths(CONFIG.num_hidden_layers)
