"""The task preprocessors against the package's reference paths (the original's packing in glue_data, the
CoNLL windows, the SQuAD windows), raw-text datasets, and the errors of raw text given wrongly.
(tests/test_featurizer_parity.py compares every preprocessor with its recipe's featurizer on tiny vocabularies.)"""

import numpy as np
import pytest

from keras_bert_impl import (
    BertClassifier,
    BertSpanQA,
    BertSpanQAPreprocessor,
    BertTextClassifierPreprocessor,
    BertTokenClassifier,
    BertTokenClassifierPreprocessor,
    BertTokenizer,
)
from keras_bert_impl.data.conll_data import ConllSentence
from keras_bert_impl.data.conll_features import convert_sentences_to_features
from keras_bert_impl.data.glue_data import pack_example
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.data.squad_postprocessing import compute_predictions, raw_results
from tests.task_harness import TINY, TOKENIZER

TEXTS = ["The quick brown fox jumps over the lazy dog.", "Stock markets fell sharply on Tuesday, traders said.",
         "Ünïcode façades and naïve café owners", "short"]
PAIRS = ["A fox.", "Markets rose on Monday after a long weekend of heavy trading in Asia and Europe.", "", "x " * 40]


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    return BertTokenizer.from_pretrained(minilm_path)


def test_text_pairs_pack_as_the_original_run_classifier_packs_them(minilm_tokenizer):
    x, _, _ = BertTextClassifierPreprocessor(minilm_tokenizer, sequence_length=24)((TEXTS, PAIRS))
    for i, (a, b) in enumerate(zip(TEXTS, PAIRS)):
        token_ids, segment_ids = pack_example(minilm_tokenizer, a, b, 24)
        n = len(token_ids)
        assert x["token_ids"][i, :n].tolist() == token_ids and x["segment_ids"][i, :n].tolist() == segment_ids
        assert x["padding_mask"][i].tolist() == [1] * n + [0] * (24 - n)
        assert not x["token_ids"][i, n:].any()


def test_word_labels_land_where_the_conll_features_put_them(minilm_tokenizer):
    sentences = [text.split() for text in TEXTS]
    tags = ["O", "B-ORG", "B-PER", "B-LOC"]  # BIO as written: the CoNLL reader keeps them as they are
    labels = [[(3 * i + j) % 4 for j in range(len(words))] for i, words in enumerate(sentences)]
    x, y, _ = BertTokenClassifierPreprocessor(minilm_tokenizer, sequence_length=32)(sentences, labels)
    conll = [ConllSentence(words, [tags[label] for label in row], 0, list(range(len(words))))
             for words, row in zip(sentences, labels)]
    features = convert_sentences_to_features(conll, minilm_tokenizer, tags, 32)
    assert len(features) == len(sentences)  # every sentence fits one window
    for i, feature in enumerate(features):
        np.testing.assert_array_equal(x["token_ids"][i], feature.token_ids)
        np.testing.assert_array_equal(x["padding_mask"][i], feature.padding_mask)
        np.testing.assert_array_equal(y[i], feature.label_ids)


def test_answer_token_span_decodes_to_the_answer_in_its_window_and_other_windows_are_labelled_cls(minilm_tokenizer):
    contexts = ["In 1905, Albert Einstein published four papers in Annalen der Physik.",
                "The Amazon rainforest covers much of the Amazon basin of South America.",
                "Early words. " * 10 + "The late answer is here."]
    questions = ["Who published four papers?", "What does the rainforest cover?", "Where is the late answer?"]
    answers = ["Albert Einstein", "much of the Amazon basin", "here"]
    starts = [c.index(a) for c, a in zip(contexts, answers)]
    preprocessor = BertSpanQAPreprocessor(minilm_tokenizer, sequence_length=40, doc_stride=16)
    x, y, weights = preprocessor((questions, contexts), (starts, answers), sample_weight=np.array([1.0, 2.0, 3.0]))
    _, features = preprocessor.windows((questions, contexts))
    example_of_row = [f.example_index for f in features]
    assert example_of_row == [0, 1, 2, 2] and weights.tolist() == [1.0, 2.0, 3.0, 3.0]  # the long context: 2 windows
    for row, i in enumerate(example_of_row):
        start, end = y["start_positions"][row], y["end_positions"][row]
        if row == 2:  # the first window of the long context ends before its answer: "no answer here" ([CLS])
            assert (start, end) == (0, 0)
            continue
        assert x["segment_ids"][row, start] == 1 and start <= end
        assert minilm_tokenizer.decode(x["token_ids"][row, start : end + 1]) == answers[i].lower()
    with pytest.raises(ValueError, match=r"answer_texts\[0\] 'Einstein' is not at answer_starts\[0\]=0"):
        BertSpanQAPreprocessor(minilm_tokenizer)((questions[:1], contexts[:1]), ([0], ["Einstein"]))


def test_squad_postprocessing_on_the_windows_of_the_preprocessor_finds_the_answer_of_a_later_window():
    context = " ".join(f"w{i}" for i in range(30))
    preprocessor = BertSpanQAPreprocessor(TOKENIZER, sequence_length=12, doc_stride=4, max_query_length=4)
    x, _, _ = preprocessor((["w40 w41?"], [context]))
    examples, features = preprocessor.windows((["w40 w41?"], [context]))
    assert len(features) == len(x["token_ids"]) > 3
    # Hand-made logits: 0 everywhere but at "w21 w22" in the window where w21 has its most context.
    start_logits, end_logits = np.zeros(x["token_ids"].shape), np.zeros(x["token_ids"].shape)
    row, position = next((row, p) for row, f in enumerate(features) for p, word in f.token_to_orig_map.items()
                         if word == 21 and f.token_is_max_context[p] and f.token_to_orig_map.get(p + 1) == 22)
    assert row > 0 and features[row].tokens[position : position + 2] == ["w21", "w22"]
    start_logits[row, position], end_logits[row, position + 1] = 8.0, 8.0
    predictions = compute_predictions(examples, features, raw_results(features, start_logits, end_logits))
    assert predictions.predictions == {"0": "w21 w22"}
    assert predictions.answer_char_spans["0"] == (context.index("w21"), context.index("w22") + 3)


def _classifier(preprocessor=True):
    preprocessor = BertTextClassifierPreprocessor(TOKENIZER, sequence_length=8) if preprocessor else None
    model = BertClassifier(BertBackbone(TINY), num_classes=2, preprocessor=preprocessor)
    model.compile()
    return model


@pytest.mark.tensorflow
def test_a_dataset_of_raw_text_and_labels_evaluates_as_its_arrays(tmp_path):
    import tensorflow as tf

    texts, labels = ["w1 w2", "w3 w4s w5", "w6?", "w7 w8 w9 w10 w11 w12 w13"], np.array([0, 1, 1, 0], "int32")
    model = _classifier()
    on_arrays = model.evaluate(texts, labels, batch_size=2, verbose=0, return_dict=True)
    dataset = tf.data.Dataset.from_tensor_slices((texts, labels)).batch(2)
    on_dataset = model.evaluate(dataset, verbose=0, return_dict=True)
    assert on_dataset.keys() == on_arrays.keys()
    for name in on_arrays:
        np.testing.assert_allclose(on_dataset[name], on_arrays[name], rtol=1e-6)
    predicted = model.predict(tf.data.Dataset.from_tensor_slices(texts).batch(2), verbose=0)
    np.testing.assert_allclose(predicted, model.predict(texts, verbose=0), atol=1e-6)
    history = model.fit(dataset, epochs=1, verbose=0, shuffle=False)  # the dataset's order, without Keras' warning
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.tensorflow
def test_a_sentence_longer_than_a_window_trains_in_windows_that_share_its_sample_weight():
    import tensorflow as tf

    sentences = ["w1 w2s w3 w4 w5ed w6 w7", "w8 w9", "w10 w11 w12 w13s w14 w15 w16 w17 w18"]
    labels = np.array([[1, 2, 3, 0, 1, 2, 3, -100, -100], [0, 1] + [-100] * 7, [3, 2, 1, 0, 1, 2, 3, 0, 1]], "int32")
    weights = np.array([0.5, 1.0, 2.0], "float32")
    model = BertTokenClassifier(BertBackbone(TINY), num_classes=4,
                                preprocessor=BertTokenClassifierPreprocessor(TOKENIZER, sequence_length=6))
    model.compile()
    ids_x, ids_y, ids_weights = model.preprocessor(sentences, labels, weights)
    windows = model.preprocessor.windows(sentences)
    assert [w.sentence_index for w in windows] == [0, 0, 0, 1, 2, 2, 2]
    assert ids_weights.tolist() == [0.5, 0.5, 0.5, 1.0, 2.0, 2.0, 2.0] and len(ids_x["token_ids"]) == len(ids_y) == 7
    on_ids = model.evaluate(ids_x, ids_y, sample_weight=ids_weights, batch_size=7, verbose=0, return_dict=True)
    on_raw = model.evaluate(sentences, labels, sample_weight=weights, batch_size=7, verbose=0, return_dict=True)
    dataset = tf.data.Dataset.from_tensor_slices((sentences, labels, weights)).batch(3)  # one batch of 7 windows
    on_dataset = model.evaluate(dataset, verbose=0, return_dict=True)
    for name in on_ids:
        np.testing.assert_allclose(on_raw[name], on_ids[name], rtol=1e-6, err_msg=name)
        np.testing.assert_allclose(on_dataset[name], on_ids[name], rtol=1e-6, err_msg=name)
    with pytest.raises(ValueError, match=r"sample_weight has shape \(7,\); expected one weight per example \(3\)"):
        model.preprocessor(sentences, labels, ids_weights)


def test_raw_text_without_a_preprocessor_or_labels_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="got raw text but has no preprocessor.*BertTextClassifierPreprocessor"):
        _classifier(preprocessor=False).predict(["w1 w2"], verbose=0)
    with pytest.raises(ValueError, match="training on raw text needs its labels y"):
        _classifier().fit(["w1 w2"], epochs=1, verbose=0)
    with pytest.raises(TypeError, match="BertSpanQA takes a BertSpanQAPreprocessor as preprocessor, got "
                                        "BertTextClassifierPreprocessor"):
        BertSpanQA(BertBackbone(TINY), preprocessor=BertTextClassifierPreprocessor(TOKENIZER))
    too_big = BertTokenizer(TOKENIZER.vocabulary + [f"extra{i}" for i in range(10)])
    with pytest.raises(ValueError, match="70 tokens .* vocab_size 60"):
        BertTokenClassifier(BertBackbone(TINY), num_classes=2, preprocessor=BertTokenClassifierPreprocessor(too_big))
