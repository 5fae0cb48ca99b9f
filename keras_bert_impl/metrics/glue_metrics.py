"""GLUE evaluation metrics (Wang et al., 2018), in numpy and scipy.

`glue_task_metrics(task_name, predictions, labels)` returns the numbers the GLUE benchmark
reports for each task:

=================================  ==========================================================
task                               metrics
=================================  ==========================================================
cola, ax (diagnostic)              matthews_corrcoef
sst2, qnli, rte, wnli, mnli(-m/mm)  accuracy
mrpc, qqp                          accuracy, f1 (positive class 1), accuracy_and_f1 (average)
stsb                               pearson, spearmanr, pearson_and_spearman (average)
=================================  ==========================================================
"""

import numpy as np


def _as_label_array(values, name):
    values = np.asarray(values)
    if values.ndim == 2:
        # Logits or probabilities [N, num_classes]: take the arg-max class.
        values = np.argmax(values, axis=-1)
    if values.ndim != 1:
        raise ValueError(f"{name} must be 1-D labels (or 2-D scores), got shape {values.shape}.")
    return values


def _check_lengths(predictions, labels):
    if len(predictions) != len(labels):
        raise ValueError(f"predictions and labels differ in length: {len(predictions)} != {len(labels)}.")
    if len(labels) == 0:
        raise ValueError("predictions and labels are empty.")


def _label_arrays(predictions, labels):
    """(predictions, labels) as class-id arrays [N] of the same length (an [N, C] prediction is argmaxed)."""
    predictions = _as_label_array(predictions, "predictions")
    labels = _as_label_array(labels, "labels")
    _check_lengths(predictions, labels)
    return predictions, labels


def accuracy(predictions, labels):
    """Fraction of predictions equal to the labels.

    Args:
        predictions: Predicted class ids [N], or scores [N, C] (arg-max is taken).
        labels: Gold class ids [N].

    Returns:
        float in [0, 1].

    Examples:

    >>> accuracy([1, 0, 1, 1], [1, 0, 0, 1])
    0.75
    """
    predictions, labels = _label_arrays(predictions, labels)
    return float(np.mean(predictions == labels))


def f1(predictions, labels, positive_label=1):
    """Binary F1 of the positive class (sklearn's `f1_score(average="binary")`).

    `F1 = 2 TP / (2 TP + FP + FN)`; 0.0 when there is no positive prediction nor label.

    Args:
        predictions: Predicted class ids [N], or scores [N, C].
        labels: Gold class ids [N].
        positive_label: The class whose F1 is reported (1 for MRPC/QQP "equivalent/duplicate").

    Returns:
        float in [0, 1].

    Examples:

    >>> round(f1([1, 1, 0, 0], [1, 0, 1, 0]), 4)
    0.5
    """
    predictions, labels = _label_arrays(predictions, labels)
    pred_pos = predictions == positive_label
    true_pos = labels == positive_label
    tp = float(np.sum(pred_pos & true_pos))
    fp = float(np.sum(pred_pos & ~true_pos))
    fn = float(np.sum(~pred_pos & true_pos))
    denominator = 2 * tp + fp + fn
    return 0.0 if denominator == 0 else 2 * tp / denominator


def matthews_corrcoef(predictions, labels):
    """Matthews correlation coefficient (multi-class R_K of Gorodkin 2004, as in sklearn).

    A float in [-1, 1]; 0.0 when it is undefined (a constant prediction or label vector). Arguments as
    `accuracy`'s.

    >>> round(matthews_corrcoef([1, 1, 0, 0], [1, 0, 0, 0]), 4)
    0.5774
    """
    predictions, labels = _label_arrays(predictions, labels)
    classes, encoded = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    true_ids, pred_ids = encoded[: len(labels)], encoded[len(labels) :]
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    np.add.at(confusion, (true_ids, pred_ids), 1.0)
    t_sum = confusion.sum(axis=1)
    p_sum = confusion.sum(axis=0)
    n_correct = np.trace(confusion)
    n_samples = p_sum.sum()
    cov_ytyp = n_correct * n_samples - np.dot(t_sum, p_sum)
    cov_ypyp = n_samples**2 - np.dot(p_sum, p_sum)
    cov_ytyt = n_samples**2 - np.dot(t_sum, t_sum)
    if cov_ypyp * cov_ytyt == 0:
        return 0.0
    return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson(predictions, labels):
    """Pearson correlation (scipy.stats.pearsonr) between real-valued predictions and labels.

    Args:
        predictions: Predicted scores [N] (or [N, 1]).
        labels: Gold scores [N].

    Returns:
        float in [-1, 1] (nan if an input is constant).

    Examples:

    >>> round(pearson([1.0, 2.0, 3.0], [2.0, 4.0, 7.0]), 4)
    0.9934
    """
    import scipy.stats  # here, not at the top: 0.8 s that a recipe's --help does without

    return _correlation(scipy.stats.pearsonr, predictions, labels)


def spearman(predictions, labels):
    """Spearman rank correlation (scipy.stats.spearmanr); arguments and result as `pearson`'s.

    >>> spearman([1.0, 2.0, 3.0], [2.0, 4.0, 7.0])
    1.0
    """
    import scipy.stats

    return _correlation(scipy.stats.spearmanr, predictions, labels)


def _correlation(statistic, predictions, labels):
    """`statistic` (a scipy.stats correlation) of the flattened float64 predictions and labels, as a float."""
    predictions = np.asarray(predictions, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    _check_lengths(predictions, labels)
    return float(statistic(predictions, labels)[0])


_TASK_ALIASES = {
    "cola": "cola",
    "sst2": "sst2",
    "mrpc": "mrpc",
    "qqp": "qqp",
    "stsb": "stsb",
    "sts": "stsb",
    "mnli": "mnli",
    "mnlim": "mnli",
    "mnlimatched": "mnli",
    "mnlimm": "mnli",
    "mnlimismatched": "mnli",
    "qnli": "qnli",
    "rte": "rte",
    "wnli": "wnli",
    "ax": "ax",
    "diagnostic": "ax",
}

GLUE_TASKS = ("cola", "sst2", "mrpc", "qqp", "stsb", "mnli", "qnli", "rte", "wnli", "ax")


def _canonical_task(task_name):
    key = "".join(ch for ch in task_name.lower() if ch.isalnum())
    if key not in _TASK_ALIASES:
        raise ValueError(f"Unknown GLUE task {task_name!r}; expected one of {GLUE_TASKS}.")
    return _TASK_ALIASES[key]


def glue_task_metrics(task_name, predictions, labels):
    """The metrics the GLUE benchmark reports for `task_name`.

    Args:
        task_name: A GLUE task, case- and punctuation-insensitive: "cola", "sst-2"/"sst2",
            "mrpc", "qqp", "sts-b"/"stsb", "mnli" (also "mnli-m", "mnli-mm", "mnli_matched",
            "mnli_mismatched"), "qnli", "rte", "wnli", "ax".
        predictions: Predicted class ids [N] or class scores [N, C] (arg-max is taken); for
            STS-B real-valued scores [N] (or [N, 1]).
        labels: Gold labels [N].

    Returns:
        dict of floats:
        cola/ax -> {"matthews_corrcoef"};
        sst2/mnli/qnli/rte/wnli -> {"accuracy"};
        mrpc/qqp -> {"accuracy", "f1", "accuracy_and_f1"};
        stsb -> {"pearson", "spearmanr", "pearson_and_spearman"}.

    Examples:

    >>> glue_task_metrics("MRPC", [1, 1, 0, 1], [1, 0, 0, 1])
    {'accuracy': 0.75, 'f1': 0.8, 'accuracy_and_f1': 0.775}
    """
    task = _canonical_task(task_name)
    if task in ("cola", "ax"):
        return {"matthews_corrcoef": matthews_corrcoef(predictions, labels)}
    if task in ("sst2", "mnli", "qnli", "rte", "wnli"):
        return {"accuracy": accuracy(predictions, labels)}
    if task in ("mrpc", "qqp"):
        acc = accuracy(predictions, labels)
        f1_value = f1(predictions, labels)
        return {"accuracy": acc, "f1": f1_value, "accuracy_and_f1": (acc + f1_value) / 2.0}
    # stsb
    pearson_value = pearson(predictions, labels)
    spearman_value = spearman(predictions, labels)
    return {
        "pearson": pearson_value,
        "spearmanr": spearman_value,
        "pearson_and_spearman": (pearson_value + spearman_value) / 2.0,
    }
