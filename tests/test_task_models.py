"""Every task model through the shared checks of `tests/task_harness.py`, on the current backend.

Only the regressor goes through the harness's SavedModel check (step 5, TensorFlow): the classifier,
token classifier, span QA model, CRF tagger and a cased classifier are exported and served from raw
strings in test_tf_export.py. A task model creates its optimizer's variables eagerly, before its first
training step."""

import keras
import numpy as np
import pytest

from keras_bert_impl import (
    BertBackbone,
    BertClassifier,
    BertFeatureBasedTagger,
    BertMaskedLMPreprocessor,
    BertMultipleChoice,
    BertMultipleChoicePreprocessor,
    BertPretrainer,
    BertSentenceEncoder,
    BertSentenceEncoderPreprocessor,
    BertSpanQA,
    BertSpanQAPreprocessor,
    BertTextClassifierPreprocessor,
    BertTokenClassifier,
    BertTokenClassifierPreprocessor,
)
from tests.task_harness import TINY, TOKENIZER, TaskCase, run_task_test

BATCH, SEQ = 3, 10


def _inputs(seed=0, batch=BATCH, seq=SEQ):
    rng = np.random.RandomState(seed)
    lengths = np.array([seq, seq - 3, seq - 6])[:batch]
    padding_mask = (np.arange(seq)[None] < lengths[:, None]).astype("int32")
    token_ids = (rng.randint(5, TINY.vocab_size, size=(batch, seq)) * padding_mask).astype("int32")
    token_ids[:, 0] = 2  # [CLS]
    segment_ids = ((np.arange(seq)[None] >= 4) * padding_mask).astype("int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def _tag_labels(x, num_classes=4, seed=1):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, num_classes, size=x["token_ids"].shape).astype("int32")
    labels[:, 0] = -100
    labels[x["padding_mask"] == 0] = -100
    labels[:, 2::3] = -100  # continuation pieces
    return labels


def _multiple_choice_batch():
    choices = [_inputs(seed) for seed in range(4)]
    x = {k: np.stack([c[k] for c in choices], axis=1) for k in choices[0]}  # [B, 4, T]
    return x, np.array([0, 2, 3], "int32")


def _sentence_columns_batch():
    columns = [_inputs(seed) for seed in range(2)]  # anchors, positives
    x = {k: np.stack([c[k] for c in columns], axis=1) for k in columns[0]}  # [B, 2, T]
    x["segment_ids"][:] = 0  # single texts
    return x, np.zeros((BATCH,), "float32")


def _pretraining_batch():
    x = _inputs()
    x["masked_lm_positions"] = np.array([[1, 2], [3, 0], [1, 0]], "int32")
    y = {"masked_lm_ids": np.array([[7, 8], [9, 0], [10, 0]], "int32"),
         "masked_lm_weights": np.array([[1, 1], [1, 0], [1, 0]], "float32"),
         "next_sentence_labels": np.array([[0], [1], [1]], "int32")}
    return x, y


# Raw text in the words of task_harness.VOCABULARY ("w1s" is two pieces; "x9" is [UNK]).
TEXTS = ["w1 w2s w3", "W4 w5 x9 w6 w7ed w8", "w11?"]
PAIRS = (TEXTS, ["w12 w13", "w14", "w15 w16 w17"])


def _text_classifier(length=SEQ):
    return lambda: BertTextClassifierPreprocessor(TOKENIZER, sequence_length=length)


def _token_classifier():
    return BertTokenClassifierPreprocessor(TOKENIZER, sequence_length=SEQ)


def _word_labels():  # one label a word, a [batch, words] array padded with -100
    return np.array([[1, 2, 3, -100, -100, -100], [0, 1, 2, 3, 0, 1], [3, -100, -100, -100, -100, -100]], "int32")


CASES = {
    "classifier": TaskCase(
        build=lambda b, p: BertClassifier(b, num_classes=3, preprocessor=p),
        batch=lambda: (_inputs(), np.array([0, 2, 1], "int32")),
        output_shapes={"logits": (BATCH, 3)},
        preprocessor=_text_classifier(),
        raw_batch=lambda: (PAIRS, np.array([0, 2, 1], "int32")),
        from_pretrained=lambda d: BertClassifier.from_pretrained(d, num_classes=3),
    ),
    "regressor": TaskCase(
        build=lambda b, p: BertClassifier(b, num_classes=1, preprocessor=p),
        batch=lambda: (_inputs(), np.array([[0.5], [4.0], [2.5]], "float32")),
        output_shapes={"logits": (BATCH, 1)},
        preprocessor=_text_classifier(),
        raw_batch=lambda: (TEXTS, np.array([[0.5], [4.0], [2.5]], "float32")),
        from_pretrained=lambda d: BertClassifier.from_pretrained(d, num_classes=1),
        export_task="regressor",
    ),
    "multiple_choice": TaskCase(
        build=lambda b, p: BertMultipleChoice(b, num_choices=4, preprocessor=p),
        batch=_multiple_choice_batch,
        output_shapes={"logits": (BATCH, 4)},
        preprocessor=lambda: BertMultipleChoicePreprocessor(TOKENIZER, sequence_length=SEQ),
        raw_batch=lambda: ((TEXTS, [["w1", "w2", "w3 w4", "w5s"], ["w6", "w7", "w8", "w9"], ["a", "b", "c", "d"]]),
                           np.array([0, 2, 3], "int32")),
        from_pretrained=lambda d: BertMultipleChoice.from_pretrained(d, num_choices=4),
    ),
    "span_qa": TaskCase(
        build=lambda b, p: BertSpanQA(b, preprocessor=p),
        batch=lambda: (_inputs(), {"start_positions": np.array([5, 4, 0], "int32"),
                                   "end_positions": np.array([7, 5, 0], "int32")}),
        output_shapes={"start_logits": (BATCH, SEQ), "end_logits": (BATCH, SEQ)},
        preprocessor=lambda: BertSpanQAPreprocessor(TOKENIZER, sequence_length=SEQ),
        raw_batch=lambda: ((["w1?", "w2 w3?", "w4?"], ["w5 w6 w7", "w8s w9", "w10 w11"]), ([6, 0, 0], ["w7", "w8s", ""])),
        from_pretrained=BertSpanQA.from_pretrained,
    ),
    "token_classifier": TaskCase(
        build=lambda b, p: BertTokenClassifier(b, num_classes=4, preprocessor=p),
        batch=lambda: (_inputs(), _tag_labels(_inputs())),
        output_shapes={"logits": (BATCH, SEQ, 4)},
        preprocessor=_token_classifier,
        raw_batch=lambda: (TEXTS, _word_labels()),
        from_pretrained=lambda d: BertTokenClassifier.from_pretrained(d, num_classes=4),
    ),
    "token_classifier_crf": TaskCase(
        build=lambda b, p: BertTokenClassifier(b, num_classes=4, use_crf=True, preprocessor=p),
        batch=lambda: (_inputs(), _tag_labels(_inputs())),
        output_shapes={"logits": (BATCH, SEQ, 4)},
        preprocessor=_token_classifier,
        raw_batch=lambda: ([t.split() for t in TEXTS], [[1, 2, 3], [0, 1, 2, 3, 0, 1], [3]]),
        from_pretrained=lambda d: BertTokenClassifier.from_pretrained(d, num_classes=4, use_crf=True),
    ),
    "feature_based_tagger": TaskCase(
        build=lambda b, p: BertFeatureBasedTagger(b, num_classes=4, feature_layers=(-1, -2), lstm_units=8,
                                                  num_lstm_layers=1, preprocessor=p),
        batch=lambda: (_inputs(), _tag_labels(_inputs())),
        output_shapes={"logits": (BATCH, SEQ, 4)},
        preprocessor=_token_classifier,
        raw_batch=lambda: (TEXTS, _word_labels()),
        backbone_kwargs={"output_hidden_states": True},
    ),
    "sentence_encoder": TaskCase(
        build=lambda b, p: BertSentenceEncoder(b, pooling=["mean", "max"], normalize=True, preprocessor=p),
        batch=_sentence_columns_batch,
        output_shapes={"logits": (BATCH, 2, 2 * TINY.hidden_size)},
        preprocessor=lambda: BertSentenceEncoderPreprocessor(TOKENIZER, sequence_length=SEQ),
        raw_batch=lambda: (PAIRS, None),
        from_pretrained=BertSentenceEncoder.from_pretrained,
    ),
    "pretrainer": TaskCase(
        build=lambda b, p: BertPretrainer(b, preprocessor=p),
        batch=_pretraining_batch,
        output_shapes={"masked_lm_logits": (BATCH, 2, TINY.vocab_size), "next_sentence_logits": (BATCH, 2)},
        preprocessor=lambda: BertMaskedLMPreprocessor(TOKENIZER, sequence_length=SEQ, max_predictions_per_seq=2),
        raw_batch=lambda: (PAIRS, np.array([0, 1, 1], "int32")),
        from_pretrained=BertPretrainer.from_pretrained,
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_task_model_builds_trains_saves_reloads_exports_and_trains_in_bfloat16(name, tmp_path):
    run_task_test(CASES[name], str(tmp_path))


def _executing_eagerly():
    if keras.backend.backend() != "tensorflow":
        return True  # JAX and torch build the optimizer outside their compiled steps
    import tensorflow as tf

    return tf.executing_eagerly()


@pytest.mark.parametrize("method", ["fit", "train_on_batch"])
def test_the_optimizer_is_built_eagerly_before_the_first_training_step(method):
    """Keras' TensorFlow trainer (without a tf.distribute strategy) would create the slots inside the first
    trace of the train step, which TensorFlow then traces a second time."""
    model = BertClassifier(BertBackbone(TINY), num_classes=2)
    model.compile()
    calls = []
    build = model.optimizer.build
    model.optimizer.build = lambda variables: (calls.append(_executing_eagerly()), build(variables))[1]
    x, y = _inputs(), np.array([0, 1, 0])
    model.fit(x, y, batch_size=BATCH, verbose=0) if method == "fit" else model.train_on_batch(x, y)
    assert calls == [True]
    assert len(model.optimizer.variables) > 2 * len(model.trainable_variables)  # Adam's two slots per variable
