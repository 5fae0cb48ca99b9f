"""From a classifier's logits to its answers: the rule of the GLUE and SWAG prediction files, of the
text-classification and multiple-choice pipelines and (in the graph, `export/tf_saved_model.py`) of the
SavedModel's classifier and multiple-choice signatures.

- `window_logits`: a text's logits; with `--long_input` mean / max its windows' logits pooled
  (`data.text_classification_data.pool_window_logits`).
- `class_predictions`: the predicted class of every example, the argmax of its logits (the first class on a
  tie, as numpy's argmax); a regression's score is its one logit.
- `class_scores`: the scores a user reads: softmax probabilities over the classes (or over the choices of
  a multiple-choice example), the sigmoid of a one-output classifier, or the logits themselves ("none": a
  regression's score), as transformers' text-classification pipeline computes them (`function_to_apply`).
- `ranked`: the `top_k` (label, score) pairs of every example, best first.

Examples:

>>> logits = [[0.0, 2.0], [1.0, -1.0]]
>>> class_predictions(logits, regression=False).tolist()
[1, 0]
>>> [[(label, round(score, 3)) for label, score in row] for row in ranked(class_scores(logits), ["neg", "pos"], 1)]
[[('pos', 0.881)], [('neg', 0.881)]]
"""

import numpy as np

from keras_bert_impl.data.text_classification_data import pool_window_logits

FUNCTIONS = ("softmax", "sigmoid", "none")


def window_logits(logits, example_index, num_examples, long_input="truncate"):
    """Each example's logits [N, C]: `logits` themselves when every example is one row (`example_index`
    None, or `long_input` "truncate"), else its windows' pooled by `long_input` ("mean" or "max")."""
    logits = np.asarray(logits, "float32")
    if example_index is None or long_input == "truncate":
        return logits
    return pool_window_logits(logits, example_index, num_examples, long_input)


def class_predictions(logits, regression=False):
    """The predicted class id int64 [N] of every row of `logits` [N, C] (argmax, the first on a tie), or a
    regression's float scores [N] (its one logit)."""
    logits = np.asarray(logits, "float32")
    return logits[:, 0] if regression else np.argmax(logits, axis=-1)


def default_function(num_classes, regression=False):
    """transformers' default `function_to_apply`: "none" for a regression, "sigmoid" for one output,
    else "softmax"."""
    if regression:
        return "none"
    return "sigmoid" if num_classes == 1 else "softmax"


def class_scores(logits, function="softmax"):
    """Scores float64 [N, C] of logits [N, C]: "softmax" over the last axis (max-subtracted), "sigmoid", or
    "none" (the logits)."""
    logits = np.asarray(logits, "float64")
    if function == "softmax":
        shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return shifted / shifted.sum(axis=-1, keepdims=True)
    if function == "sigmoid":
        return 1.0 / (1.0 + np.exp(-logits))
    if function == "none":
        return logits
    raise ValueError(f"function_to_apply must be one of {FUNCTIONS}, got {function!r}.")


def ranked(scores, label_names, top_k=1):
    """Per row of `scores` [N, C], the `top_k` (label name, score) pairs, highest score first (a tie: the
    lower class id first); `top_k` None: every class."""
    scores = np.asarray(scores, "float64")
    rows = []
    for row in scores:
        order = np.argsort(-row, kind="stable")[: None if top_k is None else int(top_k)]
        rows.append([(label_names[i], float(row[i])) for i in order])
    return rows
