"""The contrastive losses of `models.sentence_losses` equal their reference implementations on a fixed batch:
sentence-transformers' MultipleNegativesRankingLoss (with hard negatives), MultipleNegativesSymmetricRankingLoss
and CoSENTLoss (in torch), and the SimCSE paper's reference code (princeton-nlp/SimCSE's `cl_forward`, written
out in torch); `sample_weight` weights each anchor; a sentence encoder trains with each of them through `fit`
on raw text. (Two replicas against one device: tests/test_distribute.py.)"""

import keras
import numpy as np
import pytest

from keras_bert_impl import (
    BertBackbone,
    BertSentenceEncoder,
    BertSentenceEncoderPreprocessor,
    CoSENTLoss,
    MultipleNegativesRankingLoss,
    SimCSELoss,
)
from keras_bert_impl.config import BertConfig
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from tests.backend_utils import to_numpy
from tests.tiny_model_files import TINY, VOCAB

BATCH, DIM = 6, 8


def _embeddings(columns, seed=0):
    """A fixed batch of embeddings [BATCH, columns, DIM], not normalized."""
    return np.random.RandomState(seed).normal(size=(BATCH, columns, DIM)).astype("float32") * 3


def _torch_columns(y_pred):
    import torch

    return [torch.from_numpy(y_pred[:, k].copy()) for k in range(y_pred.shape[1])]


@pytest.mark.parametrize("columns", [2, 4])
def test_multiple_negatives_ranking_loss_equals_sentence_transformers(columns):
    import torch
    from sentence_transformers.losses import MultipleNegativesRankingLoss as Reference

    y_pred = _embeddings(columns)
    expected = Reference(None, scale=20.0).compute_loss_from_embeddings(_torch_columns(y_pred), torch.zeros(BATCH))
    loss = MultipleNegativesRankingLoss()(np.zeros(BATCH, "float32"), y_pred)
    np.testing.assert_allclose(to_numpy(loss), expected.item(), rtol=1e-5)
    scaled = MultipleNegativesRankingLoss(scale=7.0)(np.zeros(BATCH, "float32"), y_pred)
    expected = Reference(None, scale=7.0).compute_loss_from_embeddings(_torch_columns(y_pred), torch.zeros(BATCH))
    np.testing.assert_allclose(to_numpy(scaled), expected.item(), rtol=1e-5)


@pytest.mark.parametrize("columns", [2, 3])
def test_symmetric_ranking_loss_equals_sentence_transformers(columns):
    import torch
    from sentence_transformers.losses import MultipleNegativesSymmetricRankingLoss as Reference

    y_pred = _embeddings(columns, seed=1)
    expected = Reference(None).compute_loss_from_embeddings(_torch_columns(y_pred), torch.zeros(BATCH))
    loss = MultipleNegativesRankingLoss(symmetric=True)(np.zeros(BATCH, "float32"), y_pred)
    np.testing.assert_allclose(to_numpy(loss), expected.item(), rtol=1e-5)


def test_cosent_loss_equals_sentence_transformers_with_ties_in_the_scores():
    import torch
    from sentence_transformers.losses import CoSENTLoss as Reference

    y_pred = _embeddings(2, seed=2)
    scores = np.array([0.0, 2.5, 2.5, 5.0, 1.0, 4.0], "float32")
    expected = Reference(None).compute_loss_from_embeddings(_torch_columns(y_pred), torch.from_numpy(scores))
    np.testing.assert_allclose(to_numpy(CoSENTLoss()(scores, y_pred)), expected.item(), rtol=1e-5)


def test_simcse_loss_equals_the_papers_reference_formula():
    """princeton-nlp/SimCSE, models.py `cl_forward`: cos_sim = CosineSimilarity(dim=-1)(z1[:, None], z2[None]) / temp,
    loss = CrossEntropyLoss()(cos_sim, arange(batch))."""
    import torch

    y_pred = _embeddings(2, seed=3)
    z1, z2 = _torch_columns(y_pred)
    cos_sim = torch.nn.CosineSimilarity(dim=-1)(z1.unsqueeze(1), z2.unsqueeze(0)) / 0.05
    expected = torch.nn.CrossEntropyLoss()(cos_sim, torch.arange(BATCH))
    np.testing.assert_allclose(to_numpy(SimCSELoss()(np.zeros(BATCH, "float32"), y_pred)), expected.item(), rtol=1e-5)
    assert SimCSELoss.from_config(SimCSELoss(temperature=0.1).get_config()).scale == pytest.approx(10.0)


def test_the_ranking_losses_weight_each_anchor_by_its_sample_weight():
    y_pred = _embeddings(2)
    per_anchor = to_numpy(MultipleNegativesRankingLoss(reduction=None)(np.zeros(BATCH, "float32"), y_pred))
    assert per_anchor.shape == (BATCH,)
    weights = np.array([1, 0, 2, 0, 1, 1], "float32")
    weighted = MultipleNegativesRankingLoss()(np.zeros(BATCH, "float32"), y_pred, sample_weight=weights)
    np.testing.assert_allclose(to_numpy(weighted), (per_anchor * weights).sum() / BATCH, rtol=1e-5)


def test_a_loss_needs_two_columns():
    with pytest.raises(ValueError, match="needs at least 2 texts per example"):
        MultipleNegativesRankingLoss()(np.zeros(BATCH, "float32"), _embeddings(1))


@pytest.mark.parametrize("loss, x, y", [
    (MultipleNegativesRankingLoss(), (["hello world", "w1 w2", "w3 w4 w5", "world"],
                                      ["world hello", "w2 w1", "w5 w4", "hello"], ["w9", "w8", "w7", "w6"]), None),
    (CoSENTLoss(), (["hello world", "w1 w2", "w3 w4 w5", "world"], ["world hello", "w9 w8", "w5 w4", "w10"]),
     [5.0, 1.0, 3.0, 0.5]),
    (SimCSELoss(), (["hello world", "w1 w2", "w3 w4 w5", "world"],) * 2, None),
], ids=["mnrl", "cosent", "simcse"])
def test_fit_on_raw_text_lowers_each_loss(loss, x, y):
    config = BertConfig(**dict(TINY, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    model = BertSentenceEncoder(BertBackbone(config), preprocessor=BertSentenceEncoderPreprocessor(
        BertTokenizer(VOCAB), sequence_length=8))
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss)
    before = model.evaluate(x, y, batch_size=4, verbose=0)
    history = model.fit(x, y, batch_size=4, epochs=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    assert model.evaluate(x, y, batch_size=4, verbose=0) < before
