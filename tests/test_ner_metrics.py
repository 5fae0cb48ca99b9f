"""Entity-level NER metrics against hand-computed conlleval cases and against seqeval."""

import random
import warnings

import pytest

from keras_bert_impl.metrics import get_entities, ner_f1, ner_precision, ner_recall, ner_scores

seqeval_metrics = pytest.importorskip("seqeval.metrics")
from seqeval.metrics.sequence_labeling import get_entities as seqeval_get_entities  # noqa: E402


# ----------------------------------------------------------------------------------------------
# hand-computed chunking (conlleval rules)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tags, expected",
    [
        # IOB2 / BIO.
        (["B-PER", "I-PER", "O", "B-LOC"], [("PER", 0, 1), ("LOC", 3, 3)]),
        (["B-PER", "B-PER", "I-PER"], [("PER", 0, 0), ("PER", 1, 2)]),
        # IOB1: I- after O, or after another type, starts a chunk; B- separates same-type chunks.
        (["I-PER", "I-PER", "B-PER", "O", "I-LOC"], [("PER", 0, 1), ("PER", 2, 2), ("LOC", 4, 4)]),
        (["I-PER", "I-LOC", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 2)]),
        # Type change inside "B-X I-Y" ends X and starts Y.
        (["B-PER", "I-LOC", "O"], [("PER", 0, 0), ("LOC", 1, 1)]),
        # IOBES.
        (["S-PER", "B-LOC", "I-LOC", "E-LOC", "O", "S-ORG"], [("PER", 0, 0), ("LOC", 1, 3), ("ORG", 5, 5)]),
        (["B-LOC", "E-LOC", "E-LOC"], [("LOC", 0, 1), ("LOC", 2, 2)]),
        # Chunk running to the end; all O; empty.
        (["O", "B-MISC", "I-MISC"], [("MISC", 1, 2)]),
        (["O", "O"], []),
        ([], []),
    ],
)
def test_chunks_hand_computed(tags, expected):
    assert get_entities(tags) == expected


def test_sentences_are_separated():
    # The I-PER opening sentence 2 does not continue sentence 1's PER: offsets count the "O"
    # inserted between sentences.
    assert get_entities([["O", "B-PER"], ["I-PER", "O"]]) == [("PER", 1, 1), ("PER", 3, 3)]


def test_scores_hand_computed():
    y_true = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["B-ORG", "O", "B-PER"]]
    y_pred = [["B-PER", "I-PER", "O", "B-ORG", "O"], ["B-ORG", "I-ORG", "B-PER"]]
    # gold: PER(0,1) LOC(3,3) ORG(6,6) PER(8,8); pred: PER(0,1) ORG(3,3) ORG(6,7) PER(8,8).
    scores = ner_scores(y_true, y_pred)
    assert (scores["num_gold"], scores["num_predicted"], scores["num_correct"]) == (4, 4, 2)
    assert scores["precision"] == scores["recall"] == scores["f1"] == 0.5
    assert scores["accuracy"] == pytest.approx(6 / 8)
    assert scores["per_type"] == {
        "LOC": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
        "ORG": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1},
        "PER": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 2},
    }
    # Unequal precision and recall: one extra predicted chunk.
    y_pred2 = [["B-PER", "I-PER", "O", "B-LOC", "B-LOC"], ["B-ORG", "O", "O"]]
    assert ner_precision(y_true, y_pred2) == pytest.approx(3 / 4)
    assert ner_recall(y_true, y_pred2) == pytest.approx(3 / 4)
    y_pred3 = [["B-PER", "I-PER", "O", "B-LOC", "O"], ["O", "O", "O"]]
    assert ner_precision(y_true, y_pred3) == 1.0
    assert ner_recall(y_true, y_pred3) == 0.5
    assert ner_f1(y_true, y_pred3) == pytest.approx(2 / 3)
    # No predicted and no gold entities: everything is 0, as conlleval / seqeval report.
    assert ner_f1([["O"]], [["O"]]) == 0.0


# ----------------------------------------------------------------------------------------------
# against seqeval's default (conlleval) mode on random sequences
# ----------------------------------------------------------------------------------------------


def _random_sentences(rng, prefixes, num_sentences=40, types=("PER", "LOC", "ORG")):
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [[rng.choice(tags) for _ in range(rng.randint(1, 12))] for _ in range(num_sentences)]


def _perturb(rng, sentences, prefixes, types=("PER", "LOC", "ORG")):
    tags = ["O"] + [f"{p}-{t}" for p in prefixes for t in types]
    return [[t if rng.random() < 0.7 else rng.choice(tags) for t in s] for s in sentences]


@pytest.mark.parametrize(
    "prefixes", [("B", "I"), ("I",), ("B", "I", "E", "S")], ids=["iob2-and-invalid", "iob1", "iobes"]
)
@pytest.mark.parametrize("seed", range(4))
def test_matches_seqeval_on_random_sequences(prefixes, seed):
    rng = random.Random(seed)
    y_true = _random_sentences(rng, prefixes)
    y_pred = _perturb(rng, y_true, prefixes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sentence in y_true + y_pred:
            assert get_entities(sentence) == seqeval_get_entities(sentence)
        assert get_entities(y_true) == seqeval_get_entities(y_true)
        report = seqeval_metrics.classification_report(y_true, y_pred, output_dict=True, digits=10)
        expected = (
            seqeval_metrics.precision_score(y_true, y_pred),
            seqeval_metrics.recall_score(y_true, y_pred),
            seqeval_metrics.f1_score(y_true, y_pred),
            seqeval_metrics.accuracy_score(y_true, y_pred),
        )
    scores = ner_scores(y_true, y_pred)
    assert (scores["precision"], scores["recall"], scores["f1"], scores["accuracy"]) == pytest.approx(expected)
    assert 0 < scores["f1"] < 1
    for type_, row in scores["per_type"].items():
        assert row["precision"] == pytest.approx(report[type_]["precision"])
        assert row["recall"] == pytest.approx(report[type_]["recall"])
        assert row["f1"] == pytest.approx(report[type_]["f1-score"])
        assert row["support"] == report[type_]["support"]
    assert set(scores["per_type"]) == set(report) - {"micro avg", "macro avg", "weighted avg"}


def test_flat_and_nested_inputs_agree_with_seqeval():
    rng = random.Random(7)
    y_true = _random_sentences(rng, ("B", "I"), num_sentences=1, types=("PER", "MISC"))[0]
    y_pred = _perturb(rng, [y_true], ("B", "I"), types=("PER", "MISC"))[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = seqeval_metrics.f1_score([y_true], [y_pred])
    assert ner_f1(y_true, y_pred) == pytest.approx(expected)
    assert ner_f1([y_true], [y_pred]) == pytest.approx(expected)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        ner_scores([["O", "B-PER"]], [["O"]])
