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
| "span_qa" | `question`, `context` | `answer`, `answer_start`, `answer_end` (characters of `context`), `score`, `null_score`; `has_answer` |

B may be 0: an empty batch gets every output with 0 rows.

Token classifier: a word is a token of `text` that is not a `##` continuation; its tag is decided at its
first token by `models.token_classifier.decode_tags`, the rule of `BertTokenClassifier.decode`: argmax, or
with a CRF (`model.use_crf`) the Viterbi path over the words' first-token logits.

Span QA (`serve_qa`) applies the rule of `tasks.squad_postprocessing.compute_predictions` (the original
run_squad.py) to its one window: the candidate spans are the `n_best_size` best start positions x the
`n_best_size` best end positions (over all real tokens, as the original), inside the context, start <= end,
at most `max_answer_length` tokens; the answer is the best candidate by start + end logit; with
`null_score_diff_threshold` (SQuAD v2.0) it is "" when `null_score - score > threshold`, null_score being
the [CLS] start + end logits. Where the recipe's predictions.json and the SavedModel can still differ, for a
question and context that fit in one window (the question within run_squad.py's `--max_query_length`, as
the SavedModel truncates a too long pair by the tokenizer's rule, not the recipe's windows):

* the answer text: the SavedModel returns the context's characters from the first token's start to the
  last token's end; the recipe maps the tokens back with `get_final_text`, which joins the words by one
  space (a run of whitespace inside an answer becomes " "), takes the first occurrence of the predicted text
  among the span's words (e.g. "Apple" rather than "apple" for the second word of "Apple-apple" when
  lower-casing), and answers the span's whole words when lower-casing / accent stripping changes their
  length (e.g. decomposed accents, "İ");
* no valid candidate (every top start / end in the question or crossed): the recipe answers its nonce
  "empty" (score 0) when score_null <= threshold, the SavedModel answers "" with `has_answer` false;
* exact ties between logits or span scores may be broken differently (floating-point sums in float32 in
  the graph, float64 in the recipe).

`export_config.json`, written in the SavedModel directory, records how it was exported (task, labels,
max_seq_length, do_lower_case, use_crf, the SQuAD rule's settings).

Every export also has `serving_token_ids`, on `token_ids`, `segment_ids`, `padding_mask` [B, T] int32,
returning the model's raw outputs.

The export must run under the TensorFlow backend. A model trained under JAX or PyTorch is exported by
saving it (`save_pretrained`) and running `recipes/export_savedmodel.py`, which reloads the weights under
TensorFlow.
"""

import os

import keras
import tensorflow as tf

from keras_bert_impl.checkpoints import model_io, task_layouts
from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer
from keras_bert_impl.utils import file_io, model_files

TASKS = ("backbone", "classifier", "regressor", "token_classifier", "span_qa")
# The file, in the SavedModel directory, that records the export's settings.
EXPORT_CONFIG_NAME = "export_config.json"
# Defaults of the SQuAD rule, those of recipes/run_squad.py.
SQUAD_DEFAULTS = {"max_answer_length": 30, "n_best_size": 20, "null_score_diff_threshold": 0.0}


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


def top_positions(logits, real, k):
    """bool [B, T]: the `k` positions with the largest logits among the `real` ones, ties to the lower index
    (the original run_squad.py `_get_best_indexes`, a stable sort); all real positions when fewer than k."""
    seq = tf.shape(logits)[1]
    masked = tf.where(real, logits, tf.fill(tf.shape(logits), tf.constant(float("-inf"), logits.dtype)))
    _, index = tf.math.top_k(masked, k=tf.minimum(k, seq), sorted=True)  # [B, min(k, T)]
    chosen = tf.reduce_any(tf.one_hot(index, seq, on_value=True, off_value=False, dtype=tf.bool), axis=1)
    return chosen & real


def best_span(start_logits, end_logits, allowed, max_answer_length, n_best_size=None, real=None):
    """The best answer span of each row: argmax of start[i] + end[j] over allowed i <= j < i + max length.

    Args:
        start_logits, end_logits: float [B, T].
        allowed: bool [B, T], the positions an answer may cover (context tokens).
        max_answer_length: longest answer in tokens.
        n_best_size: None, or only the n_best_size best starts and the n_best_size best ends among the
            `real` positions are candidates (the original run_squad.py rule).
        real: bool [B, T], the real (non-padding) positions; default: all.

    Returns:
        (start [B], end [B], score [B]) with score = start_logits[start] + end_logits[end]; score is -1e9
        when no span is a candidate.
    """
    seq = tf.shape(start_logits)[1]
    allowed_start = allowed_end = allowed
    if n_best_size is not None:
        real = tf.ones_like(allowed) if real is None else real
        allowed_start = allowed & top_positions(start_logits, real, n_best_size)
        allowed_end = allowed & top_positions(end_logits, real, n_best_size)
    scores = start_logits[:, :, None] + end_logits[:, None, :]  # [B, T, T]
    i = tf.range(seq)[:, None]
    j = tf.range(seq)[None, :]
    band = (j >= i) & (j < i + max_answer_length)  # [T, T]
    valid = band[None] & allowed_start[:, :, None] & allowed_end[:, None, :]
    scores = tf.where(valid, scores, tf.fill(tf.shape(scores), tf.constant(-1e9, scores.dtype)))
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(flat, axis=-1, output_type=tf.int32)
    return best // seq, best % seq, tf.reduce_max(flat, axis=-1)


def _word_groups(token_ids, offsets, padding_mask, segment_ids, is_continuation):
    """Words of segment A: (first-token index, word start and end characters: ragged [B, (W)]; the first
    tokens as a 0/1 mask [B, T])."""
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
    return first_token, word_start, word_end, tf.cast(starts_word, tf.int32)


def _serve_any_batch(endpoint, *texts):
    """`endpoint(*texts)` for a batch of any size, 0 included: an empty batch is served as one empty string
    and 0 rows of every output are kept (the model reads each row's first token, which a packed batch of 0
    rows and 0 tokens does not have)."""
    rows = tf.shape(texts[0])[0]
    texts = [tf.cond(rows > 0, lambda t=t: t, lambda: tf.constant([""])) for t in texts]
    return {name: value[:rows] for name, value in endpoint(*texts).items()}


class _Exporter:
    def __init__(self, model, tokenizer, task, labels, max_seq_length, text_pair, max_answer_length,
                 null_score_diff_threshold, n_best_size):
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
        self.n_best_size = n_best_size
        if task == "token_classifier":
            vocab = self.tokenizer_vocabulary()
            self.is_continuation = tf.constant([token.startswith("##") for token in vocab])

    def tokenizer_vocabulary(self):
        from keras_bert_impl.tokenizers.vocabulary import load_vocab

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
        from keras_bert_impl.models.token_classifier import decode_tags

        logits = tf.cast(_first_output(outputs, "logits"), tf.float32)  # [B, T, K]
        first_token, word_start, word_end, word_mask = _word_groups(
            packed["token_ids"], packed["offsets"], packed["padding_mask"], packed["segment_ids"], self.is_continuation
        )
        crf = self.model.crf if getattr(self.model, "use_crf", False) else None
        if crf is None:  # argmax at every first token
            tag_ids = decode_tags(logits, word_mask)  # [B, T]
        else:  # the Viterbi path over the words, as BertTokenClassifier.decode
            tag_ids = decode_tags(logits, word_mask, crf.transitions, crf.start_transitions, crf.end_transitions)
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
        real = tf.cast(packed["padding_mask"], tf.bool)
        start, end, score = best_span(start_logits, end_logits, allowed, self.max_answer_length, self.n_best_size, real)
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
    n_best_size=20,
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
        n_best_size: QA candidates: the n_best_size best starts x the n_best_size best ends (the original
            run_squad.py's `--n_best_size`); None: every start and end.

    Examples (skipped by the docstring tests: exporting needs KERAS_BACKEND=tensorflow;
    tests/test_tf_export.py exports and serves every task):

    >>> export_saved_model(classifier, tokenizer, "saved_models/sst2", "classifier",
    ...                    labels=["negative", "positive"])  # doctest: +SKIP
    >>> served = tf.saved_model.load("saved_models/sst2")  # doctest: +SKIP
    >>> served.signatures["serving_default"](text=tf.constant(["A joy to watch."]))  # doctest: +SKIP
    """
    exporter = _Exporter(model, tokenizer, task, labels, max_seq_length, text_pair, max_answer_length,
                         null_score_diff_threshold, n_best_size)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(exporter.tokenizer)
    if task == "span_qa":
        archive.add_endpoint("serving_default",
                             lambda question, context: _serve_any_batch(exporter.serve_qa, question, context),
                             input_signature=[tf.TensorSpec([None], tf.string, name="question"),
                                              tf.TensorSpec([None], tf.string, name="context")])
    elif text_pair:
        archive.add_endpoint("serving_default",
                             lambda text, text_pair: _serve_any_batch(exporter.serve_texts, text, text_pair),
                             input_signature=[tf.TensorSpec([None], tf.string, name="text"),
                                              tf.TensorSpec([None], tf.string, name="text_pair")])
    else:
        archive.add_endpoint("serving_default", lambda text: _serve_any_batch(exporter.serve_texts, text),
                             input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    archive.add_endpoint(
        "serving_token_ids",
        lambda token_ids, segment_ids, padding_mask: exporter.serve_token_ids(token_ids, segment_ids, padding_mask),
        input_signature=[tf.TensorSpec([None, None], tf.int32, name="token_ids"),
                         tf.TensorSpec([None, None], tf.int32, name="segment_ids"),
                         tf.TensorSpec([None, None], tf.int32, name="padding_mask")],
    )
    record = {
        "task": task,
        "labels": [str(label) for label in (labels or [])],
        "max_seq_length": int(max_seq_length),
        "text_pair": bool(text_pair),
        "do_lower_case": bool(exporter.tokenizer.do_lower_case),
    }
    if task == "token_classifier":
        record["use_crf"] = bool(getattr(model, "use_crf", False))
    if task == "span_qa":
        record["squad"] = {
            "version_2_with_negative": null_score_diff_threshold is not None,
            "null_score_diff_threshold": null_score_diff_threshold,
            "max_answer_length": int(max_answer_length),
            "n_best_size": n_best_size,
        }
    with file_io.atomic_path(export_dir.rstrip("/")) as tmp:
        archive.write_out(tmp, verbose=False)
        file_io.write_json(os.path.join(tmp, EXPORT_CONFIG_NAME), record)
    return export_dir


# The export task of each model class a directory may hold (`checkpoints.task_layouts`); a pretraining
# directory exports its backbone. BertClassifier with one output exports as "regressor".
CLASS_TASKS = {
    "BertBackbone": "backbone",
    "BertPretrainer": "backbone",
    "BertClassifier": "classifier",
    "BertTokenClassifier": "token_classifier",
    "BertFeatureBasedTagger": "token_classifier",
    "BertSpanQA": "span_qa",
}


def read_export_settings(model_dir, vocab_file=None, do_lower_case=None):
    """What export needs from a `save_pretrained` directory, or a one-line `ValueError` naming the missing
    file or field (the message starts with its path).

    Needs config.json with `architectures` (the class it names, `model_io.model_class`, one of `CLASS_TASKS`)
    and, for a classifier or token classifier, `id2label`; vocab.txt unless `vocab_file` is given;
    tokenizer_config.json with `do_lower_case` unless `do_lower_case` is given (a cased model is never served
    lower-cased by default).

    Returns:
        dict: task, model_class, labels (list or None), vocab_file, do_lower_case, checkpoint (its
        `ModelDirectory`).
    """
    checkpoint = model_io.open_checkpoint(os.fspath(model_dir).rstrip("/"))
    config_path = os.path.join(checkpoint.directory, model_files.CONFIG_FILE)
    if checkpoint.config_file != config_path:
        raise ValueError(f"{config_path}: missing; export needs the config.json that save_pretrained writes.")
    exportable = [architecture for name, layout in task_layouts.LAYOUTS.items() if name in CLASS_TASKS
                  for architecture in layout.architectures]
    if not checkpoint.architecture:
        raise ValueError(f"{config_path}: no 'architectures' field; export reads the task from it "
                         f"(one of {', '.join(dict.fromkeys(exportable))}).")
    model_class = model_io.model_class(checkpoint)
    if model_class.__name__ not in CLASS_TASKS or (checkpoint.architecture not in exportable
                                                   and model_class.__name__ != "BertFeatureBasedTagger"):
        raise ValueError(f"{config_path}: architecture {checkpoint.architecture!r} cannot be exported; known: "
                         f"{', '.join(dict.fromkeys(exportable))}.")
    task = CLASS_TASKS[model_class.__name__]
    labels = checkpoint.label_names
    if labels is None and task in ("classifier", "token_classifier"):
        raise ValueError(f"{config_path}: no 'id2label' field; export of a {task} needs its label names.")

    if vocab_file is None:
        vocab_file = checkpoint.vocab_file
        if vocab_file is None:
            raise ValueError(f"{os.path.join(checkpoint.directory, model_files.VOCAB_FILE)}: missing; save the "
                             "tokenizer with tokenizer.save_pretrained(model_dir) or pass --vocab_file.")
    elif not os.path.isfile(vocab_file):
        raise ValueError(f"{vocab_file}: no such vocabulary file (--vocab_file).")
    if do_lower_case is None:
        tokenizer_config_path = os.path.join(checkpoint.directory, model_files.TOKENIZER_CONFIG_FILE)
        if not os.path.isfile(tokenizer_config_path):
            raise ValueError(f"{tokenizer_config_path}: missing; export needs its do_lower_case (save the tokenizer "
                             "with tokenizer.save_pretrained(model_dir), or pass --do_lower_case).")
        if "do_lower_case" not in checkpoint.tokenizer_config:
            raise ValueError(f"{tokenizer_config_path}: no 'do_lower_case' field; export needs it "
                             "(or pass --do_lower_case true/false).")
        do_lower_case = checkpoint.tokenizer_config["do_lower_case"]
    return {"task": task, "model_class": model_class, "labels": labels, "vocab_file": vocab_file,
            "do_lower_case": bool(do_lower_case), "checkpoint": checkpoint}


def squad_settings(config, version_2_with_negative=None, null_score_diff_threshold=None, max_answer_length=None,
                   n_best_size=None):
    """The SQuAD answer rule of a span QA export: arguments given (not None) win, then config.json's
    `"squad"` entry (keys `version_2_with_negative`, `null_score_diff_threshold`, `max_answer_length`,
    `n_best_size`), then `SQUAD_DEFAULTS` (those of recipes/run_squad.py).

    A threshold makes the model SQuAD v2.0; a v2.0 model without one gets the recipe's default, 0.0.

    Returns:
        dict with null_score_diff_threshold (None for v1.1), max_answer_length, n_best_size.
    """
    stored = config.get("squad") or {}
    if null_score_diff_threshold is None and version_2_with_negative is not False:
        null_score_diff_threshold = stored.get("null_score_diff_threshold")
    if version_2_with_negative is None:
        version_2_with_negative = stored.get("version_2_with_negative", null_score_diff_threshold is not None)
    if not version_2_with_negative:
        null_score_diff_threshold = None
    elif null_score_diff_threshold is None:
        null_score_diff_threshold = SQUAD_DEFAULTS["null_score_diff_threshold"]
    return {
        "null_score_diff_threshold": None if null_score_diff_threshold is None else float(null_score_diff_threshold),
        "max_answer_length": int(max_answer_length or stored.get("max_answer_length")
                                 or SQUAD_DEFAULTS["max_answer_length"]),
        "n_best_size": int(n_best_size or stored.get("n_best_size") or SQUAD_DEFAULTS["n_best_size"]),
    }


def load_model(settings):
    """(model, task) of the directory `read_export_settings` read: the model of its class with its weights,
    and its task, "regressor" for a classifier with one label or config.json's problem_type "regression"."""
    task, labels, checkpoint = settings["task"], settings["labels"], settings["checkpoint"]
    if task == "backbone":
        from keras_bert_impl.models.backbone import BertBackbone

        return BertBackbone.from_pretrained(checkpoint), task
    if task == "span_qa":
        return settings["model_class"].from_pretrained(checkpoint), task
    # a classifier, a token classifier (with its CRF, if any) or a feature-based tagger
    model = settings["model_class"].from_pretrained(checkpoint, num_classes=len(labels))
    if task == "classifier" and (len(labels) == 1 or checkpoint.setting("problem_type") == "regression"):
        task = "regressor"
    return model, task


def export_from_directory(model_dir, export_dir, vocab_file=None, max_seq_length=None, text_pair=False,
                          null_score_diff_threshold=None, do_lower_case=None, max_answer_length=None,
                          n_best_size=None, version_2_with_negative=None):
    """Exports a directory written by a model's `save_pretrained` (any backend) as a SavedModel.

    The task comes from config.json's `architectures` (the model class, see `CLASS_TASKS`), label names from its
    `id2label`, the tokenizer from `vocab_file` or the directory's vocab.txt and `do_lower_case` or the
    directory's tokenizer_config.json; a directory lacking any of them is refused (`read_export_settings`).
    `max_seq_length` defaults to config.json's `max_seq_length` (the recipes write it), else 128.
    A token classifier keeps the checkpoint's CRF (a feature-based tagger's tags are argmax, as its
    `decode`); a span QA model answers by the SQuAD rule of `squad_settings` (arguments, else config.json's
    "squad" entry, else the recipe's defaults).
    Must run under KERAS_BACKEND=tensorflow (`recipes/export_savedmodel.py` sees to it).

    Returns:
        (task, export_dir).
    """
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    settings = read_export_settings(model_dir, vocab_file, do_lower_case)
    task, labels, checkpoint = settings["task"], settings["labels"], settings["checkpoint"]
    tokenizer = BertTokenizer(settings["vocab_file"], do_lower_case=settings["do_lower_case"])
    max_seq_length = int(max_seq_length or checkpoint.setting("max_seq_length") or 128)
    squad = {"null_score_diff_threshold": None, "max_answer_length": SQUAD_DEFAULTS["max_answer_length"],
             "n_best_size": SQUAD_DEFAULTS["n_best_size"]}
    model, task = load_model(settings)
    if task == "span_qa":
        squad = squad_settings(checkpoint.config, version_2_with_negative, null_score_diff_threshold,
                               max_answer_length, n_best_size)
    export_saved_model(model, tokenizer, export_dir, task, labels=labels, max_seq_length=max_seq_length,
                       text_pair=text_pair, **squad)
    return task, export_dir
