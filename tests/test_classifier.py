"""BertClassifier: logits equal transformers' BertForSequenceClassification on the real MiniLM body; heads
load and save in Hugging Face's layout; config and .keras round trips."""

import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.config import BertConfig
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16)


def _pair_batch(batch=3, seq=11, seed=0):
    """[CLS] A [SEP] B [SEP] with padding on two rows (real MiniLM token ids)."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(1000, 20000, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[1, 8:] = 0
    padding_mask[2, 5:] = 0
    segment_ids = np.zeros((batch, seq), "int32")
    for b, n in enumerate(padding_mask.sum(1)):
        token_ids[b, 0], token_ids[b, n // 2], token_ids[b, n - 1] = 101, 102, 102
        segment_ids[b, n // 2 + 1 : n] = 1
    return {"token_ids": token_ids * padding_mask, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _hf_logits(model, x):
    with torch.no_grad():
        return model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
        ).logits.numpy()


def _hf_classifier_dir(minilm_path, directory, num_labels):
    """BertForSequenceClassification with the real MiniLM body and a non-trivial random head, saved."""
    torch.manual_seed(num_labels)
    config = transformers.BertConfig.from_pretrained(minilm_path, num_labels=num_labels)
    model = transformers.BertForSequenceClassification(config).eval()
    model.bert.load_state_dict(transformers.BertModel.from_pretrained(minilm_path).state_dict(), strict=False)
    with torch.no_grad():
        model.classifier.bias.normal_(0, 0.5)  # transformers zero-inits the bias
    model.save_pretrained(directory)
    return model


@pytest.fixture(scope="module")
def hf_three_class(minilm_path, tmp_path_factory):
    directory = tmp_path_factory.mktemp("bert_for_sequence_classification")
    return directory, _hf_classifier_dir(minilm_path, directory, num_labels=3)


def test_logits_equal_transformers_bert_for_sequence_classification(hf_three_class):
    directory, hf_model = hf_three_class
    model = BertClassifier.from_pretrained(directory, num_classes=3)
    x = _pair_batch()
    logits = to_numpy(model(x, training=False))
    assert logits.shape == (3, 3) and logits.dtype == np.float32
    np.testing.assert_allclose(logits, _hf_logits(hf_model, x), atol=1e-4, rtol=0)


def test_regression_head_equals_transformers_with_one_label(minilm_path, tmp_path):
    hf_model = _hf_classifier_dir(minilm_path, tmp_path, num_labels=1)
    model = BertClassifier.from_pretrained(tmp_path, num_classes=1)
    x = _pair_batch(seed=1)
    np.testing.assert_allclose(to_numpy(model(x)), _hf_logits(hf_model, x), atol=1e-4, rtol=0)


def test_save_pretrained_is_a_transformers_bert_for_sequence_classification(hf_three_class, tmp_path):
    directory, hf_model = hf_three_class
    BertClassifier.from_pretrained(directory, num_classes=3).save_pretrained(tmp_path, label_names=["a", "b", "c"])
    config = json.load(open(os.path.join(tmp_path, "config.json")))
    assert config["architectures"] == ["BertForSequenceClassification"] and config["id2label"]["2"] == "c"
    reread = transformers.BertForSequenceClassification.from_pretrained(tmp_path).eval()
    x = _pair_batch(seed=2)
    np.testing.assert_allclose(_hf_logits(reread, x), _hf_logits(hf_model, x), atol=1e-6)


def test_head_shape_mismatch_is_a_clear_error(hf_three_class):
    directory, _ = hf_three_class
    with pytest.raises(ValueError, match=r"weight \(3, 384\).*expects weight \(2, 384\)"):
        BertClassifier.from_pretrained(directory, num_classes=2)


def test_a_checkpoint_without_a_head_gets_a_random_one(minilm_path):
    model = BertClassifier.from_pretrained(minilm_path, num_classes=2)
    kernel = to_numpy(model.output_dense.kernel)
    assert kernel.shape == (384, 2) and 0.0 < kernel.std() < 0.05  # TruncatedNormal(0.02)


def test_config_round_trip_and_keras_file(tmp_path):
    model = BertClassifier(BertBackbone(TINY), num_classes=4, dropout=0.2)
    clone = BertClassifier.from_config(model.get_config())
    assert (clone.num_classes, clone.dropout, clone.backbone.config) == (4, 0.2, TINY)
    x = {"token_ids": np.array([[2, 7, 9, 3, 0]], "int32"), "segment_ids": np.zeros((1, 5), "int32"),
         "padding_mask": np.array([[1, 1, 1, 1, 0]], "int32")}
    path = os.path.join(tmp_path, "classifier.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, BertClassifier)
    np.testing.assert_allclose(to_numpy(loaded(x)), to_numpy(model(x)), atol=1e-6)
    with pytest.raises(ValueError, match="num_classes must be >= 1"):
        BertClassifier(BertBackbone(TINY), num_classes=0)


def test_num_classes_comes_from_the_stored_head_and_a_headless_checkpoint_needs_it(hf_three_class, minilm_path):
    directory, _ = hf_three_class
    assert BertClassifier.from_pretrained(directory).num_classes == 3
    with pytest.raises(ValueError, match="no classifier weights in the checkpoint; pass num_classes"):
        BertClassifier.from_pretrained(minilm_path)


def test_the_former_names_num_labels_and_id2label_still_work_with_a_deprecation_warning(tmp_path):
    from keras_bert_impl import BertBackbone, BertConfig, BertTokenClassifier

    with pytest.warns(DeprecationWarning, match="num_labels= is deprecated; pass num_classes="):
        tagger = BertTokenClassifier(BertBackbone(BertConfig.preset("bert_tiny")), num_labels=4)
    assert tagger.num_classes == 4 and tagger.get_config()["num_classes"] == 4 and "num_labels" not in tagger.get_config()
    with pytest.warns(DeprecationWarning, match="id2label= is deprecated; pass label_names="):
        tagger.save_pretrained(tmp_path, id2label=["O", "B", "I", "E"])
    assert json.load(open(os.path.join(tmp_path, "config.json")))["id2label"]["3"] == "E"
    with pytest.raises(TypeError, match="pass num_classes only"):
        BertTokenClassifier(tagger.backbone, num_classes=4, num_labels=4)
