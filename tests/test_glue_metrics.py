"""GLUE metrics against sklearn.metrics / scipy.stats and hand-computed values."""

import numpy as np
import pytest
import scipy.stats
from sklearn import metrics as skm

from keras_bert_impl.metrics import (
    GLUE_TASKS,
    accuracy,
    f1,
    glue_task_metrics,
    matthews_corrcoef,
    pearson,
    spearman,
)

pytestmark = pytest.mark.backend_independent

LABELS = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1])
PREDS = np.array([1, 0, 0, 1, 1, 0, 1, 0, 1, 0])


def test_hand_computed_binary_case():
    # TP = 4, TN = 3, FP = 1, FN = 2.
    assert accuracy(PREDS, LABELS) == pytest.approx(0.7)
    assert f1(PREDS, LABELS) == pytest.approx(2 * 4 / (2 * 4 + 1 + 2))
    expected_mcc = (4 * 3 - 1 * 2) / np.sqrt((4 + 1) * (4 + 2) * (3 + 1) * (3 + 2))
    assert matthews_corrcoef(PREDS, LABELS) == pytest.approx(expected_mcc)


@pytest.mark.parametrize("seed", range(5))
def test_classification_metrics_match_sklearn(seed):
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 2, size=50)
    preds = np.where(rng.rand(50) < 0.7, labels, 1 - labels)
    assert accuracy(preds, labels) == pytest.approx(skm.accuracy_score(labels, preds))
    assert f1(preds, labels) == pytest.approx(skm.f1_score(labels, preds))
    assert matthews_corrcoef(preds, labels) == pytest.approx(skm.matthews_corrcoef(labels, preds))
    # Three classes (MNLI-like) for accuracy and the multi-class MCC.
    labels3 = rng.randint(0, 3, size=60)
    preds3 = np.where(rng.rand(60) < 0.6, labels3, rng.randint(0, 3, size=60))
    assert accuracy(preds3, labels3) == pytest.approx(skm.accuracy_score(labels3, preds3))
    assert matthews_corrcoef(preds3, labels3) == pytest.approx(skm.matthews_corrcoef(labels3, preds3))


def test_degenerate_cases_match_sklearn():
    labels = np.array([0, 1, 0, 1])
    constant = np.zeros(4, int)
    assert matthews_corrcoef(constant, labels) == skm.matthews_corrcoef(labels, constant) == 0.0
    with pytest.warns(Warning):
        expected_f1 = skm.f1_score(constant, constant)
    assert f1(constant, constant) == expected_f1 == 0.0
    assert matthews_corrcoef(labels, labels) == pytest.approx(1.0)
    assert matthews_corrcoef(1 - labels, labels) == pytest.approx(-1.0)


def test_correlations_match_scipy_including_ties():
    rng = np.random.RandomState(0)
    labels = np.round(rng.uniform(0, 5, size=40) * 2) / 2  # STS-B style, many ties
    preds = labels + rng.normal(scale=1.0, size=40)
    assert pearson(preds, labels) == pytest.approx(scipy.stats.pearsonr(preds, labels)[0])
    assert spearman(preds, labels) == pytest.approx(scipy.stats.spearmanr(preds, labels)[0])
    assert pearson(preds[:, None], labels) == pytest.approx(scipy.stats.pearsonr(preds, labels)[0])
    # Hand-checked: a monotone but non-linear relation has Spearman 1 and Pearson < 1.
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert spearman(x, x**3) == pytest.approx(1.0)
    assert pearson(x, 2 * x + 1) == pytest.approx(1.0)
    assert pearson(x, x**3) < 0.99


def test_glue_task_metrics_per_task():
    logits = np.stack([1 - PREDS, PREDS], axis=1).astype("float32") * 2.0 - 1.0  # argmax == PREDS
    acc = skm.accuracy_score(LABELS, PREDS)
    f1_value = skm.f1_score(LABELS, PREDS)
    assert glue_task_metrics("cola", PREDS, LABELS) == {
        "matthews_corrcoef": pytest.approx(skm.matthews_corrcoef(LABELS, PREDS))
    }
    for task in ("sst2", "SST-2", "qnli", "rte", "wnli", "mnli", "mnli-mm", "mnli_matched"):
        assert glue_task_metrics(task, logits, LABELS) == {"accuracy": pytest.approx(acc)}
    for task in ("mrpc", "QQP"):
        assert glue_task_metrics(task, logits, LABELS) == {
            "accuracy": pytest.approx(acc),
            "f1": pytest.approx(f1_value),
            "accuracy_and_f1": pytest.approx((acc + f1_value) / 2),
        }
    rng = np.random.RandomState(1)
    scores = rng.uniform(0, 5, size=20)
    targets = scores + rng.normal(size=20)
    p, s = scipy.stats.pearsonr(scores, targets)[0], scipy.stats.spearmanr(scores, targets)[0]
    assert glue_task_metrics("sts-b", scores, targets) == {
        "pearson": pytest.approx(p),
        "spearmanr": pytest.approx(s),
        "pearson_and_spearman": pytest.approx((p + s) / 2),
    }
    assert set(glue_task_metrics("ax", PREDS, LABELS)) == {"matthews_corrcoef"}
    assert len(GLUE_TASKS) == 10


def test_invalid_inputs_are_refused():
    with pytest.raises(ValueError, match="Unknown GLUE task"):
        glue_task_metrics("squad", PREDS, LABELS)
    with pytest.raises(ValueError, match="differ in length"):
        accuracy(PREDS[:3], LABELS)
