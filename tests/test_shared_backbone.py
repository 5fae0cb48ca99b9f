"""A head that does not read the pooler trains without it, and leaves it trainable for the other models built
on the same backbone object; a pretrainer without a next-sentence head fits without Keras' warning about
missing gradients."""

import warnings

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertClassifier, BertPretrainer, BertSentenceEncoder, BertSpanQA, BertTokenClassifier
from tests.task_harness import TINY
from tests.test_task_models import _inputs, _pretraining_batch

# TensorFlow runs these steps eagerly: tracing them would be most of the test's time, and what is checked
# (which variables the optimizer updates, its warnings) is the same in a tf.function.
EAGER = keras.backend.backend() == "tensorflow"

TAGGERS = {
    "token_classifier": lambda backbone: BertTokenClassifier(backbone, num_classes=3),
    "span_qa": lambda backbone: BertSpanQA(backbone),
    "sentence_encoder": lambda backbone: BertSentenceEncoder(backbone),
}


def _pooler_values(backbone):
    return [np.array(keras.ops.convert_to_numpy(v)) for v in backbone.pooler.weights]


@pytest.mark.parametrize("head", sorted(TAGGERS))
def test_a_head_without_the_pooler_leaves_it_trainable_for_a_classifier_on_the_same_backbone(head):
    backbone = BertBackbone(TINY)
    tagger = TAGGERS[head](backbone)
    pooler_ids = {id(v) for v in backbone.pooler.weights}
    # This model trains without the pooler and still holds (and saves) its weights.
    assert not pooler_ids & {id(v) for v in tagger.trainable_variables}
    assert pooler_ids <= {id(v) for v in tagger.non_trainable_variables}
    assert pooler_ids <= {id(v) for v in tagger.weights}
    assert len(tagger.trainable_weights) + len(tagger.non_trainable_weights) == len(tagger.weights)
    # The backbone is unchanged: a classifier built on it afterwards trains the pooler.
    assert all(v.trainable for v in backbone.pooler.weights)
    classifier = BertClassifier(backbone, num_classes=2)
    assert pooler_ids <= {id(v) for v in classifier.trainable_variables}
    x = _inputs()
    before = _pooler_values(backbone)
    classifier.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=EAGER)
    classifier.fit(x, np.array([0, 1, 1], "int32"), epochs=1, batch_size=3, verbose=0)
    after = _pooler_values(backbone)
    assert all(not np.array_equal(b, a) for b, a in zip(before, after)), "the classifier did not train the pooler"


@pytest.mark.parametrize("objective", ["mlm", "mlm_nsp"])
def test_pretrainer_trains_the_pooler_only_with_a_next_sentence_head_and_warns_of_no_missing_gradient(objective):
    backbone = BertBackbone(TINY)
    pretrainer = BertPretrainer(backbone, objective=objective)
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-2), run_eagerly=EAGER)
    x, y = _pretraining_batch()
    if objective == "mlm":
        y = {k: v for k, v in y.items() if k != "next_sentence_labels"}
    before = _pooler_values(backbone)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pretrainer.fit(x, y, epochs=1, batch_size=3, verbose=0)
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "Gradients do not exist" in m], messages
    changed = [not np.array_equal(b, a) for b, a in zip(before, _pooler_values(backbone))]
    assert all(changed) if objective == "mlm_nsp" else not any(changed)
