"""The head-weight tables: Hugging Face names and layouts, partial or absent heads, shape errors."""

import keras
import numpy as np
import pytest

from keras_bert_impl.checkpoints.head_weights import (
    assign_head_weights,
    classifier_table,
    crf_table,
    head_weights_dict,
    masked_lm_table,
    span_table,
)
from keras_bert_impl.layers.crf import CRF
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from tests.backend_utils import to_numpy


def _dense(units, hidden=4):
    layer = keras.layers.Dense(units)
    layer.build((None, hidden))
    return layer


def test_a_dense_head_is_stored_as_a_torch_linear_and_assigned_back():
    dense = _dense(3)
    weights = head_weights_dict(classifier_table(dense))
    assert sorted(weights) == ["classifier.bias", "classifier.weight"]
    np.testing.assert_array_equal(weights["classifier.weight"], to_numpy(dense.kernel).T)  # [out, in]
    rng = np.random.RandomState(0)
    new = {"classifier.weight": rng.normal(size=(3, 4)).astype("float32"), "classifier.bias": np.arange(3.0)}
    assert assign_head_weights(classifier_table(dense), new) is True
    np.testing.assert_array_equal(to_numpy(dense.kernel), new["classifier.weight"].T)
    np.testing.assert_array_equal(to_numpy(dense.bias), [0.0, 1.0, 2.0])


def test_an_absent_head_returns_false_and_leaves_the_layer_unchanged():
    dense = _dense(2)
    before = to_numpy(dense.kernel)
    assert assign_head_weights(span_table(dense), {"classifier.weight": np.zeros((2, 4))}) is False
    np.testing.assert_array_equal(to_numpy(dense.kernel), before)


def test_a_partial_head_is_an_error_naming_the_missing_weight():
    with pytest.raises(ValueError, match=r"ckpt: has qa_outputs.weight but not qa_outputs.bias"):
        assign_head_weights(span_table(_dense(2)), {"qa_outputs.weight": np.zeros((2, 4))}, source="ckpt")


def test_a_shape_mismatch_names_the_weight_and_both_shapes_and_assigns_nothing():
    dense = _dense(2)
    before = to_numpy(dense.kernel)
    bad = {"classifier.weight": np.ones((2, 4)), "classifier.bias": np.ones((5,))}
    with pytest.raises(ValueError, match=r"classifier.bias: the checkpoint has bias \(5,\), the model expects bias \(2,\)"):
        assign_head_weights(classifier_table(dense), bad)
    np.testing.assert_array_equal(to_numpy(dense.kernel), before)


def test_masked_lm_and_crf_tables_use_the_hugging_face_names():
    head = MaskedLMHead(vocab_size=11, hidden_size=4)
    head(np.zeros((1, 3, 4), "float32"), np.zeros((1, 2), "int32"))
    crf = CRF(3)
    crf.build((None, None, 3))
    names = [name for name, *_ in masked_lm_table(head) + crf_table(crf)]
    assert names == [
        "cls.predictions.transform.dense.weight",
        "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight",
        "cls.predictions.transform.LayerNorm.bias",
        "cls.predictions.bias",
        "classifier.crf_transitions",
    ]
    stored = head_weights_dict(masked_lm_table(head))
    assert stored["cls.predictions.bias"].shape == (11,)
