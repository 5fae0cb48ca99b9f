"""Writes tests/data/seqeval_reference.json: seqeval's entities and scores (its default, conlleval mode) on
random tag sequences, the reference tests/test_ner_metrics.py compares our NER metrics with.

    pip install seqeval==1.2.2 && python tests/make_seqeval_reference.py

seqeval is not a dependency (it builds from source only, which fails under current setuptools-scm without a
constraints file); its answers are recorded here once, with the version that gave them.
"""

import json
import os
import random
import warnings

from importlib.metadata import version
from seqeval.metrics import accuracy_score, classification_report, f1_score, precision_score, recall_score
from seqeval.metrics.sequence_labeling import get_entities

PREFIXES = {"iob2-and-invalid": ("B", "I"), "iob1": ("I",), "iobes": ("B", "I", "E", "S")}
TYPES = ("PER", "LOC", "ORG")


def random_sentences(rng, prefixes, num_sentences=40, types=TYPES):
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(num_sentences)]


def perturb(rng, sentences, prefixes, types=TYPES):
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in sentences]


def case(y_true, y_pred):
    report = classification_report(y_true, y_pred, output_dict=True, digits=10)
    return {
        "y_true": y_true, "y_pred": y_pred,
        "entities": [get_entities(s) for s in y_true + y_pred], "entities_of_all_true": get_entities(y_true),
        "precision": precision_score(y_true, y_pred), "recall": recall_score(y_true, y_pred),
        "f1": f1_score(y_true, y_pred), "accuracy": accuracy_score(y_true, y_pred),
        "per_type": {t: {"precision": r["precision"], "recall": r["recall"], "f1": r["f1-score"],
                         "support": int(r["support"])}
                     for t, r in report.items() if t not in ("micro avg", "macro avg", "weighted avg")},
    }


def main():
    cases = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, prefixes in PREFIXES.items():
            for seed in range(4):
                rng = random.Random(seed)
                y_true = random_sentences(rng, prefixes)
                cases[f"{name}-{seed}"] = case(y_true, perturb(rng, y_true, prefixes))
        rng = random.Random(7)
        y_true = random_sentences(rng, ("B", "I"), num_sentences=1, types=("PER", "MISC"))
        cases["one-sentence"] = case(y_true, perturb(rng, y_true, ("B", "I"), types=("PER", "MISC")))
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "seqeval_reference.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"seqeval_version": version("seqeval"), "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
