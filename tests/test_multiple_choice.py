"""BertMultipleChoice: logits equal transformers' BertForMultipleChoice on the real MiniLM body; HF layout
save/load; config and .keras round trips."""

import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16)


def _choices_batch(batch=2, choices=4, seq=10, seed=0):
    """[CLS] context [SEP] ending [SEP] per choice, with different padding per choice."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(1000, 20000, size=(batch, choices, seq)).astype("int32")
    lengths = rng.randint(6, seq + 1, size=(batch, choices))
    padding_mask = (np.arange(seq)[None, None] < lengths[..., None]).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    for b in range(batch):
        for c in range(choices):
            n = lengths[b, c]
            token_ids[b, c, 0], token_ids[b, c, 3], token_ids[b, c, n - 1] = 101, 102, 102
            segment_ids[b, c, 4:n] = 1
    return {"token_ids": token_ids * padding_mask, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _hf_logits(model, x):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
        ).logits.numpy()


@pytest.fixture(scope="module")
def hf_multiple_choice(minilm_path, tmp_path_factory):
    torch.manual_seed(0)
    model = transformers.BertForMultipleChoice(transformers.BertConfig.from_pretrained(minilm_path)).eval()
    model.bert.load_state_dict(transformers.BertModel.from_pretrained(minilm_path).state_dict(), strict=False)
    with torch.no_grad():
        model.classifier.bias.fill_(0.7)
    directory = tmp_path_factory.mktemp("bert_for_multiple_choice")
    model.save_pretrained(directory)
    return directory, model


def test_logits_equal_transformers_bert_for_multiple_choice(hf_multiple_choice, tmp_path):
    directory, hf_model = hf_multiple_choice
    model = BertMultipleChoice.from_pretrained(directory, num_choices=4)
    np.testing.assert_allclose(to_numpy(model.output_dense.bias), [0.7], atol=1e-7)
    x = _choices_batch()
    logits = to_numpy(model(x, training=False))
    assert logits.shape == (2, 4) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, _hf_logits(hf_model, x), atol=1e-4, rtol=0)

    model.save_pretrained(tmp_path)
    assert json.load(open(os.path.join(tmp_path, "config.json")))["architectures"] == ["BertForMultipleChoice"]
    reread = transformers.BertForMultipleChoice.from_pretrained(tmp_path).eval()
    np.testing.assert_allclose(_hf_logits(reread, x), _hf_logits(hf_model, x), atol=1e-6)


def test_a_sequence_classification_head_does_not_load_as_a_choice_scorer(tmp_path):
    from keras_bert_impl.models.classifier import BertClassifier

    BertClassifier(BertBackbone(TINY), num_classes=3).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match=r"holds a BertClassifier \(BertForSequenceClassification\), not a "
                       r"BertMultipleChoice; load it with BertClassifier.from_pretrained"):
        BertMultipleChoice.from_pretrained(tmp_path, num_choices=4)


def test_config_round_trip_and_keras_file(tmp_path):
    model = BertMultipleChoice(BertBackbone(TINY), num_choices=3)
    clone = BertMultipleChoice.from_config(model.get_config())
    assert (clone.num_choices, clone.backbone.config) == (3, TINY)
    rng = np.random.RandomState(0)
    x = {"token_ids": rng.randint(5, 50, (2, 3, 6)).astype("int32"), "segment_ids": np.zeros((2, 3, 6), "int32"),
         "padding_mask": np.ones((2, 3, 6), "int32")}
    path = os.path.join(tmp_path, "multiple_choice.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertMultipleChoice)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    # Each choice is scored on its own: permuting the choices permutes the logits.
    permuted = {k: v[:, [2, 0, 1]] for k, v in x.items()}
    np.testing.assert_allclose(to_numpy(model(permuted)), to_numpy(model(x))[:, [2, 0, 1]], atol=1e-5)
