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
| "multiple_choice" | `context` [B], `endings` [B, C] | `probabilities` [B, C], `label_id` [B] |
| "sentence_encoder" | `text` [B] | `embedding` [B, D], L2-normalized (sentence-transformers' `encode(normalize_embeddings=True)`) |

B may be 0: an empty batch gets every output with 0 rows. The two inputs of a signature must have a row for
each other's rows (`text_pair` for `text`, `context` for `question`, `endings` for `context`; `segment_ids` and
`padding_mask` the shape of `token_ids`): otherwise the call fails with `InvalidArgumentError` naming the
input ("context: expected one entry per entry of question ..."); an input of another rank or dtype is refused
by the signature itself.

The answers are those of the recipes' prediction files and of `keras_bert_impl.pipeline` (the same rules,
here in the graph):

* Classifier and multiple choice: the softmax of the logits and their argmax (`data.class_scores`), each
  choice packed `[CLS] context [SEP] ending [SEP]` as run_swag.py packs it. A classifier fine-tuned with
  run_glue.py's `--long_input=mean|max` (config.json's `long_input`) classifies a text by its windows of
  `max_seq_length` tokens (in the graph, `tokenizers.tf_bert_tokenizer.text_windows`, the twin of
  `tokenizers.packing.pack_windows`), their logits pooled by their mean or maximum.
* Token classifier: the words are the text's whitespace-separated words (`str.split()`'s), as run_ner.py's
  CoNLL words and the token-classification pipeline's; a word's tag is decided at its first token by
  `models.token_classifier.decode_tags`, the rule of `BertTokenClassifier.decode`: argmax, or with a CRF
  (`model.use_crf`) the Viterbi path over the words' first-token logits.
* Span QA (`serve_qa`) answers over the context's doc-stride windows, as run_squad.py: the question cut to
  `max_query_length` tokens, the context cut into windows of `max_seq_length` tokens every `doc_stride`
  tokens, each context token flagged in the window that gives it the most context (in the graph,
  `tokenizers.tf_bert_tokenizer.doc_stride_windows`, the twin of `tokenizers.packing.doc_stride_windows`);
  the rule of `data.squad_postprocessing.compute_predictions` (the original run_squad.py) picks the best
  span across the windows: the candidate spans of a window are its `n_best_size` best start positions x
  its `n_best_size` best end positions (over its real tokens, as the original), inside the context, starting
  at a token the window gives the most context, start <= end, at most `max_answer_length` tokens; the
  answer is the best candidate by start + end logit (`best_span`); `null_score` is the least [CLS]
  start + end logits of the windows, and with `null_score_diff_threshold` (SQuAD v2.0) the answer is ""
  when `null_score - score > threshold`.

What still differs between the SavedModel and the recipes (and pipelines):

* Long inputs of the token classifier: the SavedModel reads a text's first `max_seq_length` tokens;
  run_ner.py and the pipeline tag every word of a longer text (its windows of whole words).
* Token classifier: a word that the tokenizer reduces to nothing (only control or format characters) has
  no token here and is left out; the recipe tags it (as one [UNK] position).
* Span QA's answer text: the SavedModel returns the context's characters from the first token's start to
  the last token's end; the recipe maps the tokens back with `get_final_text`, which joins the words by one
  space (a run of whitespace inside an answer becomes " "; adjacent CJK words are joined without one), takes the first occurrence of the predicted text
  among the span's words (e.g. "Apple" rather than "apple" for the second word of "Apple-apple" when
  lower-casing), and answers the span's whole words when lower-casing / accent stripping changes their
  length (e.g. decomposed accents, "İ").
* Span QA without a valid candidate (every top start / end in the question or crossed, or an empty
  context): the recipe answers its nonce "empty" (score 0) when score_null <= threshold (an empty context:
  ""), the SavedModel answers "" with `has_answer` false.
* Exact ties between logits or span scores may be broken differently (floating-point sums in float32 in
  the graph, float64 in the recipe).

`export_config.json`, written in the SavedModel directory, records how it was exported (task, labels,
max_seq_length, do_lower_case, `normalize` when set, use_crf, num_choices, long_input, the SQuAD windows' and rule's settings). It also marks the directory as an
export: an export replaces an earlier one (atomically: the new one is written under a temporary name and
renamed), but refuses an `export_dir` that is a file or a non-empty directory without it, whatever it holds
(`check_export_dir`), unless `overwrite=True` (`--overwrite`) says to replace it.

Every export also has `serving_token_ids`, on `token_ids`, `segment_ids`, `padding_mask` [B, T] int32
([B, C, T] for multiple choice), returning the model's raw outputs.

The export must run under the TensorFlow backend. A model trained under JAX or PyTorch is exported by
saving it (`save_pretrained`) and running `recipes/export_savedmodel.py`, which reloads the weights under
TensorFlow.
"""

import functools
import os

import keras

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("SavedModel export", "tensorflow")

import tensorflow as tf

from keras_bert_impl.data.text_classification_data import LONG_INPUT_MODES
from keras_bert_impl.export.export_settings import (  # noqa: F401 (read_export_settings, check_export_dir: API too)
    EXPORT_CONFIG_NAME,
    SERVING_KINDS,
    check_export_dir,
    check_export_source,
    load_model,
    read_export_settings,
    serving_kind,
    squad_settings,
)
from keras_bert_impl.export.tf_signatures import save_signatures
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import UserInputError

# The serving kinds (`export_settings.SERVING_KINDS`), which the signatures below answer.
TASKS = tuple(SERVING_KINDS)


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


def best_span(start_logits, end_logits, allowed, max_answer_length, n_best_size=None, real=None, allowed_start=None):
    """The best answer span of each row: argmax of start[i] + end[j] over allowed i <= j < i + max length
    (the first in (i, j) order on a tie).

    Args:
        start_logits: float [B, T]; `end_logits` the same.
        allowed: bool [B, T], the positions an answer may cover (context tokens).
        max_answer_length: longest answer in tokens.
        n_best_size: None, or only the n_best_size best starts and the n_best_size best ends among the
            `real` positions are candidates (the original run_squad.py rule).
        real: bool [B, T], the real (non-padding) positions; default: all.
        allowed_start: None, or bool [B, T], the positions an answer may start at (default: `allowed`; the
            recipe's: a context token whose window gives it the most context).

    Returns:
        (start [B], end [B], score [B]) with score = start_logits[start] + end_logits[end]; score is -1e9
        when no span is a candidate.
    """
    seq = tf.shape(start_logits)[1]
    allowed_end = allowed
    allowed_start = allowed if allowed_start is None else allowed & allowed_start
    if n_best_size is not None:
        real = tf.ones_like(allowed) if real is None else real
        allowed_start = allowed_start & top_positions(start_logits, real, n_best_size)
        allowed_end = allowed_end & top_positions(end_logits, real, n_best_size)
    scores = start_logits[:, :, None] + end_logits[:, None, :]  # [B, T, T]
    i = tf.range(seq)[:, None]
    j = tf.range(seq)[None, :]
    band = (j >= i) & (j < i + max_answer_length)  # [T, T]
    valid = band[None] & allowed_start[:, :, None] & allowed_end[:, None, :]
    scores = tf.where(valid, scores, tf.fill(tf.shape(scores), tf.constant(-1e9, scores.dtype)))
    flat = tf.reshape(scores, [tf.shape(scores)[0], -1])
    best = tf.argmax(flat, axis=-1, output_type=tf.int32)
    return best // seq, best % seq, tf.reduce_max(flat, axis=-1)


# The characters `str.split()` splits words at (str.isspace), which the NER recipe's words are separated by.
_WHITESPACE = [c for c in range(0x3001) if chr(c).isspace()]


def _word_groups(text, offsets, padding_mask, segment_ids):
    """Words of segment A, as the NER recipe's: the text's whitespace-separated words; a word's first token is
    the first token that starts in it. Returns (first-token index, word start and end characters: ragged
    [B, (W)]; the first tokens as a 0/1 mask [B, T])."""
    chars = tf.strings.unicode_decode(tf.reshape(text, [-1]), "UTF-8", errors="replace")  # [B, (C)]
    space = tf.reduce_any(tf.equal(chars.flat_values[:, None], tf.constant(_WHITESPACE, tf.int32)), axis=1)
    space = chars.with_flat_values(space).to_tensor(default_value=True)  # [B, C]
    space = tf.pad(space, [[0, 0], [0, 1]], constant_values=True)  # [B, C + 1]: an empty text has a column too
    before = tf.concat([tf.ones_like(space[:, :1]), space[:, :-1]], axis=1)
    word_of_char = tf.cumsum(tf.cast(~space & before, tf.int32), axis=1)  # 1 + the word of each character
    special = (offsets[..., 0] == 0) & (offsets[..., 1] == 0)
    real = tf.cast(padding_mask, tf.bool) & ~special & tf.equal(segment_ids, 0)  # [B, T]
    last_char = tf.maximum(tf.shape(space)[1] - 1, 0)
    token_word = tf.where(real, tf.gather(word_of_char, tf.minimum(offsets[..., 0], last_char), batch_dims=1), -1)
    previous = tf.concat([tf.fill(tf.shape(token_word[:, :1]), -1), token_word[:, :-1]], axis=1)
    starts_word = real & tf.not_equal(token_word, previous)  # [B, T]
    positions = tf.broadcast_to(tf.range(tf.shape(real)[1]), tf.shape(real))
    first_token = tf.ragged.boolean_mask(positions, starts_word)
    word_start = tf.ragged.boolean_mask(offsets[..., 0], starts_word)
    # A word ends where its last token ends: the last real token before the next word's first (or the end).
    following = tf.concat([starts_word[:, 1:] | ~real[:, 1:], tf.ones_like(real[:, :1])], axis=1)
    word_end = tf.ragged.boolean_mask(offsets[..., 1], real & following)
    return first_token, word_start, word_end, tf.cast(starts_word, tf.int32)


def _same_rows(first, first_name, second, second_name):
    """`second` (the other input of a signature, e.g. a question's context), checked to have a row for every
    row of `first`."""
    with tf.control_dependencies([tf.debugging.assert_equal(
            tf.shape(second)[0], tf.shape(first)[0],
            message=f"{second_name}: expected one entry per entry of {first_name} (a batch of the same size)")]):
        return tf.identity(second)


def _serve_any_batch(endpoint, *texts):
    """`endpoint(*texts)` for a batch of any size, 0 included: an empty batch is served as one row of empty
    strings and 0 rows of every output are kept (the model reads each row's first token, which a packed batch
    of 0 rows and 0 tokens does not have)."""
    rows = tf.shape(texts[0])[0]
    texts = [tf.cond(rows > 0, lambda t=t: t, lambda t=t: tf.fill(tf.concat([[1], tf.shape(t)[1:]], 0), ""))
             for t in texts]
    return {name: value[:rows] for name, value in endpoint(*texts).items()}


class _Exporter:
    """The endpoints of one export: the model, the in-graph tokenizer and the settings of the serving kind
    `task` (a key of `export_settings.SERVING_KINDS`)."""

    def __init__(self, model, tokenizer, task, labels, max_seq_length, text_pair, max_answer_length,
                 null_score_diff_threshold, n_best_size, doc_stride, max_query_length, long_input):
        if task not in SERVING_KINDS:
            raise ValueError(f"Unknown task {task!r}; allowed: {', '.join(TASKS)}.")
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(
                "SavedModel export runs under KERAS_BACKEND=tensorflow; save the model with save_pretrained and "
                "run recipes/export_savedmodel.py, which reloads it under TensorFlow."
            )
        kind = SERVING_KINDS[task]
        if kind.needs_labels and not labels:
            raise ValueError(f"Exporting a {task} needs its label names.")
        self.model = model
        self.tokenizer = tokenizer if isinstance(tokenizer, TFBertTokenizer) else TFBertTokenizer(tokenizer)
        self.task = task
        self.label_names = [str(label) for label in (labels or [])]
        self.labels = tf.constant(self.label_names)
        self.max_seq_length = max_seq_length
        self.text_pair = text_pair
        self.max_answer_length = max_answer_length
        self.null_score_diff_threshold = null_score_diff_threshold
        self.n_best_size = n_best_size
        self.doc_stride = int(doc_stride)
        self.max_query_length = int(max_query_length)
        self.long_input = long_input
        if long_input not in LONG_INPUT_MODES or (long_input != "truncate" and (text_pair or not kind.pools_windows)):
            raise ValueError(f"long_input={long_input!r}: a classifier of single texts pools its windows by 'mean' or "
                             "'max'; every export can 'truncate'.")
        inputs, serve, _ = _SIGNATURES[task]
        self.inputs = inputs(self)  # the TensorSpecs of serving_default's raw strings
        self.serve = functools.partial(serve, self)  # (*raw strings) -> answers

    def pack(self, first, second=None):
        return self.tokenizer(first, second, max_length=self.max_seq_length, padding="longest", return_offsets=True)

    def run_model(self, packed):
        inputs = {k: packed[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        return self.model(inputs, training=False)

    def record(self):
        """export_config.json: how the model was exported (the module docstring), the kind's own entries too."""
        record = {
            "task": self.task,
            "labels": self.label_names,
            "max_seq_length": int(self.max_seq_length),
            "text_pair": bool(self.text_pair),
            "do_lower_case": bool(self.tokenizer.do_lower_case),
        }
        if self.tokenizer.normalize is not None:
            record["normalize"] = self.tokenizer.normalize
        record.update(SERVING_KINDS[self.task].record(self.model))
        if SERVING_KINDS[self.task].pools_windows:
            record["long_input"] = self.long_input
        record.update(_SIGNATURES[self.task][2](self))
        return record

    # ------------------------------------------------------------------------------- endpoints
    def serve_texts(self, text, text_pair=None):
        """A text (pair) kind's answers: the packed texts through the model, its outputs to the kind's answers."""
        if text_pair is not None:
            text_pair = _same_rows(text, "text", text_pair, "text_pair")
        if self.long_input != "truncate":
            return self.serve_windows(text)
        packed = self.pack(text, text_pair)
        outputs = self.run_model(packed)
        return _TEXT_ANSWERS[self.task](self, text, packed, outputs)

    def serve_features(self, text, packed, outputs):
        """A backbone's features of the packed texts."""
        return {
            "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
            "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
            "padding_mask": packed["padding_mask"],
        }

    def serve_embeddings(self, text):
        """A sentence encoder's embedding of each text (packed alone, as `BertSentenceEncoder.encode`), L2-normalized."""
        packed = self.pack(text)
        embeddings = self.model({k: packed[k][:, None] for k in ("token_ids", "segment_ids", "padding_mask")},
                                training=False)  # [B, 1, D]
        return {"embedding": tf.math.l2_normalize(tf.cast(embeddings[:, 0], tf.float32), axis=-1, epsilon=1e-24)}

    def serve_classes(self, logits):
        """A classifier's answers of its logits [B, C] (`data.class_scores`' rule)."""
        label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
                "label": tf.gather(self.labels, label_id)}

    def serve_score(self, logits):
        """A regressor's score of its one logit [B, 1]."""
        return {"score": tf.reshape(logits, [-1])}

    def serve_windows(self, text):
        """A classifier's answers of a text's windows' pooled logits (run_glue.py's `--long_input=mean|max`)."""
        windows = self.tokenizer.text_windows(tf.reshape(text, [-1]), self.max_seq_length)
        logits = tf.cast(_first_output(self.run_model(windows), "logits", "score"), tf.float32)  # [W, C]
        pool = tf.math.unsorted_segment_mean if self.long_input == "mean" else tf.math.unsorted_segment_max
        return _LOGIT_ANSWERS[self.task](self, pool(logits, windows["example_index"], tf.shape(tf.reshape(text, [-1]))[0]))

    def serve_tags(self, text, packed, outputs):
        """A token classifier's tag of every word, decided at its first token by the model's own rule
        (`decode_in_graph`: argmax, or with a CRF the Viterbi path over the words)."""
        logits = tf.cast(_first_output(outputs, "logits"), tf.float32)  # [B, T, K]
        first_token, word_start, word_end, word_mask = _word_groups(
            text, packed["offsets"], packed["padding_mask"], packed["segment_ids"])
        tag_ids = self.model.decode_in_graph(logits, word_mask)  # [B, T]
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
        """The SQuAD rule over the context's doc-stride windows, as run_squad.py (module docstring)."""
        context = _same_rows(question, "question", context, "context")
        question_ids = self.tokenizer.tokenize(tf.reshape(question, [-1]))[:, : self.max_query_length]
        context_ids, char_starts, char_ends = self.tokenizer.tokenize_with_offsets(tf.reshape(context, [-1]))
        windows = self.tokenizer.doc_stride_windows(question_ids, context_ids, self.max_seq_length, self.doc_stride)
        start_logits, end_logits = (tf.cast(x, tf.float32) for x in _span_logits(self.run_model(windows)))
        positions = tf.range(tf.shape(windows["token_ids"])[1])[None, :] - windows["doc_offset"][:, None]
        in_doc = (positions >= 0) & (positions < windows["doc_length"][:, None])  # [W, T]
        real = tf.cast(windows["padding_mask"], tf.bool)
        start, end, score = best_span(start_logits, end_logits, in_doc, self.max_answer_length, self.n_best_size,
                                      real, allowed_start=windows["max_context"])  # [W]
        # Per question: the best span of its windows (the first window on a tie), the least null score.
        example = windows["example_index"]
        questions = tf.shape(context_ids.row_lengths())[0]
        best_score = tf.math.unsorted_segment_max(score, example, questions)
        window_index = tf.range(tf.shape(score)[0])
        best_window = tf.math.unsorted_segment_min(
            tf.where(score >= tf.gather(best_score, example), window_index, tf.shape(score)[0]), example, questions)
        null_score = tf.math.unsorted_segment_min(start_logits[:, 0] + end_logits[:, 0], example, questions)
        has_answer = best_score > -1e8  # a candidate span exists
        if self.null_score_diff_threshold is not None:  # v2.0: "" when the null score wins by more than the threshold
            has_answer &= (null_score - best_score) <= self.null_score_diff_threshold
        # The answer's first and last context tokens, their characters in the context.
        doc_token = [tf.gather(windows["doc_start"], best_window) + tf.gather(p, best_window)
                     - tf.gather(windows["doc_offset"], best_window) for p in (start, end)]
        row_start = tf.cast(context_ids.row_splits[:-1], tf.int32)
        last = tf.maximum(tf.size(char_starts.flat_values) - 1, 0)
        answer_start, answer_end = (
            tf.gather(tf.concat([chars.flat_values, [0]], 0), tf.clip_by_value(row_start + token, 0, last))
            for chars, token in ((char_starts, doc_token[0]), (char_ends, doc_token[1])))
        answer_start, answer_end = (tf.where(has_answer, chars, -1) for chars in (answer_start, answer_end))
        answer = tf.strings.substr(tf.reshape(context, [-1]), tf.maximum(answer_start, 0), answer_end - answer_start,
                                   unit="UTF8_CHAR")
        return {
            "answer": answer,
            "answer_start": answer_start,
            "answer_end": answer_end,
            "score": best_score,
            "null_score": null_score,
            "has_answer": has_answer,
        }

    def serve_choices(self, context, endings):
        """Each ending packed with its context, as run_swag.py packs a choice; the choices' softmax and argmax."""
        num_choices = self.model.num_choices
        endings = _same_rows(context, "context", endings, "endings")
        endings = tf.reshape(endings, [-1, num_choices])  # [B, C]
        packed = self.pack(tf.repeat(tf.reshape(context, [-1]), num_choices), tf.reshape(endings, [-1]))
        inputs = {k: tf.reshape(packed[k], [-1, num_choices, tf.shape(packed[k])[1]])
                  for k in ("token_ids", "segment_ids", "padding_mask")}
        logits = tf.cast(_first_output(self.model(inputs, training=False), "logits"), tf.float32)  # [B, C]
        return {"probabilities": tf.nn.softmax(logits, axis=-1),
                "label_id": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    def serve_token_ids(self, token_ids, segment_ids, padding_mask):
        checks = [tf.debugging.assert_equal(tf.shape(ids), tf.shape(token_ids),
                                            message=f"{name}: expected the shape of token_ids [batch, sequence]")
                  for name, ids in (("segment_ids", segment_ids), ("padding_mask", padding_mask))]
        with tf.control_dependencies(checks):
            token_ids = tf.identity(token_ids)
        outputs = self.model({"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}, training=False)
        if isinstance(outputs, dict):
            return {k: tf.cast(v, tf.float32) for k, v in outputs.items() if not isinstance(v, (list, tuple))}
        if isinstance(outputs, (list, tuple)):
            return {f"output_{i}": tf.cast(v, tf.float32) for i, v in enumerate(outputs)}
        return {"logits": tf.cast(outputs, tf.float32)}


def _text_inputs(exporter):
    inputs = [tf.TensorSpec([None], tf.string, name="text")]
    return inputs + [tf.TensorSpec([None], tf.string, name="text_pair")] if exporter.text_pair else inputs


def _question_inputs(exporter):
    if exporter.max_seq_length <= exporter.max_query_length + 3:
        raise ValueError(f"max_seq_length ({exporter.max_seq_length}) must be greater than max_query_length "
                         f"({exporter.max_query_length}) + 3: a window needs room for the context.")
    return [tf.TensorSpec([None], tf.string, name="question"), tf.TensorSpec([None], tf.string, name="context")]


def _choice_inputs(exporter):
    return [tf.TensorSpec([None], tf.string, name="context"),
            tf.TensorSpec([None, exporter.model.num_choices], tf.string, name="endings")]


def _squad_record(exporter):
    return {"squad": {
        "version_2_with_negative": exporter.null_score_diff_threshold is not None,
        "null_score_diff_threshold": exporter.null_score_diff_threshold,
        "max_answer_length": int(exporter.max_answer_length),
        "n_best_size": exporter.n_best_size,
        "doc_stride": exporter.doc_stride,
        "max_query_length": exporter.max_query_length,
    }}


def _logits(outputs):
    return tf.cast(_first_output(outputs, "logits", "score"), tf.float32)


def _no_record(exporter):
    return {}


# Serving kind (`export_settings.SERVING_KINDS`) -> (exporter -> the raw-string inputs of serving_default, the
# `_Exporter` endpoint answering them, exporter -> the kind's entries of export_config.json).
_SIGNATURES = {
    "backbone": (_text_inputs, _Exporter.serve_texts, _no_record),
    "classifier": (_text_inputs, _Exporter.serve_texts, _no_record),
    "regressor": (_text_inputs, _Exporter.serve_texts, _no_record),
    "token_classifier": (_text_inputs, _Exporter.serve_texts, _no_record),
    "span_qa": (_question_inputs, _Exporter.serve_qa, _squad_record),
    "multiple_choice": (_choice_inputs, _Exporter.serve_choices, _no_record),
    "sentence_encoder": (_text_inputs, _Exporter.serve_embeddings, _no_record),
}
# Serving kind of texts -> (exporter, texts, packed texts, model outputs) -> answers.
_TEXT_ANSWERS = {
    "backbone": _Exporter.serve_features,
    "classifier": lambda exporter, text, packed, outputs: exporter.serve_classes(_logits(outputs)),
    "regressor": lambda exporter, text, packed, outputs: exporter.serve_score(_logits(outputs)),
    "token_classifier": _Exporter.serve_tags,
}
# Serving kind that pools a text's windows -> (exporter, pooled logits) -> answers.
_LOGIT_ANSWERS = {"classifier": _Exporter.serve_classes, "regressor": _Exporter.serve_score}


def export_saved_model(
    model,
    tokenizer,
    export_dir,
    task=None,
    labels=None,
    max_seq_length=128,
    text_pair=False,
    max_answer_length=30,
    null_score_diff_threshold=None,
    n_best_size=20,
    doc_stride=128,
    max_query_length=64,
    long_input="truncate",
    overwrite=False,
):
    """Writes a SavedModel whose `serving_default` takes raw strings (see the module docstring).

    Args:
        model: a Keras model built under the TensorFlow backend: a `BertBackbone` or a task model on it.
        tokenizer: a `BertTokenizer`, `TFBertTokenizer` or a vocab.txt path.
        export_dir: where to write; written under a temporary name and renamed when complete.
        task: one of `TASKS` (a serving kind); None: the model's (`export_settings.serving_kind`).
        labels: label names, by id (classifier, token classifier).
        max_seq_length: tokens per packed input (longer inputs are truncated as the tokenizer does).
        text_pair: the classifier / backbone takes a pair of texts (`text`, `text_pair`).
        max_answer_length: longest QA answer in tokens.
        null_score_diff_threshold: SQuAD v2.0 rule: answer "" when null_score - best_score exceeds it;
            None for a v1.1 model, which always answers.
        n_best_size: QA candidates: the n_best_size best starts x the n_best_size best ends (the original
            run_squad.py's `--n_best_size`); None: every start and end.
        doc_stride: QA: the context's windows of `max_seq_length` tokens, one every `doc_stride` tokens.
        max_query_length: QA: the question cut to `max_query_length` tokens (both run_squad.py's flags).
        long_input: a classifier of single texts: "truncate" (the first `max_seq_length` tokens), or "mean" /
            "max": a text's windows of `max_seq_length` tokens, their logits pooled (run_glue.py's flag).
        overwrite: replace `export_dir` even when it is not an earlier export (`check_export_dir`).

    Examples (skipped by the docstring tests: exporting needs KERAS_BACKEND=tensorflow;
    tests/test_tf_export.py exports and serves every task):

    >>> export_saved_model(classifier, tokenizer, "saved_models/sst2", "classifier",
    ...                    labels=["negative", "positive"])  # doctest: +SKIP
    >>> served = tf.saved_model.load("saved_models/sst2")  # doctest: +SKIP
    >>> served.signatures["serving_default"](text=tf.constant(["A joy to watch."]))  # doctest: +SKIP
    """
    check_export_dir(export_dir, overwrite)
    exporter = _Exporter(model, tokenizer, serving_kind(model) if task is None else task, labels, max_seq_length,
                         text_pair, max_answer_length, null_score_diff_threshold, n_best_size, doc_stride,
                         max_query_length, long_input)
    # Both endpoints are traced once, here, and saved as signatures only (TensorFlow traces a function saved
    # as an attribute once more); the root tracks the tokenizer's lookup tables and the variables they read.
    serve = tf.function(lambda *texts: _serve_any_batch(exporter.serve, *texts),
                        input_signature=exporter.inputs).get_concrete_function()
    token_shape = [None, *model.input["token_ids"].shape[1:]]  # [B, T], or [B, C, T] for multiple choice
    serve_token_ids = tf.function(
        lambda token_ids, segment_ids, padding_mask: exporter.serve_token_ids(token_ids, segment_ids, padding_mask),
        input_signature=[tf.TensorSpec(token_shape, tf.int32, name=name)
                         for name in ("token_ids", "segment_ids", "padding_mask")],
    ).get_concrete_function()
    with file_io.atomic_path(export_dir.rstrip("/")) as tmp:
        save_signatures(tmp, {"serving_default": serve, "serving_token_ids": serve_token_ids},
                        tokenizer=exporter.tokenizer)
        file_io.write_json(os.path.join(tmp, EXPORT_CONFIG_NAME), exporter.record())
    return export_dir


def export_from_directory(model_dir, export_dir, vocab_file=None, max_seq_length=None, text_pair=False,
                          null_score_diff_threshold=None, do_lower_case=None, max_answer_length=None,
                          n_best_size=None, version_2_with_negative=None, doc_stride=None, max_query_length=None,
                          overwrite=False):
    """Exports a directory written by a model's `save_pretrained` (any backend) as a SavedModel.

    The task comes from config.json's `architectures` (the registered model class and its serving kind,
    `export_settings.read_export_settings`), label names from its `id2label`, the tokenizer from `vocab_file` or
    the directory's vocab.txt and `do_lower_case` or the directory's tokenizer_config.json; a directory lacking
    any of them is refused. `max_seq_length` defaults to the directory's (config.json's `max_seq_length`, which
    the recipes write, else tokenizer_config.json's `sequence_length`), else 128. The model is loaded with
    `from_pretrained`, so it answers as it was saved: a token classifier keeps the checkpoint's CRF (a
    feature-based tagger's tags are argmax, as its `decode`); a span QA model answers over the windows and by
    the SQuAD rule of its `decoding_settings` (arguments, else config.json's "squad" entry, else the recipe's
    defaults); a multiple-choice model scores its `num_choices` endings (config.json's; 4 without it); a
    sentence encoder (a sentence-transformers directory) packs at its sentence_bert_config.json's
    `max_seq_length` and returns normalized embeddings.
    Must run under KERAS_BACKEND=tensorflow (`recipes/export_savedmodel.py` sees to it). An `export_dir`
    that is not an earlier export is refused before anything is read, unless `overwrite` (`check_export_dir`).

    Returns:
        (task, export_dir).
    """
    check_export_source(model_dir, export_dir)
    check_export_dir(export_dir, overwrite)
    settings = read_export_settings(model_dir, vocab_file, do_lower_case)
    labels, checkpoint = settings["labels"], settings["checkpoint"]
    tokenizer = BertTokenizer(settings["vocab_file"], do_lower_case=settings["do_lower_case"],
                              normalize=settings["normalize"])
    model, task = load_model(settings)
    max_seq_length = int(max_seq_length or SERVING_KINDS[task].sequence_length(model, checkpoint) or 128)
    given = dict(version_2_with_negative=version_2_with_negative, null_score_diff_threshold=null_score_diff_threshold,
                 max_answer_length=max_answer_length, n_best_size=n_best_size, doc_stride=doc_stride,
                 max_query_length=max_query_length)
    export_saved_model(model, tokenizer, export_dir, task, labels=labels, max_seq_length=max_seq_length,
                       text_pair=text_pair, overwrite=overwrite, **SERVING_KINDS[task].settings(model, checkpoint, given))
    return task, export_dir
