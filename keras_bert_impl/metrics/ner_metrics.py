"""Entity-level NER evaluation identical to conlleval / seqeval's default (conlleval) mode.

Chunks are found with conlleval's `startOfChunk` / `endOfChunk` rules, which accept IOB1,
IOB2 (BIO) and IOBES tags alike:

* `B-X` and `S-X` always start a chunk;
* `I-X` / `E-X` start a chunk after `O`, after `E-`/`S-`, or after a tag of a different type
  (so IOB1's `I-X` opens an entity);
* a chunk ends before `B-`/`S-`/`O`, after `E-`/`S-`, or when the type changes.

A tag is split at its first "-" (`"B-PER"` -> prefix "B", type "PER"); a tag without a type
(e.g. `"B"`) has type "_" as in seqeval. When a list of sentences is given, the sentences are
joined with an "O" between them, so no chunk crosses a sentence boundary.

Scores are micro-averaged over entities: precision = correct / predicted chunks, recall =
correct / gold chunks, F1 their harmonic mean (0 when undefined), exactly as conlleval's
"overall" line and seqeval's `precision_score` / `recall_score` / `f1_score`.
"""

from collections import defaultdict


def _flatten(sequences):
    if len(sequences) and isinstance(sequences[0], (list, tuple)):
        flat = []
        for sentence in sequences:
            flat.extend(sentence)
            flat.append("O")
        return flat
    return list(sequences)


def _split_tag(tag):
    prefix = tag[0] if tag else "O"
    type_ = tag[1:].split("-", maxsplit=1)[-1] if tag else ""
    return prefix, (type_ or "_")


def _end_of_chunk(prev_tag, tag, prev_type, type_):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _start_of_chunk(prev_tag, tag, prev_type, type_):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def get_entities(tags):
    """Chunks of a tag sequence (or of a list of tag sequences) as `(type, start, end)` triples.

    Args:
        tags: A list of tag strings, or a list of sentences (lists of tag strings). For a list of
            sentences, offsets count over the sentences joined with one "O" between them.

    Returns:
        List of `(type, start, end)` with inclusive `end`, in order of appearance.

    Examples:

    >>> get_entities(["B-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-ORG"])
    [('PER', 0, 1), ('LOC', 3, 3), ('LOC', 4, 4), ('ORG', 5, 5)]
    >>> get_entities(["S-PER", "B-LOC", "E-LOC"])
    [('PER', 0, 0), ('LOC', 1, 2)]
    """
    tags = _flatten(tags)
    prev_tag, prev_type = "O", ""
    begin = 0
    chunks = []
    for i, chunk in enumerate(tags + ["O"]):
        tag, type_ = _split_tag(chunk)
        if _end_of_chunk(prev_tag, tag, prev_type, type_):
            chunks.append((prev_type, begin, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return chunks


def _safe_divide(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _prf(correct, predicted, gold):
    precision = _safe_divide(correct, predicted)
    recall = _safe_divide(correct, gold)
    f1 = _safe_divide(2 * precision * recall, precision + recall)
    return precision, recall, f1


def ner_scores(y_true, y_pred):
    """Entity-level micro precision / recall / F1 and per-type scores (conlleval rules).

    Args:
        y_true: Gold tags: a list of sentences (lists of tag strings) or one flat list.
        y_pred: Predicted tags, same structure and lengths as `y_true`.

    Returns:
        dict with "precision", "recall", "f1" (micro-averaged floats in [0, 1]), "num_gold",
        "num_predicted", "num_correct" (ints), "accuracy" (token accuracy, as conlleval
        prints) and "per_type": {type: {"precision", "recall", "f1", "support"}} where
        `support` is the number of gold chunks of that type; types seen only in predictions
        are included with support 0.

    Examples:

    >>> scores = ner_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    >>> scores["precision"], scores["recall"], scores["f1"]
    (0.5, 0.5, 0.5)
    >>> scores["per_type"]["PER"]["f1"], scores["per_type"]["LOC"]["support"]
    (1.0, 1)
    """
    if len(y_true) != len(y_pred):
        raise ValueError(f"y_true and y_pred differ in length: {len(y_true)} != {len(y_pred)}.")
    flat_true, flat_pred = _flatten(y_true), _flatten(y_pred)
    if len(flat_true) != len(flat_pred):
        raise ValueError("y_true and y_pred sentences differ in length.")

    gold_by_type, pred_by_type = defaultdict(set), defaultdict(set)
    for type_, start, end in get_entities(flat_true):
        gold_by_type[type_].add((start, end))
    for type_, start, end in get_entities(flat_pred):
        pred_by_type[type_].add((start, end))

    per_type = {}
    total_correct = total_gold = total_pred = 0
    for type_ in sorted(set(gold_by_type) | set(pred_by_type)):
        gold, pred = gold_by_type[type_], pred_by_type[type_]
        correct = len(gold & pred)
        precision, recall, f1 = _prf(correct, len(pred), len(gold))
        per_type[type_] = {"precision": precision, "recall": recall, "f1": f1, "support": len(gold)}
        total_correct += correct
        total_gold += len(gold)
        total_pred += len(pred)

    precision, recall, f1 = _prf(total_correct, total_pred, total_gold)
    # Token accuracy over the real tokens (the "O" inserted between sentences is not counted).
    tokens_true = [t for sentence in (y_true if _is_nested(y_true) else [y_true]) for t in sentence]
    tokens_pred = [t for sentence in (y_pred if _is_nested(y_pred) else [y_pred]) for t in sentence]
    accuracy = _safe_divide(sum(a == b for a, b in zip(tokens_true, tokens_pred)), len(tokens_true))
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "num_gold": total_gold,
        "num_predicted": total_pred,
        "num_correct": total_correct,
        "accuracy": accuracy,
        "per_type": per_type,
    }


def _is_nested(sequences):
    return len(sequences) > 0 and isinstance(sequences[0], (list, tuple))


def ner_precision(y_true, y_pred):
    """Micro-averaged entity precision (correct chunks / predicted chunks), a float; arguments as `ner_f1`'s.

    >>> ner_precision([["B-PER", "O"]], [["B-PER", "B-LOC"]])
    0.5
    """
    return ner_scores(y_true, y_pred)["precision"]


def ner_recall(y_true, y_pred):
    """Micro-averaged entity recall (correct chunks / gold chunks), a float; arguments as `ner_f1`'s.

    >>> ner_recall([["B-PER", "B-LOC"]], [["B-PER", "O"]])
    0.5
    """
    return ner_scores(y_true, y_pred)["recall"]


def ner_f1(y_true, y_pred):
    """Micro-averaged entity F1 (conlleval's "FB1", seqeval's `f1_score`).

    Args:
        y_true: Gold tags (list of sentences or flat list).
        y_pred: Predicted tags.

    Returns:
        float.

    Examples:

    >>> round(ner_f1([["B-PER", "B-LOC"]], [["B-PER", "O"]]), 4)
    0.6667
    """
    return ner_scores(y_true, y_pred)["f1"]
