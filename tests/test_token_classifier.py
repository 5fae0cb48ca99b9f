"""BertTokenClassifier: logits parity with transformers' BertForTokenClassification on the real MiniLM body,
first-sub-token masking of the loss, the word-level CRF (gather, NLL, Viterbi), fit, save/load round trips."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.config import BertConfig
from keras_bert_impl.layers.crf import crf_log_likelihood, crf_viterbi_decode
from keras_bert_impl.models.token_classifier import (
    BertTokenClassifier,
    gather_word_positions,
    viterbi_numpy,
)
from tests.backend_utils import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = BertConfig(vocab_size=60, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32)
NUM_LABELS = 5


def _batch(vocab_size=60, batch=3, seq=10, seed=0):
    """Inputs with padding, and labels on some 'first sub-token' positions (-100 elsewhere)."""
    rng = np.random.RandomState(seed)
    token_ids = rng.randint(5, vocab_size, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[1, 7:] = 0
    padding_mask[2, 4:] = 0
    token_ids *= padding_mask
    labels = np.full((batch, seq), -100, "int32")
    # row 0: words at 1, 2, 4, 5, 8 (3, 6, 7 are continuation pieces; 0 [CLS], 9 [SEP])
    labels[0, [1, 2, 4, 5, 8]] = [1, 2, 0, 3, 4]
    labels[1, [1, 3, 5]] = [4, 0, 2]  # [SEP] at 6, padding from 7
    labels[2, [2]] = [1]  # one word
    x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": padding_mask}
    return x, labels


@pytest.fixture(scope="module")
def hf_token_classification_dir(minilm_path, tmp_path_factory):
    """transformers' BertForTokenClassification with the real MiniLM body and a random head, saved."""
    torch.manual_seed(0)
    config = transformers.BertConfig.from_pretrained(minilm_path, num_labels=NUM_LABELS)
    model = transformers.BertForTokenClassification(config)
    model.bert.load_state_dict(transformers.BertModel.from_pretrained(minilm_path).state_dict(), strict=False)
    with torch.no_grad():  # transformers zero-inits the bias; give it values
        model.classifier.bias.normal_(0, 0.5)
    model.eval()
    directory = tmp_path_factory.mktemp("bert_for_token_classification")
    model.save_pretrained(directory)
    return directory, model


def _hf_logits(hf_model, x):
    with torch.no_grad():
        return hf_model(
            input_ids=torch.tensor(x["token_ids"]).long(),
            token_type_ids=torch.tensor(x["segment_ids"]).long(),
            attention_mask=torch.tensor(x["padding_mask"]).long(),
        ).logits.numpy()


def test_logits_equal_transformers_bert_for_token_classification(hf_token_classification_dir):
    directory, hf_model = hf_token_classification_dir
    x, _ = _batch(vocab_size=30522, seq=12)
    x["segment_ids"][0, 6:] = 1
    model = BertTokenClassifier.from_pretrained(directory)  # num_classes from the checkpoint
    assert model.num_classes == NUM_LABELS
    ours = to_numpy(model(x, training=False))
    theirs = _hf_logits(hf_model, x)
    real = x["padding_mask"] > 0
    assert np.abs(ours - theirs)[real].max() <= 1e-4


def test_save_pretrained_loads_back_here_and_in_transformers(hf_token_classification_dir, tmp_path):
    directory, _ = hf_token_classification_dir
    model = BertTokenClassifier.from_pretrained(directory)
    model.save_pretrained(tmp_path, label_names=["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
    x, _ = _batch(vocab_size=30522)
    expected = to_numpy(model(x))
    np.testing.assert_array_equal(to_numpy(BertTokenClassifier.from_pretrained(tmp_path)(x)), expected)
    reread = transformers.BertForTokenClassification.from_pretrained(tmp_path).eval()
    assert reread.config.id2label[1] == "B-PER"
    real = x["padding_mask"] > 0
    assert np.abs(_hf_logits(reread, x) - expected)[real].max() <= 1e-4


def test_loss_is_mean_cross_entropy_over_first_sub_tokens_only():
    model = BertTokenClassifier(BertBackbone(TINY), NUM_LABELS)
    x, labels = _batch()
    logits = to_numpy(model(x))
    mask = labels != -100
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    expected = -np.mean(log_probs[mask, labels[mask]])
    loss = float(to_numpy(model.token_classification_loss(labels, logits)))
    assert abs(loss - expected) < 1e-5
    # Changing the logits anywhere off the labelled positions leaves the loss unchanged.
    shaken = logits + 5.0 * np.random.RandomState(1).normal(size=logits.shape).astype("float32") * (~mask)[..., None]
    assert abs(float(to_numpy(model.token_classification_loss(labels, shaken))) - expected) < 1e-5
    # token_accuracy counts only the labelled positions.
    model.compile(optimizer="sgd")
    result = model.evaluate(x, labels, verbose=0, return_dict=True)
    assert abs(result["token_accuracy"] - (logits.argmax(-1) == labels)[mask].mean()) < 1e-6
    assert abs(result["loss"] - expected) < 1e-5


def test_gather_word_positions_left_aligns_the_words():
    values = np.arange(12, dtype="int32").reshape(2, 6) + 10
    label_mask = np.array([[0, 1, 0, 1, 1, 0], [0, 0, 1, 0, 0, 0]], "int32")
    gathered, word_mask, order = gather_word_positions(values, label_mask)
    assert to_numpy(gathered).tolist() == [[11, 13, 14, 10, 12, 15], [18, 16, 17, 19, 20, 21]]
    assert to_numpy(word_mask).tolist() == [[1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]]
    assert to_numpy(order)[0, :3].tolist() == [1, 3, 4] and to_numpy(order)[1, 0] == 2
    # 3-D values (logits) are gathered along the time axis.
    logits = np.random.RandomState(0).normal(size=(2, 6, 3)).astype("float32")
    gathered_logits, _, _ = gather_word_positions(logits, label_mask)
    np.testing.assert_array_equal(to_numpy(gathered_logits)[0, :3], logits[0, [1, 3, 4]])


def test_crf_is_trained_and_decoded_on_the_word_sequence():
    model = BertTokenClassifier(BertBackbone(TINY), NUM_LABELS, use_crf=True)
    x, labels = _batch()
    logits = to_numpy(model(x))
    transitions = to_numpy(model.crf.transitions)
    # Hand-gathered word-level potentials: only the labelled (first sub-token) positions, in order.
    positions = [np.flatnonzero(row != -100) for row in labels]
    length = max(len(p) for p in positions)
    word_logits = np.zeros((len(labels), length, NUM_LABELS), "float32")
    word_tags = np.zeros((len(labels), length), "int32")
    word_mask = np.zeros((len(labels), length), "float32")
    for b, p in enumerate(positions):
        word_logits[b, : len(p)] = logits[b, p]
        word_tags[b, : len(p)] = labels[b, p]
        word_mask[b, : len(p)] = 1
    expected = -np.mean(to_numpy(crf_log_likelihood(word_logits, word_tags, transitions, word_mask)))
    loss = float(to_numpy(model.token_classification_loss(labels, logits)))
    assert abs(loss - expected) < 1e-4
    # Viterbi over the words, put back at their first sub-token; -100 elsewhere.
    best, _ = crf_viterbi_decode(word_logits, transitions, word_mask)
    best = to_numpy(best)
    decoded = model.decode(logits, labels != -100)
    for b, p in enumerate(positions):
        assert decoded[b, p].tolist() == best[b, : len(p)].tolist()
        assert (np.delete(decoded[b], p) == -100).all()


def test_host_viterbi_equals_the_crf_layers_viterbi():
    rng = np.random.RandomState(0)
    potentials = rng.normal(size=(4, 7, 4)).astype("float32")
    transitions, start, end = (rng.normal(size=s).astype("float32") for s in ((4, 4), (4,), (4,)))
    lengths = [7, 3, 1, 5]
    mask = (np.arange(7)[None] < np.array(lengths)[:, None]).astype("float32")
    best, _ = crf_viterbi_decode(potentials, transitions, mask, start, end)
    for b, n in enumerate(lengths):
        assert viterbi_numpy(potentials[b, :n], transitions, start, end).tolist() == to_numpy(best)[b, :n].tolist()


@pytest.mark.parametrize("use_crf", [False, True])
def test_fit_decreases_the_loss(use_crf):
    model = BertTokenClassifier(BertBackbone(TINY), NUM_LABELS, use_crf=use_crf)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, labels = _batch()
    history = model.fit(x, labels, epochs=10, batch_size=3, verbose=0).history
    assert np.isfinite(history["loss"]).all()
    assert history["loss"][-1] < 0.7 * history["loss"][0]
    assert ("crf_nll" if use_crf else "token_accuracy") in history


def test_crf_transitions_round_trip_and_config(tmp_path):
    model = BertTokenClassifier(BertBackbone(TINY), NUM_LABELS, dropout=0.2, use_crf=True)
    model.crf.transitions.assign(np.random.RandomState(0).normal(size=(NUM_LABELS, NUM_LABELS)).astype("float32"))
    model.save_pretrained(tmp_path / "hf")
    loaded = BertTokenClassifier.from_pretrained(tmp_path / "hf", use_crf=True)
    np.testing.assert_array_equal(to_numpy(loaded.crf.transitions), to_numpy(model.crf.transitions))
    x, labels = _batch()
    np.testing.assert_array_equal(model.decode(model(x), labels != -100), loaded.decode(loaded(x), labels != -100))

    restored = BertTokenClassifier.from_config(model.get_config())
    assert restored.backbone.config == TINY and restored.use_crf and restored.dropout == 0.2
    path = str(tmp_path / "token_classifier.keras")
    model.save(path)
    reloaded = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(reloaded(x)), to_numpy(model(x)), atol=1e-6)
    np.testing.assert_array_equal(to_numpy(reloaded.crf.transitions), to_numpy(model.crf.transitions))


def test_from_pretrained_without_classifier_warns(minilm_path):
    with pytest.warns(UserWarning, match="no classifier weights"):
        model = BertTokenClassifier.from_pretrained(minilm_path, num_classes=3)
    assert model.num_classes == 3
    with pytest.raises(ValueError, match="pass num_classes"):
        BertTokenClassifier.from_pretrained(minilm_path)
