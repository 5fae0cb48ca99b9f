"""SavedModel export with raw-string signatures: tokenization in the graph. TensorFlow by nature.

`export_saved_model` writes a TensorFlow SavedModel whose `serving_default` signature takes raw UTF-8
strings and returns the task's answer, computed by the in-graph tokenizer (`TFBertTokenizer`, ids and
offsets identical to `BertTokenizer`) and the Keras model. Loading it needs only TensorFlow and
tensorflow-text (`import tensorflow_text` registers the tokenizer's ops); keras_bert_impl need not be
installed where it is served (TF Serving, `tf.saved_model.load`).

Signatures by task:

| task | `serving_default` inputs | outputs |
| --- | --- | --- |
| "backbone" | `text` [B] (+ `text_pair` [B] with `text_pair=True`) | `pooled_output` [B, H], `sequence_output` [B, T, H], `padding_mask` [B, T] |
| "classifier" | `text` (+ `text_pair`) | `probabilities` [B, C], `label_id` [B], `label` [B] (names) |
| "regressor" | `text` (+ `text_pair`) | `score` [B] |
| "token_classifier" | `text` | per word: `words`, `tags` (names), `word_start`, `word_end` (character offsets into `text`), padded with "" / -1 to [B, W] |
| "span_qa" | `question`, `context` | `answer`, `answer_start`, `answer_end` (characters of `context`), `score`; `has_answer` |

Every export also has `serving_token_ids`, on `token_ids`, `segment_ids`, `padding_mask` [B, T] int32,
returning the model's raw outputs.

The export must run under the TensorFlow backend. A model trained under JAX or PyTorch is exported by
saving it (`save_pretrained`) and running `recipes/export_savedmodel.py`, which reloads the weights under
TensorFlow.
"""

import os

import keras
import tensorflow as tf

from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer
from keras_bert_impl.utils import file_io

TASKS = ("backbone", "classifier", "regressor", "token_classifier", "span_qa")


def _first_output(outputs, *names):
    """The tensor among a model's outputs: the dict entry of the first present name, or the tensor."""
    if isinstance(outputs, dict):
        for name in names:
            if name in outputs:
                return outputs[name]
        raise KeyError(f"model outputs {sorted(outputs)} have none of {names}")
    return outputs


def _span_logits(outputs):
    if isinstance(outputs, dict):
        return outputs["start_logits"], outputs["end_logits"]
    return outputs[0], outputs[1]


def best_span(start_logits, end_logits, allowed, max_answer_length):
    """The best answer span of each row: argmax of start[i] + end[j] over allowed i <= j < i + max length.

    Args:
        start_logits, end_logits: float [B, T].
        allowed: bool [B, T], the positions an answer may cover (context tokens).
        max_answer_length: longest answer in tokens.

    Returns:
        (start [B], end [B], score [B]) with score = start_logits[start] + end_logits[end].
    """
    seq = tf.shape(start_logits)[1]
    scores = start_logits[:, :, None] + end_logits[:, None, :]  # [B, T, T]
    i = tf.range(seq)[:, None]
    j = tf.range(seq)[None, :]
    band = (j >= i) & (j < i + max_answer_length)  # [T, T]
    valid = band[None] & allowed[:, :, None] & allowed[:, None, :]
    scores = tf.where(valid, scores, tf.fill(tf.shape(scores), tf.constant(-1e9, scores.dtype)))
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(flat, axis=-1, output_type=tf.int32)
    return best // seq, best % seq, tf.reduce_max(flat, axis=-1)


def _word_groups(token_ids, offsets, padding_mask, segment_ids, is_continuation):
    """Words of segment A: (first-token index [B, W], word start/end characters [B, W], valid [B, W])."""
    is_piece = tf.gather(is_continuation, token_ids)
    special = (offsets[..., 0] == 0) & (offsets[..., 1] == 0)
    real = tf.cast(padding_mask, tf.bool) & ~special & tf.equal(segment_ids, 0)
    starts_word = real & ~is_piece  # [B, T]
    word_index = tf.cumsum(tf.cast(starts_word, tf.int32), axis=1) - 1  # word of each token, -1 before any
    first_token = tf.ragged.boolean_mask(tf.broadcast_to(tf.range(tf.shape(token_ids)[1]), tf.shape(token_ids)), starts_word)
    word_start = tf.ragged.boolean_mask(offsets[..., 0], starts_word)
    # A word ends where its last token (the last real token with the same word index) ends.
    next_starts_or_ends = tf.concat([starts_word[:, 1:] | ~real[:, 1:], tf.ones_like(real[:, :1])], axis=1)
    last_of_word = real & next_starts_or_ends
    word_end = tf.ragged.boolean_mask(offsets[..., 1], last_of_word & (word_index >= 0))
    return first_token, word_start, word_end


class _Exporter:
    def __init__(self, model, tokenizer, task, labels, max_seq_length, text_pair, max_answer_length,
                 null_score_diff_threshold):
        if task not in TASKS:
            raise ValueError(f"Unknown task {task!r}; allowed: {', '.join(TASKS)}.")
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(
                "SavedModel export runs under KERAS_BACKEND=tensorflow; save the model with save_pretrained and "
                "run recipes/export_savedmodel.py, which reloads it under TensorFlow."
            )
        if task in ("classifier", "token_classifier") and not labels:
            raise ValueError(f"Exporting a {task} needs its label names.")
        self.model = model
        self.tokenizer = tokenizer if isinstance(tokenizer, TFBertTokenizer) else TFBertTokenizer(tokenizer)
        self.task = task
        self.labels = tf.constant([str(label) for label in (labels or [])])
        self.max_seq_length = max_seq_length
        self.text_pair = text_pair
        self.max_answer_length = max_answer_length
        self.null_score_diff_threshold = null_score_diff_threshold
        if task == "token_classifier":
            vocab = self.tokenizer_vocabulary()
            self.is_continuation = tf.constant([token.startswith("##") for token in vocab])

    def tokenizer_vocabulary(self):
        from keras_bert_impl.tokenizers.bert_tokenizer import load_vocab

        return load_vocab(self.tokenizer.vocab_file)

    def pack(self, first, second=None):
        return self.tokenizer(first, second, max_length=self.max_seq_length, padding="longest", return_offsets=True)

    def run_model(self, packed):
        inputs = {k: packed[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        return self.model(inputs, training=False)

    # ------------------------------------------------------------------------------- endpoints
    def serve_texts(self, text, text_pair=None):
        packed = self.pack(text, text_pair)
        outputs = self.run_model(packed)
        if self.task == "backbone":
            return {
                "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
                "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
                "padding_mask": packed["padding_mask"],
            }
        if self.task == "regressor":
            return {"score": tf.reshape(tf.cast(_first_output(outputs, "logits", "score"), tf.float32), [-1])}
        if self.task == "classifier":
            logits = tf.cast(_first_output(outputs, "logits"), tf.float32)
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {
                "probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": label_id,
                "label": tf.gather(self.labels, label_id),
            }
        return self.serve_tags(text, packed, outputs)

    def serve_tags(self, text, packed, outputs):
        logits = tf.cast(_first_output(outputs, "logits"), tf.float32)  # [B, T, K]
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)  # [B, T]
        first_token, word_start, word_end = _word_groups(
            packed["token_ids"], packed["offsets"], packed["padding_mask"], packed["segment_ids"], self.is_continuation
        )
        word_tags = tf.gather(tag_ids, first_token, batch_dims=1)
        texts = tf.reshape(text, [-1])
        words = tf.strings.substr(
            tf.repeat(texts, first_token.row_lengths()),
            word_start.flat_values,
            word_end.flat_values - word_start.flat_values,
            unit="UTF8_CHAR",
        )
        return {
            "words": first_token.with_flat_values(words).to_tensor(default_value=""),
            "tags": word_tags.with_flat_values(tf.gather(self.labels, word_tags.flat_values)).to_tensor(default_value=""),
            "word_start": word_start.to_tensor(default_value=-1),
            "word_end": word_end.to_tensor(default_value=-1),
        }

    def serve_qa(self, question, context):
        packed = self.pack(question, context)
        start_logits, end_logits = (tf.cast(x, tf.float32) for x in _span_logits(self.run_model(packed)))
        special = (packed["offsets"][..., 0] == 0) & (packed["offsets"][..., 1] == 0)
        allowed = tf.equal(packed["segment_ids"], 1) & tf.cast(packed["padding_mask"], tf.bool) & ~special
        start, end, score = best_span(start_logits, end_logits, allowed, self.max_answer_length)
        null_score = start_logits[:, 0] + end_logits[:, 0]
        if self.null_score_diff_threshold is None:  # SQuAD v1.1: there is always an answer
            has_answer = tf.ones_like(score, dtype=tf.bool)
        else:  # v2.0: answer "" when the null score beats the best span by more than the threshold
            has_answer = (null_score - score) <= self.null_score_diff_threshold
        answer_start = tf.gather(packed["offsets"][..., 0], start, batch_dims=1)
        answer_end = tf.gather(packed["offsets"][..., 1], end, batch_dims=1)
        answer = tf.strings.substr(tf.reshape(context, [-1]), answer_start, answer_end - answer_start, unit="UTF8_CHAR")
        return {
            "answer": tf.where(has_answer, answer, ""),
            "answer_start": tf.where(has_answer, answer_start, -1),
            "answer_end": tf.where(has_answer, answer_end, -1),
            "score": score,
            "null_score": null_score,
            "has_answer": has_answer,
        }

    def serve_token_ids(self, token_ids, segment_ids, padding_mask):
        outputs = self.model({"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}, training=False)
        if isinstance(outputs, dict):
            return {k: tf.cast(v, tf.float32) for k, v in outputs.items() if not isinstance(v, (list, tuple))}
        if isinstance(outputs, (list, tuple)):
            return {f"output_{i}": tf.cast(v, tf.float32) for i, v in enumerate(outputs)}
        return {"logits": tf.cast(outputs, tf.float32)}


def export_saved_model(
    model,
    tokenizer,
    export_dir,
    task,
    labels=None,
    max_seq_length=128,
    text_pair=False,
    max_answer_length=30,
    null_score_diff_threshold=None,
):
    """Writes a SavedModel whose `serving_default` takes raw strings (see the module docstring).

    Args:
        model: a Keras model built under the TensorFlow backend: a `BertBackbone` or a task model on it.
        tokenizer: a `BertTokenizer`, `TFBertTokenizer` or a vocab.txt path.
        export_dir: where to write; written under a temporary name and renamed when complete.
        task: one of `TASKS`.
        labels: label names, by id (classifier, token classifier).
        max_seq_length: tokens per packed input (longer inputs are truncated as the tokenizer does).
        text_pair: the classifier / backbone takes a pair of texts (`text`, `text_pair`).
        max_answer_length: longest QA answer in tokens.
        null_score_diff_threshold: SQuAD v2.0 rule: answer "" when null_score - best_score exceeds it;
            None for a v1.1 model, which always answers.

    Examples:

    >>> export_saved_model(classifier, tokenizer, "saved_models/sst2", "classifier",
    ...                    labels=["negative", "positive"])  # doctest: +SKIP
    >>> served = tf.saved_model.load("saved_models/sst2")  # doctest: +SKIP
    >>> served.signatures["serving_default"](text=tf.constant(["A joy to watch."]))  # doctest: +SKIP
    """
    exporter = _Exporter(model, tokenizer, task, labels, max_seq_length, text_pair, max_answer_length,
                         null_score_diff_threshold)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(exporter.tokenizer)
    if task == "span_qa":
        archive.add_endpoint("serving_default", lambda question, context: exporter.serve_qa(question, context),
                             input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                              tf.TensorSpec([None], tf.string, name="context")])
    elif text_pair:
        archive.add_endpoint("serving_default", lambda text, text_pair: exporter.serve_texts(text, text_pair),
                             input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                              tf.TensorSpec([None], tf.string, name="text_pair")])
    else:
        archive.add_endpoint("serving_default", lambda text: exporter.serve_texts(text),
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    archive.add_endpoint(
        "serving_token_ids",
        lambda token_ids, segment_ids, padding_mask: exporter.serve_token_ids(token_ids, segment_ids, padding_mask),
        input_signature=[tf.TensorSpec([None, None], tf.int32, name="token_ids"),
                         tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
                         tf.TensorSpec([None, None], tf.int32, name="padding_mask")],
    )
    with file_io.atomic_path(export_dir.rstrip("/")) as tmp:
        archive.write_out(tmp, verbose=False)
    return export_dir


# Hugging Face architecture names (config.json "architectures") -> export task.
ARCHITECTURE_TASKS = {
    "BertModel": "backbone",
    "BertForPreTraining": "backbone",
    "BertForMaskedLM": "backbone",
    "BertForSequenceClassification": "classifier",
    "BertForTokenClassification": "token_classifier",
    "BertForQuestionAnswering": "span_qa",
}


def export_from_directory(model_dir, export_dir, vocab_file=None, max_seq_length=128, text_pair=False,
                          null_score_diff_threshold=None):
    """Exports a directory written by a model's `save_pretrained` (any backend) as a SavedModel.

    The task comes from config.json's `architectures` (see `ARCHITECTURE_TASKS`), label names from its
    `id2label`, the tokenizer from `vocab_file` or the directory's vocab.txt / tokenizer_config.json.
    Must run under KERAS_BACKEND=tensorflow (`recipes/export_savedmodel.py` sees to it).

    Returns:
        (task, export_dir).
    """
    import json

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    with open(os.path.join(model_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    architecture = (config.get("architectures") or ["BertModel"])[0]
    if architecture not in ARCHITECTURE_TASKS:
        raise ValueError(
            f"{model_dir}/config.json: architecture {architecture!r} cannot be exported; known: "
            f"{', '.join(ARCHITECTURE_TASKS)}."
        )
    task = ARCHITECTURE_TASKS[architecture]
    labels = [config["id2label"][str(i)] for i in range(len(config["id2label"]))] if "id2label" in config else None
    if vocab_file:
        tokenizer = BertTokenizer(vocab_file, do_lower_case=config.get("do_lower_case", True))
    else:
        tokenizer = BertTokenizer.from_pretrained(model_dir)

    if task == "backbone":
        from keras_bert_impl.models.backbone import BertBackbone

        model = BertBackbone.from_pretrained(model_dir)
    elif task == "classifier":
        from keras_bert_impl.models.classifier import BertClassifier

        model = BertClassifier.from_pretrained(model_dir, num_classes=len(labels))
        if len(labels) == 1 or config.get("problem_type") == "regression":
            task = "regressor"
    elif task == "token_classifier":
        from keras_bert_impl.models.token_classifier import BertTokenClassifier

        model = BertTokenClassifier.from_pretrained(model_dir, num_labels=len(labels))
    else:
        from keras_bert_impl.models.span_qa import BertSpanQA

        model = BertSpanQA.from_pretrained(model_dir)
    export_saved_model(model, tokenizer, export_dir, task, labels=labels, max_seq_length=max_seq_length,
                       text_pair=text_pair, null_score_diff_threshold=null_score_diff_threshold)
    return task, export_dir
