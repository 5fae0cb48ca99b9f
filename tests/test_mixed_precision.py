"""Mixed precision (`--mixed_precision bfloat16`): training under the mixed_bfloat16 policy follows the
float32 loss curve, on every backend (bfloat16 runs on CPU under TensorFlow, JAX and PyTorch).

Stated tolerance: at every one of the 12 steps, |loss_bf16 - loss_fp32| <= 5% of loss_fp32 + 0.01. bfloat16
keeps 8 bits of mantissa (a relative rounding of 2^-8 = 0.4% per op) while the weights, the optimizer,
LayerNorm, softmax and the losses stay float32; over 12 steps of a fast-falling loss the two runs drift
apart by up to a few percent (most under TensorFlow, whose oneDNN kernels really compute in bfloat16), and
the absolute 0.01 covers a loss near zero. Both curves must also descend, so the comparison is not between
two flat lines.
"""

import keras
import numpy as np
import pytest

from keras_bert_impl.training import distribute
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from keras_bert_impl.training.optimization import create_optimizer
from keras_bert_impl.models.pretrainer import BertPretrainer
from tests.backend_utils import to_numpy

CONFIG = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                    max_position_embeddings=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
STEPS, BATCH, SEQ, PREDICTIONS = 12, 16, 24, 4
RELATIVE_TOLERANCE = 0.05
ABSOLUTE_TOLERANCE = 0.01
LEARNING_RATE = 3e-3


@pytest.fixture
def restore_float32():
    yield
    distribute.set_mixed_precision("float32")


def _inputs(rng):
    lengths = rng.randint(8, SEQ + 1, size=(BATCH, 1))
    mask = (np.arange(SEQ)[None] < lengths).astype("int32")
    return {"token_ids": (rng.randint(1, CONFIG.vocab_size, size=(BATCH, SEQ)) * mask).astype("int32"),
            "segment_ids": (np.arange(SEQ)[None] >= lengths // 2).astype("int32") * mask, "padding_mask": mask}


def _classifier_batches():
    rng = np.random.RandomState(0)
    batches = []
    x = _inputs(rng)
    batches.append((x, (x["token_ids"][:, 1] % 3).astype("int32")))  # learnable: the label is in the input
    return batches * STEPS  # one batch seen again and again: a loss that falls fast and smoothly


def _pretrainer_batches():
    rng = np.random.RandomState(1)
    batches = []
    for _ in range(2):
        x = _inputs(rng)
        positions = np.sort(rng.randint(1, 8, size=(BATCH, PREDICTIONS)), axis=1).astype("int32")
        y = {"masked_lm_ids": np.take_along_axis(x["token_ids"], positions, axis=1).astype("int32"),
             "masked_lm_weights": np.ones((BATCH, PREDICTIONS), "float32"),
             "next_sentence_labels": (x["token_ids"][:, 1] % 2).astype("int32")}
        batches.append((dict(x, masked_lm_positions=positions), y))
    return batches * (STEPS // 2)


def _train(policy, build, batches, **compile_kwargs):
    distribute.set_mixed_precision(policy)
    keras.utils.set_random_seed(7)
    model = build()
    model.compile(optimizer=create_optimizer(LEARNING_RATE, STEPS, 2), **compile_kwargs)
    losses = []
    for x, y in batches:
        logs = model.train_on_batch(x, y, return_dict=True)
        losses.append(float(logs["loss"]))
    return model, np.array(losses)


def _assert_curves_match(fp32, bf16):
    print("float32:       ", np.round(fp32, 4))
    print("mixed_bfloat16:", np.round(bf16, 4))
    assert fp32[-1] < fp32[0] * 0.95 and bf16[-1] < bf16[0] * 0.95, "the losses must descend"
    print("max |difference| / tolerance:", np.max(np.abs(bf16 - fp32) / (RELATIVE_TOLERANCE * fp32 + ABSOLUTE_TOLERANCE)))
    np.testing.assert_array_less(np.abs(bf16 - fp32), RELATIVE_TOLERANCE * fp32 + ABSOLUTE_TOLERANCE)


def test_classifier_trained_in_mixed_bfloat16_follows_the_float32_loss(restore_float32):
    def build():
        return BertClassifier(BertBackbone(CONFIG), num_classes=3, dropout=0.0)

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    _, fp32 = _train("float32", build, _classifier_batches(), loss=loss)
    model, bf16 = _train("bfloat16", build, _classifier_batches(), loss=loss)
    _assert_curves_match(fp32, bf16)
    # It really ran in bfloat16: the encoder's activations are bfloat16, while the variables (which the
    # optimizer updates) and the logits given to the loss are float32.
    backbone = model.backbone
    x = _classifier_batches()[0][0]
    assert keras.backend.standardize_dtype(backbone(x)["sequence_output"].dtype) == "bfloat16"
    assert {keras.backend.standardize_dtype(w.dtype) for w in model.weights} == {"float32"}
    assert keras.backend.standardize_dtype(model(x).dtype) == "float32"


def test_pretrainer_trained_in_mixed_bfloat16_follows_the_float32_loss(restore_float32):
    def build():
        return BertPretrainer(BertBackbone(CONFIG))

    _, fp32 = _train("float32", build, _pretrainer_batches())
    model, bf16 = _train("bfloat16", build, _pretrainer_batches())
    _assert_curves_match(fp32, bf16)
    outputs = model(_pretrainer_batches()[0][0])
    assert all(np.isfinite(to_numpy(v)).all() for v in keras.tree.flatten(outputs))
