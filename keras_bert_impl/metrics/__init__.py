"""Evaluation metrics for the BERT fine-tuning tasks: GLUE, NER (conlleval), SQuAD v1.1 / v2.0 and CMRC 2018.

Pure numpy / python (scipy for the correlations); no deep-learning backend is needed.
"""

from keras_bert_impl.metrics.cmrc2018_metrics import cmrc2018_evaluate
from keras_bert_impl.metrics.glue_metrics import (
    GLUE_TASKS,
    accuracy,
    f1,
    glue_task_metrics,
    matthews_corrcoef,
    pearson,
    spearman,
)
from keras_bert_impl.metrics.ner_metrics import get_entities, ner_f1, ner_precision, ner_recall, ner_scores
from keras_bert_impl.metrics.squad_metrics import (
    apply_no_ans_threshold,
    compute_exact,
    compute_f1,
    find_best_thresh,
    get_raw_scores,
    make_qid_to_has_ans,
    normalize_answer,
    squad_v1_evaluate,
    squad_v2_evaluate,
)

__all__ = [
    "GLUE_TASKS",
    "accuracy",
    "apply_no_ans_threshold",
    "cmrc2018_evaluate",
    "compute_exact",
    "compute_f1",
    "f1",
    "find_best_thresh",
    "get_entities",
    "get_raw_scores",
    "glue_task_metrics",
    "make_qid_to_has_ans",
    "matthews_corrcoef",
    "ner_f1",
    "ner_precision",
    "ner_recall",
    "ner_scores",
    "normalize_answer",
    "pearson",
    "spearman",
    "squad_v1_evaluate",
    "squad_v2_evaluate",
]
