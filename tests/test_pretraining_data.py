"""Tests of keras_bert_impl/data/pretraining_instances.py, pretraining_documents.py and masked_lm_predictions.py: the original BERT pretraining-data algorithm, streamed.

Pure Python: no tokenizer file, no TensorFlow. The tokenizer is a whitespace splitter whose vocabulary is
built from the corpus; WordPiece continuations are written in the text directly ("phil ##ham ##mon").
"""

import collections
import gc
import math
import random
import weakref

import pytest

from keras_bert_impl.data import masked_lm_predictions, pretraining_documents, pretraining_instances

pytestmark = pytest.mark.backend_independent

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


class WhitespaceTokenizer:
    """Splits on whitespace; `vocab` is specials + `words` (dict token -> id, file order)."""

    def __init__(self, words=()):
        self.vocab = collections.OrderedDict()
        for token in SPECIALS + list(words):
            self.vocab.setdefault(token, len(self.vocab))

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(t, self.vocab["[UNK]"]) for t in tokens]


def tagged_corpus(num_docs, seed, max_sentences=6, max_words=14):
    """Documents whose tokens say where they come from: "d{doc}_{k}", k = running index in the document."""
    r = random.Random(seed)
    docs = []
    for d in range(num_docs):
        k = 0
        doc = []
        for _ in range(r.randint(1, max_sentences)):
            n = r.randint(1, max_words)
            doc.append([f"d{d}_{k + j}" for j in range(n)])
            k += n
        docs.append(doc)
    return docs


def origin(token):
    """(document, index in document) of a tagged token."""
    d, k = token[1:].split("_")
    return int(d), int(k)


def split_pair(instance):
    tokens = instance.tokens
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]"
    sep = tokens.index("[SEP]")
    return tokens[1:sep], tokens[sep + 1 : -1]


def is_contiguous(indexes):
    return all(b == a + 1 for a, b in zip(indexes, indexes[1:]))


# ------------------------------------------------------------------------------------------------
# Reference: google-research/bert create_pretraining_data.py (master), ported line for line
# (Apache-2.0, (c) 2018 The Google AI Language Team Authors; `FLAGS.do_whole_word_mask` is an argument
# and TensorFlow file reading is replaced by the list of documents). Our module must reproduce it.
# ------------------------------------------------------------------------------------------------

_MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


def _orig_create_training_instances(all_documents, vocab_words, max_seq_length, dupe_factor, short_seq_prob,
                                    masked_lm_prob, max_predictions_per_seq, rng, do_whole_word_mask=False):
    all_documents = [x for x in all_documents if x]
    rng.shuffle(all_documents)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(all_documents)):
            instances.extend(
                _orig_create_instances_from_document(
                    all_documents, document_index, max_seq_length, short_seq_prob, masked_lm_prob,
                    max_predictions_per_seq, vocab_words, rng, do_whole_word_mask))
    rng.shuffle(instances)
    return instances


def _orig_create_instances_from_document(all_documents, document_index, max_seq_length, short_seq_prob,
                                         masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                                         do_whole_word_mask):
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)
    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])
                tokens_b = []
                is_random_next = False
                if len(current_chunk) == 1 or rng.random() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                _orig_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                assert len(tokens_a) >= 1
                assert len(tokens_b) >= 1
                tokens = []
                segment_ids = []
                tokens.append("[CLS]")
                segment_ids.append(0)
                for token in tokens_a:
                    tokens.append(token)
                    segment_ids.append(0)
                tokens.append("[SEP]")
                segment_ids.append(0)
                for token in tokens_b:
                    tokens.append(token)
                    segment_ids.append(1)
                tokens.append("[SEP]")
                segment_ids.append(1)
                (tokens, masked_lm_positions, masked_lm_labels) = _orig_create_masked_lm_predictions(
                    tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, do_whole_word_mask)
                instances.append((tokens, segment_ids, is_random_next, masked_lm_positions, masked_lm_labels))
            current_chunk = []
            current_length = 0
        i += 1
    return instances


def _orig_create_masked_lm_predictions(tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                                       do_whole_word_mask):
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        if (do_whole_word_mask and len(cand_indexes) >= 1 and token.startswith("##")):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
    rng.shuffle(cand_indexes)
    output_tokens = list(tokens)
    num_to_predict = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
    masked_lms = []
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        is_any_index_covered = False
        for index in index_set:
            if index in covered_indexes:
                is_any_index_covered = True
                break
        if is_any_index_covered:
            continue
        for index in index_set:
            covered_indexes.add(index)
            masked_token = None
            if rng.random() < 0.8:
                masked_token = "[MASK]"
            else:
                if rng.random() < 0.5:
                    masked_token = tokens[index]
                else:
                    masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output_tokens[index] = masked_token
            masked_lms.append(_MaskedLmInstance(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict
    masked_lms = sorted(masked_lms, key=lambda x: x.index)
    masked_lm_positions = []
    masked_lm_labels = []
    for p in masked_lms:
        masked_lm_positions.append(p.index)
        masked_lm_labels.append(p.label)
    return (output_tokens, masked_lm_positions, masked_lm_labels)


def _orig_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    while True:
        total_length = len(tokens_a) + len(tokens_b)
        if total_length <= max_num_tokens:
            break
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


# ------------------------------------------------------------------------------------------------
# Fidelity to the original
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "max_seq_length,short_seq_prob,dupe_factor,seed",
    [(128, 0.1, 3, 12345), (24, 0.3, 2, 7), (12, 0.0, 2, 99)],  # 24 and 12 force truncation
)
def test_identical_to_original_for_one_shard(max_seq_length, short_seq_prob, dupe_factor, seed):
    docs = tagged_corpus(25, seed=seed)
    vocab_words = SPECIALS + sorted({t for d in docs for s in d for t in s})
    expected = _orig_create_training_instances(
        [list(d) for d in docs], vocab_words, max_seq_length, dupe_factor, short_seq_prob, 0.15, 20, random.Random(seed)
    )
    for shard_size in (None, 25, 1000):  # all "the whole corpus in one shard"
        ours = list(
            pretraining_instances.create_training_instances(
                iter(docs), vocab_words, random.Random(seed), max_seq_length=max_seq_length,
                dupe_factor=dupe_factor, short_seq_prob=short_seq_prob, masked_lm_prob=0.15,
                max_predictions_per_seq=20, shard_size_documents=shard_size,
            )
        )
        got = [(i.tokens, i.segment_ids, i.is_random_next, i.masked_lm_positions, i.masked_lm_labels) for i in ours]
        assert len(got) == len(expected) > 20
        assert got == expected


def test_whole_word_mask_matches_original_on_one_piece_words():
    # Without "##" pieces whole-word masking draws exactly what the original draws.
    docs = tagged_corpus(10, seed=3)
    vocab_words = SPECIALS + sorted({t for d in docs for s in d for t in s})
    expected = _orig_create_training_instances(docs, vocab_words, 32, 2, 0.1, 0.15, 20, random.Random(5), True)
    ours = pretraining_instances.create_training_instances(docs, vocab_words, random.Random(5), max_seq_length=32, dupe_factor=2,
                                           do_whole_word_mask=True)
    assert [(i.tokens, i.masked_lm_positions) for i in ours] == [(e[0], e[3]) for e in expected]


# ------------------------------------------------------------------------------------------------
# Pair construction, checked by hand
# ------------------------------------------------------------------------------------------------


class ScriptedRng:
    """Answers random()/randint() from scripts and checks the randint ranges asked for."""

    def __init__(self, randoms, randints):
        self.randoms = list(randoms)
        self.randints = list(randints)  # ((a, b), value)

    def random(self):
        return self.randoms.pop(0)

    def randint(self, a, b):
        (ea, eb), value = self.randints.pop(0)
        assert (a, b) == (ea, eb)
        return value


def test_hand_checked_pairs_actual_and_random_next():
    docs = [
        [["a1", "a2"], ["b1"], ["c1", "c2", "c3"]],
        [["x1", "x2"], ["y1"]],
    ]
    # max_seq_length 10 -> max_num_tokens 7.
    rng = ScriptedRng(
        randoms=[0.5,  # >= short_seq_prob: target 7
                 0.3],  # < 0.5: random next
        randints=[((1, 2), 2),  # a_end = 2: A = a1 a2 b1
                  ((0, 1), 1),  # random document 1
                  ((0, 1), 0),  # random start 0: B = x1 x2 y1 (target_b_length 4 not reached)
                  # c1 c2 c3 was put back: a 1-sentence chunk, so random next without a draw
                  ((0, 1), 1),  # random document 1
                  ((0, 1), 1)],  # random start 1: B = y1
    )
    pairs = list(pretraining_instances.create_pairs_from_document(docs, 0, 10, 0.1, rng))
    assert [p.tokens for p in pairs] == [
        ["[CLS]", "a1", "a2", "b1", "[SEP]", "x1", "x2", "y1", "[SEP]"],
        ["[CLS]", "c1", "c2", "c3", "[SEP]", "y1", "[SEP]"],
    ]
    assert [p.segment_ids for p in pairs] == [[0, 0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1]]
    assert [p.next_sentence_label for p in pairs] == [1, 1]
    assert rng.randoms == [] and rng.randints == []

    rng = ScriptedRng(randoms=[0.5, 0.7], randints=[((1, 2), 2)])  # 0.7: actual next
    (pair,) = pretraining_instances.create_pairs_from_document(docs, 0, 10, 0.1, rng)
    assert pair.tokens == ["[CLS]", "a1", "a2", "b1", "[SEP]", "c1", "c2", "c3", "[SEP]"]
    assert pair.segment_ids == [0] * 5 + [1] * 4
    assert pair.next_sentence_label == 0 and pair.masked_lm_positions == []


def test_hand_checked_truncation():
    docs = [[["t1", "t2", "t3", "t4", "t5", "t6"], ["u1"]], [["x1", "x2"]]]
    # max_seq_length 8 -> 5 tokens for A + B. Sentence t (6 tokens) fills the target on its own.
    rng = ScriptedRng(
        randoms=[0.9,  # target 5
                 0.2, 0.7, 0.1],  # truncation: A front, A back, A front
        randints=[((0, 1), 1), ((0, 0), 0)],  # random document 1, start 0: B = x1 x2
    )
    pair = next(pretraining_instances.create_pairs_from_document(docs, 0, 8, 0.1, rng))
    assert pair.tokens == ["[CLS]", "t3", "t4", "t5", "[SEP]", "x1", "x2", "[SEP]"]
    assert pair.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]


def test_short_target_length():
    # max_seq_length 16 -> max_num_tokens 13; random() < short_seq_prob -> target randint(2, 13) = 2.
    rng = ScriptedRng(randoms=[0.05], randints=[((2, 13), 2), ((0, 1), 1), ((0, 0), 0)])
    docs = [[["a", "b"], ["c", "d"], ["e"]], [["x"]]]
    pair = next(pretraining_instances.create_pairs_from_document(docs, 0, 16, 0.1, rng))
    # "a b" reaches the target alone: a one-sentence chunk, so B is random (document 1, start 0).
    assert pair.tokens == ["[CLS]", "a", "b", "[SEP]", "x", "[SEP]"] and pair.next_sentence_label == 1


# ------------------------------------------------------------------------------------------------
# Properties over random corpora
# ------------------------------------------------------------------------------------------------


def _instances(docs, seed, **kwargs):
    vocab_words = SPECIALS + sorted({t for d in docs for s in d for t in s})
    return list(pretraining_instances.create_training_instances(docs, vocab_words, random.Random(seed), **kwargs))


def test_nsp_label_semantics():
    docs = tagged_corpus(40, seed=11)
    insts = _instances(docs, 11, max_seq_length=24, dupe_factor=3, do_masking=False)
    labels = collections.Counter()
    for inst in insts:
        a, b = split_pair(inst)
        assert len(inst.tokens) <= 24 and len(a) >= 1 and len(b) >= 1
        a_docs, a_idx = zip(*map(origin, a))
        b_docs, b_idx = zip(*map(origin, b))
        assert len(set(a_docs)) == 1 and len(set(b_docs)) == 1
        assert is_contiguous(a_idx) and is_contiguous(b_idx)  # truncation only trims the ends
        labels[inst.next_sentence_label] += 1
        if inst.next_sentence_label == 0:
            # B is the true continuation: same document, after A (only truncated ends may be missing).
            assert a_docs[0] == b_docs[0] and b_idx[0] > a_idx[-1]
        else:
            assert a_docs[0] != b_docs[0]  # from another document
    assert labels[0] > 50 and labels[1] > 50


def test_truncation_bounds_and_both_ends():
    rng = random.Random(0)
    fronts = backs = 0
    for _ in range(2000):
        la, lb, m = rng.randint(1, 40), rng.randint(1, 40), rng.randint(2, 50)
        a, b = list(range(la)), list(range(100, 100 + lb))
        pretraining_instances.truncate_seq_pair(a, b, m, rng)
        # Expected lengths: always trim the longer one (B on ties).
        ea, eb = la, lb
        while ea + eb > m:
            if ea > eb:
                ea -= 1
            else:
                eb -= 1
        assert (len(a), len(b)) == (ea, eb) and len(a) + len(b) <= m
        for kept, start in ((a, 0), (b, 100)):
            if kept:
                assert kept == list(range(kept[0], kept[-1] + 1))  # a contiguous slice
                fronts += kept[0] - start
        backs += (la - (a[-1] + 1 if a else la)) + (lb - (b[-1] - 99 if b else lb))
    n = fronts + backs
    assert n > 10000
    assert abs(fronts / n - 0.5) < 4 * math.sqrt(0.25 / n)


def test_number_of_masked_positions_follows_formula():
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(50)]
    for _ in range(500):
        n = rng.randint(5, 128)
        prob = rng.choice([0.15, 0.2, 0.5])
        max_pred = rng.choice([1, 5, 20, 76])
        tokens = ["[CLS]"] + [rng.choice(vocab) for _ in range(n - 3)]
        sep = rng.randint(2, n - 2)
        tokens.insert(sep, "[SEP]")
        tokens.append("[SEP]")
        assert len(tokens) == n
        out, positions, labels = masked_lm_predictions.create_masked_lm_predictions(tokens, prob, max_pred, vocab, rng)
        expected = min(max_pred, max(1, int(round(n * prob))))
        assert len(positions) == expected == masked_lm_predictions.num_masked_lm_predictions(n, prob, max_pred)
        assert positions == sorted(set(positions))
        assert all(tokens[p] not in ("[CLS]", "[SEP]") for p in positions)
        assert labels == [tokens[p] for p in positions]
        assert all(out[i] == tokens[i] for i in range(n) if i not in positions)
    assert masked_lm_predictions.num_masked_lm_predictions(30, 0.15, 20) == 4  # round(4.5) = 4: Python rounds half to even


def _classify(out, original):
    return "mask" if out == "[MASK]" else "keep" if out == original else "random"


def _assert_proportions(counts, expected):
    n = sum(counts.values())
    for key, p in expected.items():
        sigma = math.sqrt(p * (1 - p) / n)
        assert abs(counts[key] / n - p) < 4 * sigma, (key, counts, n)


def test_80_10_10_proportions():
    vocab = [f"w{i}" for i in range(5000)]
    rng = random.Random(2)
    counts = collections.Counter()
    while sum(counts.values()) < 20000:
        tokens = ["[CLS]"] + [rng.choice(vocab) for _ in range(62)] + ["[SEP]"] + [rng.choice(vocab) for _ in range(63)]
        tokens.append("[SEP]")
        out, positions, labels = masked_lm_predictions.create_masked_lm_predictions(tokens, 0.15, 20, vocab, rng)
        for p, label in zip(positions, labels):
            counts[_classify(out[p], label)] += 1
    # A random word equals the original with probability 1/5000: negligible against the bounds.
    _assert_proportions(counts, {"mask": 0.8, "keep": 0.1, "random": 0.1})


def _word_spans(tokens):
    """(start, end) of each word: a non-special token and the "##" pieces right after it."""
    spans = []
    for i, t in enumerate(tokens):
        if t in ("[CLS]", "[SEP]"):
            continue
        if t.startswith("##") and spans and spans[-1][1] == i:
            spans[-1] = (spans[-1][0], i + 1)
        else:
            spans.append((i, i + 1))
    return spans


def test_whole_word_masking_keeps_words_intact_with_one_decision():
    rng = random.Random(4)
    stems = [f"s{i}" for i in range(3000)]
    pieces = [f"##p{i}" for i in range(3000)]
    vocab = stems + pieces
    word_counts = collections.Counter()
    multi_piece_words = 0
    for _ in range(600):
        tokens = ["[CLS]"]
        while len(tokens) < 60:
            tokens.append(rng.choice(stems))
            tokens.extend(rng.choice(pieces) for _ in range(rng.choice([0, 0, 1, 2, 3])))
        tokens.append("[SEP]")
        tokens.extend([rng.choice(stems), rng.choice(pieces), "[SEP]"])
        out, positions, labels = masked_lm_predictions.create_masked_lm_predictions(
            tokens, 0.15, 20, vocab, rng, do_whole_word_mask=True
        )
        budget = masked_lm_predictions.num_masked_lm_predictions(len(tokens), 0.15, 20)
        assert len(positions) <= budget
        chosen = set(positions)
        for start, end in _word_spans(tokens):
            covered = [i in chosen for i in range(start, end)]
            assert all(covered) or not any(covered), (tokens[start:end], covered)  # whole words only
            # Greedy with skipping: a word left out did not fit in what remained when it came up.
            assert any(covered) or end - start > budget - len(positions)
            if all(covered):
                kinds = {_classify(out[i], tokens[i]) for i in range(start, end)}
                assert len(kinds) == 1, (tokens[start:end], out[start:end])  # one decision per word (google-research/bert's bug #910)
                word_counts[kinds.pop()] += 1
                multi_piece_words += end - start > 1
    assert multi_piece_words > 1000
    _assert_proportions(word_counts, {"mask": 0.8, "keep": 0.1, "random": 0.1})


def test_whole_word_piece_never_joins_across_sep():
    # B starting with "##" (front-truncated) is its own word; the original glued it to A's last word,
    # making a 2-token group that never fits num_to_predict = 1, so nothing was masked.
    tokens = ["[CLS]", "a", "[SEP]", "##b", "[SEP]"]
    for seed in range(20):
        _, positions, _ = masked_lm_predictions.create_masked_lm_predictions(tokens, 0.15, 20, ["a"], random.Random(seed), True)
        assert positions in ([1], [3])
        _, orig_positions, _ = _orig_create_masked_lm_predictions(tokens, 0.15, 20, ["a"], random.Random(seed), True)
        assert orig_positions == []


def test_sentence_order_pairs():
    docs = tagged_corpus(30, seed=8)
    insts = _instances(docs, 8, max_seq_length=24, dupe_factor=8, sentence_order=True, do_masking=False)
    labels = collections.Counter()
    for inst in insts:
        a, b = split_pair(inst)
        (a_doc, *_), a_idx = zip(*map(origin, a))
        (b_doc, *_), b_idx = zip(*map(origin, b))
        assert {origin(t)[0] for t in a + b} == {a_doc} == {b_doc}  # SOP never leaves the document
        assert is_contiguous(a_idx) and is_contiguous(b_idx)
        if inst.next_sentence_label == 1:
            assert a_idx[0] > b_idx[-1]  # swapped: A comes after B in the document
        else:
            assert b_idx[0] > a_idx[-1]
        labels[inst.next_sentence_label] += 1
    n = sum(labels.values())
    assert n > 200
    _assert_proportions(labels, {0: 0.5, 1: 0.5})


def test_sentence_order_single_sentence_chunks():
    docs = [[["w0", "w1", "w2", "w3", "w4"]], [["z"]]]
    rng = random.Random(0)
    pairs = list(pretraining_instances.create_pairs_from_document(docs, 0, 32, 0.0, rng, sentence_order=True))
    (pair,) = pairs
    a, b = split_pair(pair)
    restored = b + a if pair.next_sentence_label else a + b
    assert restored == docs[0][0]  # split inside the sentence, order reversed iff label 1
    # A document of one single-token sentence cannot make a pair.
    assert list(pretraining_instances.create_pairs_from_document(docs, 1, 32, 0.0, rng, sentence_order=True)) == []


def test_determinism_for_a_seed():
    docs = tagged_corpus(20, seed=1)
    kwargs = dict(max_seq_length=32, dupe_factor=2, shard_size_documents=7, do_whole_word_mask=True)
    first, second = _instances(docs, 42, **kwargs), _instances(docs, 42, **kwargs)
    assert first == second and len(first) > 10
    assert _instances(docs, 43, **kwargs) != first


# ------------------------------------------------------------------------------------------------
# Streaming
# ------------------------------------------------------------------------------------------------


class Doc(list):
    """A document that can be weak-referenced, to count how many are alive."""


def test_streaming_holds_at_most_one_shard():
    shard_size, num_docs = 8, 50
    docs = tagged_corpus(num_docs, seed=5)
    alive = [0]  # documents created and not yet freed
    pulled = [0]
    max_alive = [0]

    def source():
        for d in docs:
            doc = Doc(list(s) for s in d)
            alive[0] += 1
            weakref.finalize(doc, lambda: alive.__setitem__(0, alive[0] - 1))
            pulled[0] += 1
            max_alive[0] = max(max_alive[0], alive[0])
            yield doc
            del doc

    vocab_words = SPECIALS + sorted({t for d in docs for s in d for t in s})
    stats = {}
    gen = pretraining_instances.create_training_instances(
        source(), vocab_words, random.Random(0), max_seq_length=32, dupe_factor=2, shard_size_documents=shard_size,
        stats=stats, do_masking=False,  # (random replacement words could come from any document)
    )
    current_shard = 0
    count = 0
    for inst in gen:
        count += 1
        shard_ids = {origin(t)[0] // shard_size for t in inst.tokens if t.startswith("d")}
        (shard,) = shard_ids  # A and the random B both come from one shard ...
        assert shard >= current_shard  # ... and shards are written in order
        current_shard = shard
        assert pulled[0] <= (shard + 1) * shard_size  # never read ahead of the current shard
        assert alive[0] <= shard_size  # (lists hold no cycles: refcounting frees them at once)
    assert max_alive[0] <= shard_size
    assert pulled[0] == num_docs and stats["documents_read"] == num_docs
    assert stats["shards"] == math.ceil(num_docs / shard_size) and stats["instances_created"] == count
    assert current_shard == stats["shards"] - 1
    del gen
    gc.collect()
    assert alive[0] == 0  # the instruments count frees


def test_read_documents(tmp_path):
    f1 = tmp_path / "a.txt"
    f1.write_text("one two\nthree\n\n\n   \nfour\n  \nfive six\n", encoding="utf-8")
    f2 = tmp_path / "b.txt"
    f2.write_text("\nseven\n   eight  \n", encoding="utf-8")  # no trailing blank line
    docs = list(pretraining_documents.read_documents([str(f1), str(f2)], WhitespaceTokenizer()))
    assert docs == [[["one", "two"], ["three"]], [["four"]], [["five", "six"]], [["seven"], ["eight"]]]


def test_iter_document_shards_sizes():
    assert [len(s) for s in pretraining_documents.iter_document_shards(iter([[["a"]]] * 7), 3)] == [3, 3, 1]
    assert [len(s) for s in pretraining_documents.iter_document_shards(iter([[["a"]]] * 7), None)] == [7]


def test_instance_to_features_pads_like_original():
    tok = WhitespaceTokenizer(["a", "b", "##c"])
    inst = pretraining_instances.TrainingInstance(
        tokens=["[CLS]", "[MASK]", "[SEP]", "b", "##c", "[SEP]"], segment_ids=[0, 0, 0, 1, 1, 1],
        is_random_next=True, masked_lm_positions=[1], masked_lm_labels=["a"],
    )
    f = pretraining_instances.instance_to_features(inst, tok, 8, 3)
    assert list(f) == list(pretraining_instances.ORIGINAL_FEATURE_NAMES)
    assert f["input_ids"].tolist() == [2, 4, 3, 6, 7, 3, 0, 0]
    assert f["input_mask"].tolist() == [1, 1, 1, 1, 1, 1, 0, 0]
    assert f["segment_ids"].tolist() == [0, 0, 0, 1, 1, 1, 0, 0]
    assert f["masked_lm_positions"].tolist() == [1, 0, 0]
    assert f["masked_lm_ids"].tolist() == [5, 0, 0]
    assert f["masked_lm_weights"].tolist() == [1.0, 0.0, 0.0]
    assert f["next_sentence_labels"].tolist() == [1]
    unmasked = pretraining_instances.instance_to_features(inst, tok, 8, 3, with_masks=False)
    assert unmasked["word_starts"].tolist() == [1, 1, 1, 1, 0, 1, 0, 0]
    with pytest.raises(ValueError):
        pretraining_instances.instance_to_features(inst, tok, 5, 3)
