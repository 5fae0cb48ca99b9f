"""keras-hub BERT presets in and out (checkpoints/keras_hub_preset.py), and tokenizer.json-only directories.

Each preset is made by keras-hub itself (or read back by it): outputs, heads and token ids are compared
with keras-hub's and transformers' on tiny models.
"""

import json
import os
import sys

import numpy as np
import pytest

from tests.backend_utils import to_numpy
from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

# keras-hub needs TensorFlow (tensorflow-text): every test here needs it installed.
pytestmark = pytest.mark.tensorflow
keras_hub = pytest.importorskip("keras_hub")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "##es", "jump", "##s",
         "Hello", "hello", "caf", "##e", ",", "!", "The", "over", "dog", "a", "##ed"]
TEXTS = ["The quick brown foxes jumps!", "Hello, the dog", "hello THE fox jumped over a dog"]
HUB_SIZES = dict(vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                 max_sequence_length=16)
INPUTS = {
    "token_ids": np.array([[2, 5, 6, 7, 8, 3, 0], [2, 12, 9, 3, 20, 21, 3]], "int32"),
    "segment_ids": np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1, 1]], "int32"),
    "padding_mask": np.array([[1, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 1, 1, 1]], "int32"),
}


def _max_diff(a, b):
    return float(np.max(np.abs(to_numpy(a) - to_numpy(b))))


def _randomized(model, seed):
    """Gives every variable random values (LayerNorm and biases included), so a misplaced weight shows."""
    rng = np.random.default_rng(seed)
    for variable in model.trainable_weights:
        variable.assign(rng.normal(0.0, 0.5, tuple(variable.shape)).astype("float32"))
    return model


@pytest.fixture(scope="module")
def hub_classifier_preset(tmp_path_factory):
    """A keras-hub BertTextClassifier task preset (backbone, 3-class head, uncased tokenizer) and the task."""
    directory = str(tmp_path_factory.mktemp("hub_classifier"))
    backbone = _randomized(keras_hub.models.BertBackbone(**HUB_SIZES, num_segments=3, dropout=0.05), seed=1)
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True, strip_accents=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(tokenizer, sequence_length=16)
    task = keras_hub.models.BertTextClassifier(backbone, num_classes=3, preprocessor=preprocessor, dropout=0.2)
    _randomized(task.output_dense, seed=2)
    task.save_to_preset(directory)
    return directory, task


def test_keras_hub_preset_loads_with_keras_hubs_outputs_and_gelu(hub_classifier_preset):
    directory, task = hub_classifier_preset
    ours = BertBackbone.from_pretrained(directory)
    assert ours.config == BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
        hidden_act="gelu_approximate", hidden_dropout_prob=0.05, attention_probs_dropout_prob=0.05,
        max_position_embeddings=16, type_vocab_size=3,
    )
    inputs = dict(INPUTS, segment_ids=INPUTS["segment_ids"] * 2)
    expected, got = task.backbone(inputs), ours(inputs)
    assert _max_diff(expected["sequence_output"], got["sequence_output"]) <= 1e-5
    assert _max_diff(expected["pooled_output"], got["pooled_output"]) <= 1e-5
    # The task preset's head is kept under Hugging Face's names, in their [C, H] layout.
    assert sorted(ours.head_weights) == ["classifier.bias", "classifier.weight"]
    np.testing.assert_array_equal(ours.head_weights["classifier.weight"], to_numpy(task.output_dense.kernel).T)
    # The exact GELU instead of keras-hub's tanh form gives other outputs: the GELU form is what matches.
    exact = BertBackbone.from_pretrained(directory, hidden_act="gelu")
    assert _max_diff(expected["sequence_output"], exact(inputs)["sequence_output"]) > 1e-4


def test_keras_hub_text_classifier_preset_loads_with_its_head_and_tokenizer(hub_classifier_preset, monkeypatch):
    directory, task = hub_classifier_preset
    with monkeypatch.context() as patch:
        patch.setitem(sys.modules, "keras_hub", None)  # reading needs no keras_hub
        ours = BertClassifier.from_pretrained(directory, num_classes=3, dropout=0.2)
        tokenizer = BertTokenizer.from_pretrained(directory)
    assert ours.newly_initialized_heads == []
    assert _max_diff(task(INPUTS), ours(INPUTS)) <= 1e-5
    np.testing.assert_array_equal(
        to_numpy(ours.output_dense.kernel), to_numpy(task.output_dense.kernel)
    )
    with pytest.raises(UserInputError, match="shape mismatch for classifier.weight"):
        BertClassifier.from_pretrained(directory, num_classes=2)
    assert tokenizer.vocabulary == VOCAB and tokenizer.do_lower_case
    hub_ids = [to_numpy(task.preprocessor.tokenizer(text)).tolist() for text in TEXTS]
    assert [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in TEXTS] == hub_ids


def test_preset_written_by_save_to_preset_loads_in_keras_hub(tmp_path):
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, hidden_act="gelu_approximate", max_position_embeddings=16)
    classifier = BertClassifier(BertBackbone(config), num_classes=2)
    _randomized(classifier, seed=3)
    tokenizer = BertTokenizer(VOCAB, do_lower_case=False)
    classifier.backbone.save_to_preset(tmp_path / "backbone", tokenizer=tokenizer)
    hub = keras_hub.models.BertBackbone.from_preset(str(tmp_path / "backbone"))
    expected, got = classifier.backbone(INPUTS), hub(INPUTS)
    assert _max_diff(expected["sequence_output"], got["sequence_output"]) <= 1e-5
    assert _max_diff(expected["pooled_output"], got["pooled_output"]) <= 1e-5
    # A backbone preset (no task.json) reads back as it was, with no head.
    again = BertBackbone.from_pretrained(tmp_path / "backbone")
    assert _max_diff(expected["sequence_output"], again(INPUTS)["sequence_output"]) <= 1e-5 and again.head_weights == {}
    hub_tokenizer = keras_hub.models.BertTokenizer.from_preset(str(tmp_path / "backbone"))
    hub_ids = [to_numpy(hub_tokenizer(text)).tolist() for text in TEXTS]
    assert [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in TEXTS] == hub_ids

    classifier.save_to_preset(tmp_path / "task", tokenizer=tokenizer)
    hub_task = keras_hub.models.BertTextClassifier.from_preset(str(tmp_path / "task"))
    assert _max_diff(classifier(INPUTS), hub_task(INPUTS)) <= 1e-5
    # And back: the written task preset reads as it was.
    again_task = BertClassifier.from_pretrained(tmp_path / "task", num_classes=2)
    assert _max_diff(classifier(INPUTS), again_task(INPUTS)) <= 1e-5
    # Written in a staging folder beside the preset, moved in, and the staging folder removed.
    assert sorted(os.listdir(tmp_path)) == ["backbone", "task"]


def test_save_to_preset_refuses_the_exact_gelu_unless_allowed_and_needs_keras_hub(tmp_path, monkeypatch):
    backbone = BertBackbone(BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=32, max_position_embeddings=16))
    with pytest.raises(UserInputError, match=r"^hidden_act='gelu' \(the exact erf GELU\).*allow_gelu_approximation=True"):
        backbone.save_to_preset(tmp_path / "exact")
    assert not os.path.exists(tmp_path / "exact")
    monkeypatch.setitem(sys.modules, "keras_hub", None)
    with pytest.raises(ImportError, match=r"^save_to_preset writes through keras-hub, which is not installed: pip install keras-hub$"):
        backbone.save_to_preset(tmp_path / "approx", allow_gelu_approximation=True)
    monkeypatch.undo()
    backbone.save_to_preset(tmp_path / "approx", allow_gelu_approximation=True)
    hub = keras_hub.models.BertBackbone.from_preset(str(tmp_path / "approx"))
    np.testing.assert_array_equal(to_numpy(hub.token_embedding.embeddings), to_numpy(backbone.token_embedding.embeddings))


def test_keras_hub_preset_of_another_architecture_gets_a_one_line_error(tmp_path):
    keras_hub.models.DistilBertBackbone(**HUB_SIZES).save_to_preset(str(tmp_path))
    config_path = os.path.join(str(tmp_path), "config.json")
    with pytest.raises(UserInputError) as error:
        BertBackbone.from_pretrained(tmp_path)
    assert str(error.value) == (
        f"{config_path}: a keras-hub preset of DistilBertBackbone, not BertBackbone; only keras-hub BERT presets "
        "can be read."
    )
    with pytest.raises(ValueError, match=r"config.json: a Keras/keras-hub preset config \(class_name 'DistilBertBackbone'\)"):
        BertConfig.from_pretrained(tmp_path)


# ------------------------------------------------------------------------- tokenizer.json-only directories
@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_tokenizer_json_only_directory_gives_transformers_ids(vocab_file, tmp_path, do_lower_case):
    transformers = pytest.importorskip("transformers")
    reference = transformers.BertTokenizerFast(vocab_file, do_lower_case=do_lower_case)
    reference.save_pretrained(str(tmp_path))
    if os.path.exists(tmp_path / "vocab.txt"):
        os.remove(tmp_path / "vocab.txt")
    ours = BertTokenizer.from_pretrained(tmp_path)
    assert ours.vocabulary == VOCAB and ours.do_lower_case == do_lower_case
    texts = TEXTS + ["Hello, café!"]
    assert [ours(text)["token_ids"][0].tolist() for text in texts] == [reference(text)["input_ids"] for text in texts]


def test_vocab_txt_is_preferred_over_tokenizer_json(vocab_file, tmp_path):
    transformers = pytest.importorskip("transformers")
    transformers.BertTokenizerFast(vocab_file).save_pretrained(str(tmp_path))
    reordered = VOCAB[:5] + VOCAB[5:][::-1]
    (tmp_path / "vocab.txt").write_text("\n".join(reordered) + "\n", encoding="utf-8")
    assert BertTokenizer.from_pretrained(tmp_path).vocabulary == reordered


def test_tokenizer_json_sequence_normalizer_and_non_wordpiece_model(tmp_path):
    values = {
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "BertNormalizer", "lowercase": False}]},
        "model": {"type": "WordPiece", "continuing_subword_prefix": "##", "vocab": {t: i for i, t in enumerate(VOCAB)}},
    }
    (tmp_path / "tokenizer.json").write_text(json.dumps(values), encoding="utf-8")
    tokenizer = BertTokenizer.from_pretrained(tmp_path)
    assert not tokenizer.do_lower_case and tokenizer.tokenize("The foxes") == ["The", "fox", "##es"]
    values["model"] = {"type": "BPE", "vocab": {}, "merges": []}
    (tmp_path / "tokenizer.json").write_text(json.dumps(values), encoding="utf-8")
    with pytest.raises(UserInputError) as error:
        BertTokenizer.from_pretrained(tmp_path)
    assert str(error.value) == (
        f"{tmp_path / 'tokenizer.json'}: the tokenizer model is BPE, not WordPiece; expected a BERT WordPiece tokenizer."
    )


def test_keras_hub_uncased_tokenizer_without_accent_stripping_warns_and_lowercases(tmp_path):
    hub_tokenizer = keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True)  # keras-hub's default form
    hub_tokenizer.save_to_preset(str(tmp_path))
    with pytest.warns(UserWarning, match=r"tokenizer.json: lowercase=True with strip_accents=False; .* strips accents"):
        tokenizer = BertTokenizer.from_pretrained(tmp_path)
    assert tokenizer.do_lower_case and tokenizer.vocabulary == VOCAB
    hub_ids = [to_numpy(hub_tokenizer(text)).tolist() for text in TEXTS]
    assert [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text)) for text in TEXTS] == hub_ids


def test_keras_hub_preset_missing_a_variable_gets_a_one_line_error(hub_classifier_preset, tmp_path):
    import shutil

    import h5py

    directory = str(tmp_path / "preset")
    shutil.copytree(hub_classifier_preset[0], directory)
    weights_path = os.path.join(directory, "model.weights.h5")
    with h5py.File(weights_path, "r+") as f:
        del f["layers/transformer_encoder_1/_feedforward_output_dense/vars/1"]
    with pytest.raises(UserInputError) as error:
        BertBackbone.from_pretrained(directory)
    assert str(error.value) == (
        f"{weights_path}: no layers/transformer_encoder_1/_feedforward_output_dense/vars/1 (expected the variables "
        "of keras-hub's BertBackbone; 1 of 39 missing)."
    )
