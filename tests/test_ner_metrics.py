"""Entity-level NER metrics against hand-computed conlleval cases and against seqeval (its answers on random
tag sequences, recorded in tests/data/seqeval_reference.json by tests/make_seqeval_reference.py)."""

import json
import os

import pytest

from keras_bert_impl.metrics import get_entities, ner_f1, ner_precision, ner_recall, ner_scores

pytestmark = pytest.mark.backend_independent

with open(os.path.join(os.path.dirname(__file__), "data", "seqeval_reference.json"), encoding="utf-8") as _f:
    SEQEVAL = json.load(_f)["cases"]


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


@pytest.mark.parametrize("name", sorted(c for c in SEQEVAL if c != "one-sentence"))
def test_matches_seqeval_on_random_sequences(name):
    """IOB2 with invalid transitions, IOB1 and IOBES sequences (4 seeds each)."""
    reference = SEQEVAL[name]
    y_true, y_pred = reference["y_true"], reference["y_pred"]
    for sentence, entities in zip(y_true + y_pred, reference["entities"], strict=True):
        assert get_entities(sentence) == [tuple(e) for e in entities]
    assert get_entities(y_true) == [tuple(e) for e in reference["entities_of_all_true"]]
    scores = ner_scores(y_true, y_pred)
    expected = tuple(reference[k] for k in ("precision", "recall", "f1", "accuracy"))
    assert (scores["precision"], scores["recall"], scores["f1"], scores["accuracy"]) == pytest.approx(expected)
    assert 0 < scores["f1"] < 1
    assert set(scores["per_type"]) == set(reference["per_type"])
    for type_, row in reference["per_type"].items():
        assert scores["per_type"][type_] == pytest.approx(row), type_


def test_flat_and_nested_inputs_agree_with_seqeval():
    reference = SEQEVAL["one-sentence"]
    (y_true,), (y_pred,) = reference["y_true"], reference["y_pred"]
    assert ner_f1(y_true, y_pred) == pytest.approx(reference["f1"])
    assert ner_f1([y_true], [y_pred]) == pytest.approx(reference["f1"])
