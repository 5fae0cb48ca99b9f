"""From start/end logits to answer texts: the original run_squad.py `write_predictions` / `get_final_text`.

For every example, over all its features (document windows):

1. candidates = the `n_best_size` best start positions x the `n_best_size` best end positions of each
   feature, kept when both lie in the document part of the feature, the start token has its maximum
   context in this feature, end >= start and the span is at most `max_answer_length` tokens;
2. v2.0: the null candidate scores `score_null` = min over features of start_logits[0] + end_logits[0]
   (the [CLS] position) and joins the candidates;
3. candidates are sorted by start_logit + end_logit; the first `n_best_size` distinct answer texts form
   the n-best list, each text mapped back to the original context by `get_final_text` (on the span's doc
   tokens joined by `squad_data.join_doc_tokens`: by one space, or none between the adjacent doc tokens of
   CJK text, so a Chinese answer is the context's own characters, [UNK] characters included), with
   probabilities = softmax of the total scores over the n-best list;
4. v1.1: the answer is the top of the n-best list. v2.0: with `best_non_null` the best non-empty entry,
   the answer is "" when `score_null - (best_non_null.start_logit + best_non_null.end_logit)` is greater
   than `null_score_diff_threshold`, else the best non-null text. That difference is the example's "null
   odds" (null_odds.json, the na_probs of the official v2.0 evaluation).

When the only candidate is the null one, an "empty" entry with logits 0 is added first (the fix of the
original's crash in that case), so `best_non_null` always exists.

Each final answer also gets its character span in the context (`start_char`, `end_char`, end exclusive),
e.g. to highlight it when serving.
"""

import collections
import dataclasses
import math
import os

import keras
import numpy as np

from keras_bert_impl.data.squad_data import is_spaced, join_doc_tokens
from keras_bert_impl.tokenizers.basic_tokenizer import basic_tokenize
from keras_bert_impl.utils.file_io import write_json
from keras_bert_impl.utils.progress import progress_bar

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)


@dataclasses.dataclass
class SquadPredictions:
    """The outputs of `compute_predictions`.

    Attributes:
        predictions: {qas_id: answer text} ("" = no answer, v2.0).
        nbest: {qas_id: list of dicts "text", "probability", "start_logit", "end_logit", "start_char",
            "end_char"} (char offsets in the context, end exclusive; None for "" and "empty").
        null_odds: {qas_id: score_null - best non-null score} (v2.0 only, else empty).
        answer_char_spans: {qas_id: (start_char, end_char) of the answer in the context, or None for ""}.
    """

    predictions: dict
    nbest: dict
    null_odds: dict
    answer_char_spans: dict


def raw_results(features, start_logits, end_logits):
    """Pairs features with rows of the model's outputs [N, T] (the original's RawResult list)."""
    if len(features) != len(start_logits) or len(features) != len(end_logits):
        raise ValueError(
            f"{len(features)} features but {len(start_logits)} start / {len(end_logits)} end logit rows."
        )
    return [
        RawResult(f.unique_id, [float(v) for v in s], [float(v) for v in e])
        for f, s, e in zip(features, start_logits, end_logits)
    ]


def predict_raw_results(model, features, batch_size=32, dynamic_padding=True, pad_to_multiple_of=8, progress=False):
    """Runs `model` (a `BertSpanQA`) on features; returns their `RawResult`s, logits cut to each feature's
    real length (`len(feature.tokens)`); `progress`: show a progress bar over the batches.

    With `dynamic_padding` (default) the features are sorted by length and each batch is padded to its own
    longest feature (`keras_bert_impl.data.batching`), which gives the same logits at the real positions.
    Padding positions can never be a valid answer; the one difference from the original, which keeps
    the logits of all `max_seq_length` positions, is that here padding positions take no places among
    the `n_best_size` best start/end indexes (so, rarely, one more valid candidate is considered).
    """
    from keras_bert_impl.data import batching
    from keras_bert_impl.data.squad_features import features_to_arrays, features_to_lists

    if not features:
        return []
    if dynamic_padding:
        x, _ = features_to_lists(features)
        plan = batching.plan_batches(batching.example_lengths(x), batch_size, shuffle=False, sort_by_length=True)
    else:
        x, _ = features_to_arrays(features)
        plan = [np.arange(i, min(i + batch_size, len(features))) for i in range(0, len(features), batch_size)]
    start_rows, end_rows = [None] * len(features), [None] * len(features)
    bar = progress_bar(len(plan), unit_name="batch") if progress else None
    for step, indices in enumerate(plan):
        if dynamic_padding:
            batch = batching.pad_batch(x, indices, pad_to_multiple_of=pad_to_multiple_of)  # [B, T_batch]
        else:
            batch = {k: v[indices] for k, v in x.items()}  # [B, max_seq_length]
        out = model.predict_on_batch(batch)
        start = np.asarray(keras.ops.convert_to_numpy(out["start_logits"]), "float32")  # [B, T_batch]
        end = np.asarray(keras.ops.convert_to_numpy(out["end_logits"]), "float32")  # [B, T_batch]
        for row, i in enumerate(indices):
            n = len(features[i].tokens)
            start_rows[i], end_rows[i] = start[row, :n], end[row, :n]
        if bar is not None:
            bar.update(step + 1)
    return raw_results(features, start_rows, end_rows)


def _get_best_indexes(logits, n_best_size):
    """Indexes of the `n_best_size` largest logits (ties: the lower index first, as the original's sort)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def _compute_softmax(scores):
    """Softmax of a list of floats (the original's, max-subtracted)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(s - max_score) for s in scores]
    total = sum(exp_scores)
    return [s / total for s in exp_scores]


def _strip_spaces(text):
    """The text without spaces, and {index in it: index in `text`}."""
    ns_chars = []
    ns_to_s_map = {}
    for i, c in enumerate(text):
        if c == " ":
            continue
        ns_to_s_map[len(ns_chars)] = i
        ns_chars.append(c)
    return "".join(ns_chars), ns_to_s_map


def final_text_span(pred_text, orig_text, do_lower_case):
    """Where the tokenized prediction lies in `orig_text`, as (start, end) with end exclusive.

    `pred_text` is the predicted WordPiece tokens de-tokenized (e.g. "steve smith"); `orig_text` the
    original doc tokens it came from (e.g. "Steve Smith's"). The original's trick: tokenize `orig_text`
    with the BasicTokenizer, find `pred_text` in it, and map the found characters back to `orig_text`
    through both texts with spaces removed (they are the same characters when the lengths agree). When any
    step fails the whole `orig_text` is the answer: (0, len(orig_text)).
    """
    whole = (0, len(orig_text))
    tok_text = " ".join(basic_tokenize(orig_text, do_lower_case=do_lower_case))
    start_position = tok_text.find(pred_text)
    if start_position == -1:
        return whole
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        return whole  # Lower-casing / accent stripping changed the length: no character alignment.
    tok_s_to_ns_map = {v: k for k, v in tok_ns_to_s_map.items()}

    orig_start_position = None
    if start_position in tok_s_to_ns_map:
        orig_start_position = orig_ns_to_s_map.get(tok_s_to_ns_map[start_position])
    if orig_start_position is None:
        return whole
    orig_end_position = None
    if end_position in tok_s_to_ns_map:
        orig_end_position = orig_ns_to_s_map.get(tok_s_to_ns_map[end_position])
    if orig_end_position is None:
        return whole
    return orig_start_position, orig_end_position + 1


def get_final_text(pred_text, orig_text, do_lower_case):
    """Projects the tokenized prediction back to the original text (the original's `get_final_text`).

    Args:
        pred_text: the predicted tokens joined, "##" removed, e.g. "steve smith".
        orig_text: the doc tokens of the span joined by spaces, e.g. "Steve Smith's" (those of a CJK span
            without spaces, `squad_data.join_doc_tokens`).
        do_lower_case: the tokenizer's setting.

    Returns:
        The matching substring of `orig_text`, e.g. "Steve Smith", or all of `orig_text` when the
        alignment fails.

    Examples:

    >>> get_final_text("steve smith", "Steve Smith's", do_lower_case=True)
    'Steve Smith'

    Tokens that are not the text's (an [UNK]) give the whole span, the context's characters:

    >>> get_final_text("[UNK] 州", "杭州", do_lower_case=True)
    '杭州'
    """
    start, end = final_text_span(pred_text, orig_text, do_lower_case)
    return orig_text[start:end]


def _orig_text_char_to_context(example, orig_doc_start, orig_doc_end, position):
    """The context index of character `position` of the doc tokens `orig_doc_start`..`orig_doc_end` joined
    (`squad_data.join_doc_tokens`)."""
    offset = 0
    for word_index in range(orig_doc_start, orig_doc_end + 1):
        if word_index > orig_doc_start and is_spaced(example.doc_tokens, example.doc_token_char_starts, word_index):
            offset += 1  # the joining space maps to the start of the next word
        word = example.doc_tokens[word_index]
        if position < offset + len(word):
            return example.doc_token_char_starts[word_index] + max(position - offset, 0)
        offset += len(word)
    last = example.doc_tokens[orig_doc_end]
    return example.doc_token_char_starts[orig_doc_end] + len(last)


# The null odds of a question whose context is empty: the original's initial `score_null`, "large and
# positive", so the null answer wins at any threshold.
_NO_CONTEXT_NULL_ODDS = 1000000.0


def compute_predictions(
    examples,
    features,
    results,
    n_best_size=20,
    max_answer_length=30,
    do_lower_case=True,
    version_2_with_negative=False,
    null_score_diff_threshold=0.0,
):
    """Answers, n-best lists and null odds from the model's logits (the original `write_predictions`).

    Args:
        examples: the `SquadExample`s.
        features: their `InputFeature`s (from `convert_examples_to_features`, `is_training=False`).
        results: `RawResult`s (unique_id, start_logits, end_logits), one per feature (see `raw_results`).
        n_best_size: start and end positions tried per feature, and the length of the n-best lists.
        max_answer_length: the longest answer, in WordPiece tokens.
        do_lower_case: the tokenizer's setting (for `get_final_text`).
        version_2_with_negative: SQuAD v2.0: consider the null answer.
        null_score_diff_threshold: v2.0: answer "" when score_null - best_non_null > this.

    Returns:
        `SquadPredictions`. A question without features (an empty context) is answered "" (the null
        answer), with a one-entry n-best list of "".
    """
    example_index_to_features = collections.defaultdict(list)
    for feature in features:
        example_index_to_features[feature.example_index].append(feature)
    unique_id_to_result = {result.unique_id: result for result in results}

    all_predictions = {}
    all_nbest = {}
    null_odds = {}
    answer_char_spans = {}
    for example_index, example in enumerate(examples):
        example_features = example_index_to_features[example_index]
        if not example_features:  # an empty context has no window: nothing can be answered
            all_predictions[example.qas_id] = ""
            all_nbest[example.qas_id] = [{"text": "", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0,
                                          "start_char": None, "end_char": None}]
            if version_2_with_negative:
                null_odds[example.qas_id] = _NO_CONTEXT_NULL_ODDS
            answer_char_spans[example.qas_id] = None
            continue
        prelim_predictions = []
        score_null = 1000000  # large and positive, as the original
        min_null_feature_index = 0
        null_start_logit = 0.0
        null_end_logit = 0.0
        for feature_index, feature in enumerate(example_features):
            if feature.unique_id not in unique_id_to_result:
                raise KeyError(f"no result for feature {feature.unique_id} of question {example.qas_id!r}.")
            result = unique_id_to_result[feature.unique_id]
            start_indexes = _get_best_indexes(result.start_logits, n_best_size)
            end_indexes = _get_best_indexes(result.end_logits, n_best_size)
            if version_2_with_negative:
                feature_null_score = result.start_logits[0] + result.end_logits[0]
                if feature_null_score < score_null:
                    score_null = feature_null_score
                    min_null_feature_index = feature_index
                    null_start_logit = result.start_logits[0]
                    null_end_logit = result.end_logits[0]
            for start_index in start_indexes:
                for end_index in end_indexes:
                    # Spans in the question, in padding, or starting where another window gives the start
                    # token more context are invalid.
                    if start_index >= len(feature.tokens) or end_index >= len(feature.tokens):
                        continue
                    if start_index not in feature.token_to_orig_map or end_index not in feature.token_to_orig_map:
                        continue
                    if not feature.token_is_max_context.get(start_index, False):
                        continue
                    if end_index < start_index:
                        continue
                    if end_index - start_index + 1 > max_answer_length:
                        continue
                    prelim_predictions.append(
                        _PrelimPrediction(
                            feature_index=feature_index,
                            start_index=start_index,
                            end_index=end_index,
                            start_logit=result.start_logits[start_index],
                            end_logit=result.end_logits[end_index],
                        )
                    )
        if version_2_with_negative:
            prelim_predictions.append(
                _PrelimPrediction(
                    feature_index=min_null_feature_index,
                    start_index=0,
                    end_index=0,
                    start_logit=null_start_logit,
                    end_logit=null_end_logit,
                )
            )
        prelim_predictions = sorted(prelim_predictions, key=lambda x: x.start_logit + x.end_logit, reverse=True)

        seen_predictions = set()
        nbest = []  # dicts: text, start_logit, end_logit, start_char, end_char
        for pred in prelim_predictions:
            if len(nbest) >= n_best_size:
                break
            feature = example_features[pred.feature_index]
            if pred.start_index > 0:  # a non-null prediction
                tok_tokens = feature.tokens[pred.start_index : pred.end_index + 1]
                orig_doc_start = feature.token_to_orig_map[pred.start_index]
                orig_doc_end = feature.token_to_orig_map[pred.end_index]
                # De-tokenize WordPieces: "##" continuations glued, spaces normalized.
                tok_text = " ".join(tok_tokens).replace(" ##", "").replace("##", "")
                tok_text = " ".join(tok_text.strip().split())
                orig_text = join_doc_tokens(example.doc_tokens, example.doc_token_char_starts, orig_doc_start,
                                            orig_doc_end)
                start, end = final_text_span(tok_text, orig_text, do_lower_case)
                final_text = orig_text[start:end]
                if final_text in seen_predictions:
                    continue
                seen_predictions.add(final_text)
                start_char = end_char = None
                if example.doc_token_char_starts is not None:
                    start_char = _orig_text_char_to_context(example, orig_doc_start, orig_doc_end, start)
                    end_char = _orig_text_char_to_context(example, orig_doc_start, orig_doc_end, end - 1) + 1
            else:
                final_text = ""
                seen_predictions.add(final_text)
                start_char = end_char = None
            nbest.append(
                {"text": final_text, "start_logit": pred.start_logit, "end_logit": pred.end_logit,
                 "start_char": start_char, "end_char": end_char}
            )

        if version_2_with_negative:
            # The null answer is always in the n-best list of v2.0.
            if "" not in seen_predictions:
                nbest.append({"text": "", "start_logit": null_start_logit, "end_logit": null_end_logit,
                              "start_char": None, "end_char": None})
            # When the null answer is the only candidate, a nonce non-null entry avoids the original's crash
            # on `best_non_null_entry` being None.
            if len(nbest) == 1:
                nbest.insert(0, {"text": "empty", "start_logit": 0.0, "end_logit": 0.0,
                                 "start_char": None, "end_char": None})
        # In very rare cases (v1.1) no candidate is valid: a nonce prediction, as the original.
        if not nbest:
            nbest.append({"text": "empty", "start_logit": 0.0, "end_logit": 0.0, "start_char": None, "end_char": None})

        total_scores = [entry["start_logit"] + entry["end_logit"] for entry in nbest]
        best_non_null_entry = next((entry for entry in nbest if entry["text"]), None)
        probs = _compute_softmax(total_scores)
        nbest_json = []
        for entry, probability in zip(nbest, probs):
            nbest_json.append(
                {
                    "text": entry["text"],
                    "probability": probability,
                    "start_logit": float(entry["start_logit"]),
                    "end_logit": float(entry["end_logit"]),
                    "start_char": entry["start_char"],
                    "end_char": entry["end_char"],
                }
            )
        all_nbest[example.qas_id] = nbest_json

        if not version_2_with_negative:
            chosen = nbest_json[0]
        else:
            score_diff = score_null - best_non_null_entry["start_logit"] - best_non_null_entry["end_logit"]
            null_odds[example.qas_id] = float(score_diff)
            if score_diff > null_score_diff_threshold:
                chosen = {"text": "", "start_char": None, "end_char": None}
            else:
                chosen = best_non_null_entry
        all_predictions[example.qas_id] = chosen["text"]
        answer_char_spans[example.qas_id] = (
            None if chosen["start_char"] is None else (chosen["start_char"], chosen["end_char"])
        )
    return SquadPredictions(all_predictions, all_nbest, null_odds, answer_char_spans)


def write_predictions(output_dir, squad_predictions):
    """Writes predictions.json, nbest_predictions.json and (v2.0, when there are null odds) null_odds.json
    into `output_dir`, each atomically. Returns the list of paths written."""
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, "predictions.json"), os.path.join(output_dir, "nbest_predictions.json")]
    write_json(paths[0], squad_predictions.predictions)
    write_json(paths[1], squad_predictions.nbest)
    if squad_predictions.null_odds:
        paths.append(os.path.join(output_dir, "null_odds.json"))
        write_json(paths[2], squad_predictions.null_odds)
    return paths
