"""The task models check `x` and `y` themselves in fit / evaluate / predict / train_on_batch / test_on_batch:
None, empty lists, non-strings, NaN among texts, class ids out of range (-1 and 5 with
num_classes=2), float class labels, string NER tags, None inside a word list, more choices than
`num_choices`, a multiple-choice label 3 with 2 choices and an NER label 9 with 5 classes are one-line
`UserInputError`s naming the element and what was expected, on every backend (JAX would otherwise train on
a label out of range at a loss of 0; Keras' data adapters fail with errors that name neither)."""

import math

import numpy as np
import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.preprocessors.multiple_choice_preprocessor import BertMultipleChoicePreprocessor
from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor
from keras_bert_impl.preprocessors.text_classifier_preprocessor import BertTextClassifierPreprocessor
from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film", "dull", "ann", "sang", "who", "?"]
TINY = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=16)
TOKENIZER = BertTokenizer(VOCAB)
TEXTS = ["a fine film", "dull"]
CLASS_IDS = "a class id: an integer in 0..1 \\(num_classes=2\\)"
TAG_IDS = "a label id: an integer in 0..4 \\(num_classes=5\\) or -100 \\(no label\\)"


@pytest.fixture(scope="module")
def classifier():
    model = BertClassifier(BertBackbone(TINY), 2, preprocessor=BertTextClassifierPreprocessor(TOKENIZER, 8))
    model.compile()
    return model


@pytest.fixture(scope="module")
def tagger():
    model = BertTokenClassifier(BertBackbone(TINY), 5, preprocessor=BertTokenClassifierPreprocessor(TOKENIZER, 8))
    model.compile()
    return model


@pytest.fixture(scope="module")
def chooser():
    model = BertMultipleChoice(BertBackbone(TINY), 2, preprocessor=BertMultipleChoicePreprocessor(TOKENIZER, 8))
    model.compile()
    return model


def _one_line(error_info):
    assert "\n" not in str(error_info.value)


@pytest.mark.parametrize("x,message", [
    (None, "x is None; expected texts"),
    ([], "x is empty; expected at least one example"),
    ([1, 2], "x\\[0\\] must be a str, got 1 \\(an int\\)"),
    ([None], "x\\[0\\] is None; expected a str"),
    (["a fine film", math.nan], "x\\[1\\] must be a str, got nan \\(a float\\)"),
    ((["a fine film"], [None]), "x\\[1\\]\\[0\\] is None; expected a str"),
])
def test_predict_refuses_inputs_that_are_no_texts_naming_the_element(classifier, x, message):
    with pytest.raises(UserInputError, match=message) as error_info:
        classifier.predict(x, verbose=0)
    _one_line(error_info)


@pytest.mark.parametrize("y,message", [
    ([0, 5], f"y\\[1\\] is 5 \\(an int\\); expected {CLASS_IDS}"),
    ([-1, 0], f"y\\[0\\] is -1 \\(an int\\); expected {CLASS_IDS}"),
    ([0.5, 1.0], f"y\\[0\\] is 0.5 \\(a float\\); expected {CLASS_IDS}"),
    (np.array([0.0, 1.0]), f"y\\[0\\] is 0.0 \\(a float\\); expected {CLASS_IDS}"),
    (["pos", "neg"], f"y\\[0\\] is 'pos' \\(a str\\); expected {CLASS_IDS}"),
    ([0, None], f"y\\[1\\] is None; expected {CLASS_IDS}"),
    ([0, 1, 1], "y has 3 labels for 2 examples; expected one label per example"),
])
@pytest.mark.parametrize("method", ["fit", "evaluate", "train_on_batch", "test_on_batch"])
def test_classifier_labels_out_of_range_or_not_integers_are_refused_by_every_method(classifier, method, y, message):
    call = getattr(classifier, method)
    kwargs = {"verbose": 0} if method in ("fit", "evaluate") else {}
    with pytest.raises(UserInputError, match=message) as error_info:
        call(TEXTS, y, **kwargs)
    _one_line(error_info)


def test_labels_of_token_ids_are_checked_as_those_of_texts(classifier):
    x, _, _ = classifier.preprocessor(TEXTS)
    with pytest.raises(UserInputError, match=f"y\\[1\\] is 7 \\(an int\\); expected {CLASS_IDS}"):
        classifier.fit(x, np.array([0, 7]), verbose=0)


def test_valid_labels_train_also_as_a_python_list(classifier):
    history = classifier.fit(TEXTS, [0, 1], epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0]) and history.history["loss"][0] > 0


def test_regression_targets_must_be_finite_numbers():
    model = BertClassifier(BertBackbone(TINY), 1, preprocessor=BertTextClassifierPreprocessor(TOKENIZER, 8))
    model.compile()
    with pytest.raises(UserInputError, match="y\\[1\\] is nan \\(a float\\); expected a finite number"):
        model.fit(TEXTS, [0.5, math.nan], verbose=0)


@pytest.mark.parametrize("x,y,message", [
    ([["a", "film"]], [[0, 9]], f"y\\[0\\]\\[1\\] is 9 \\(an int\\); expected {TAG_IDS}"),
    ([["a", "film"]], [["B-PER", "O"]], f"y\\[0\\]\\[0\\] is 'B-PER' \\(a str\\); expected {TAG_IDS}"),
    ([["a", "film"]], np.array([[0, -1]]), f"y\\[0\\]\\[1\\] is -1 \\(an int\\); expected {TAG_IDS}"),
    ([["a", None]], [[0, 1]], "x\\[0\\]\\[1\\] is None; expected a str"),
])
def test_ner_labels_and_words_are_checked_naming_sentence_and_word(tagger, x, y, message):
    with pytest.raises(UserInputError, match=message) as error_info:
        tagger.fit(x, y, verbose=0)
    _one_line(error_info)


def test_token_labels_of_token_ids_need_the_shape_of_the_ids(tagger):
    x, _, _ = tagger.preprocessor([["a", "film"]], [[0, 1]])
    with pytest.raises(UserInputError, match="y has shape \\(1, 3\\); expected one label per token, the shape of "
                                             "x\\['token_ids'\\] \\(1, 8\\)"):
        tagger.train_on_batch(x, np.zeros((1, 3), "int32"))


def test_multiple_choice_label_beyond_the_choices_and_extra_choices_are_refused(chooser):
    x = (["who sang ?"], [["ann", "a film"]])
    with pytest.raises(UserInputError, match="y\\[0\\] is 3 \\(an int\\); expected the index of the right choice: "
                                             "an integer in 0..1 \\(num_choices=2\\)"):
        chooser.fit(x, [3], verbose=0)
    with pytest.raises(UserInputError, match="x has 3 choices per example .*this BertMultipleChoice scores "
                                             "num_choices=2"):
        chooser.predict((["who sang ?"], [["ann", "a film", "dull"]]), verbose=0)


def test_span_positions_beyond_the_sequence_and_float_answer_starts_are_refused():
    model = BertSpanQA(BertBackbone(TINY), preprocessor=BertSpanQAPreprocessor(TOKENIZER, 12))
    model.compile(optimizer="adam")
    x, y, _ = model.preprocessor((["who sang ?"], ["ann sang"]), ([0], ["ann"]))
    bad = dict(y, end_positions=np.array([12], "int32"))
    with pytest.raises(UserInputError, match="y\\['end_positions'\\]\\[0\\] is 12 \\(an int\\); expected a token "
                                             "position: an integer in 0..11"):
        model.train_on_batch(x, bad)
    with pytest.raises(UserInputError, match="answer_starts\\[0\\] is 0.5 \\(a float\\); expected a character offset"):
        model.fit((["who sang ?"], ["ann sang"]), ([0.5], ["ann"]), verbose=0)
