"""BERT pretraining instances: google-research/bert's `create_pretraining_data.py` algorithm, which turns a
corpus into packed `[CLS] A [SEP] B [SEP]` pairs with next-sentence labels and masked-LM predictions, with
the same sequence of choices drawn from a `random.Random(seed)`, streamed shard by shard.

The documents come from `data/pretraining_documents.py`, the masking from
`data/masked_lm_predictions.py`; `instance_to_features` gives an instance's padded arrays under the names of
the original's TFRecords (written by `data/tf_pretraining_records.py`; `runners/create_pretraining_data.py`
is the command line).

Differences from the original, deliberate and documented where they happen:

* **Streaming.** `create_training_instances` reads documents shard by shard (`shard_size_documents`
  documents at a time), creates all the instances of a shard (every dupe), shuffles them and yields them
  before it reads the next shard. The random "B" document of a random-next pair is drawn within the current
  shard. With `shard_size_documents` at least the number of documents in the corpus, the output is
  identical, instance for instance, to the original's for the same seed (tests/test_pretraining_data.py
  checks this against a port of the original).
* **Whole-word masking** decides [MASK] / keep / random once per word (`data/masked_lm_predictions.py`).
* **Sentence-order prediction** (ALBERT, `sentence_order=True`) is an addition; see
  `create_pairs_from_document`.
"""

import collections
import dataclasses
import random
from typing import Iterable, Iterator, List, Optional, Sequence

import numpy as np

from keras_bert_impl.data.masked_lm_predictions import (
    CLS_TOKEN,
    MASK_TOKEN,
    SEP_TOKEN,
    check_masking_split,
    create_masked_lm_predictions,
    word_start_flags,
)
from keras_bert_impl.data.pretraining_documents import Document, iter_document_shards
from keras_bert_impl.utils.errors import UserInputError


@dataclasses.dataclass
class TrainingInstance:
    """One packed sentence pair `[CLS] A [SEP] B [SEP]`, with its masked-LM predictions.

    Args:
        tokens: The WordPiece tokens, already masked (unless the instance is unmasked).
        segment_ids: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`; same length as `tokens`.
        is_random_next: NSP: True when B was taken from another document (label 1).
            With sentence-order prediction: True when A and B were swapped (label 1).
        masked_lm_positions: Sorted positions of the masked-LM predictions (empty when unmasked).
        masked_lm_labels: The original tokens at `masked_lm_positions`.

    Examples:

    >>> inst = TrainingInstance(["[CLS]", "a", "[SEP]", "b", "[SEP]"], [0, 0, 0, 1, 1], False)
    >>> inst.next_sentence_label
    0
    """

    tokens: List[str]
    segment_ids: List[int]
    is_random_next: bool
    masked_lm_positions: List[int] = dataclasses.field(default_factory=list)
    masked_lm_labels: List[str] = dataclasses.field(default_factory=list)

    @property
    def next_sentence_label(self) -> int:
        """The `next_sentence_labels` feature: 1 if `is_random_next` else 0 (as the original)."""
        return 1 if self.is_random_next else 0


def truncate_seq_pair(tokens_a: List[str], tokens_b: List[str], max_num_tokens: int, rng: random.Random) -> None:
    """Truncates a pair of token lists in place until `len(a) + len(b) <= max_num_tokens` (original).

    Each step removes one token from the longer list (from B on a tie), from the front or from the back
    with probability 0.5 each ("to add more randomness and avoid biases").

    Args:
        tokens_a: First segment; modified in place.
        tokens_b: Second segment; modified in place.
        max_num_tokens: The budget for both together.
        rng: The `random.Random` driving the choices.

    Examples:

    >>> a, b = list("abcdef"), list("xy")
    >>> truncate_seq_pair(a, b, 5, random.Random(0))
    >>> len(a) + len(b)
    5
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        assert len(trunc_tokens) >= 1
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


def create_pairs_from_document(
    all_documents: Sequence[Document],
    document_index: int,
    max_seq_length: int,
    short_seq_prob: float,
    rng: random.Random,
    sentence_order: bool = False,
) -> Iterator[TrainingInstance]:
    """Yields the unmasked `[CLS] A [SEP] B [SEP]` pairs of one document (original algorithm).

    Next-sentence prediction (default): sentences are accumulated into a chunk until the target length
    (`max_seq_length - 3`, or with probability `short_seq_prob` a random length in [2, max - 3], drawn once
    per document); A is the first `a_end` sentences of the chunk (`a_end` random in [1, len(chunk) - 1]);
    B is, with probability 0.5 or whenever the chunk has a single sentence, a random stretch of another
    document (label 1, the unused sentences of the chunk are "put back"), else the rest of the chunk
    (label 0). The pair is then truncated with `truncate_seq_pair`.

    Sentence-order prediction (`sentence_order=True`, ALBERT): B is always the rest of the chunk (the true
    continuation) and with probability 0.5 A and B are swapped (label 1 = swapped). A single-sentence chunk
    cannot be split at a sentence boundary, so it is split inside the sentence at a random token boundary
    (`randint(1, len - 1)`); a chunk of one single-token sentence yields no pair. (ALBERT instead pairs a
    single-sentence chunk with a random document and labels it 1, which mixes NSP into SOP.)

    The generator must be consumed one pair at a time, with any masking of a pair done before the next
    pair is requested, to reproduce the original's sequence of random draws.

    Args:
        all_documents: The documents the random "B" may come from (the current shard).
        document_index: Index of the document to pair up.
        max_seq_length: Length of the packed sequence, [CLS] and two [SEP] included.
        short_seq_prob: Probability of a shorter target length.
        rng: The `random.Random` driving the choices.
        sentence_order: Build sentence-order (SOP) pairs instead of next-sentence (NSP) pairs.

    Yields:
        Unmasked `TrainingInstance`s.

    Examples:

    >>> docs = [[["a", "b"], ["c"]], [["x", "y", "z"]]]
    >>> pairs = list(create_pairs_from_document(docs, 0, 16, 0.0, random.Random(3)))
    >>> pairs[0].tokens[0], pairs[0].segment_ids[0]
    ('[CLS]', 0)
    """
    document = all_documents[document_index]

    # Account for [CLS], [SEP], [SEP]
    max_num_tokens = max_seq_length - 3

    # We *usually* want to fill up the entire sequence; sometimes (short_seq_prob) we use a shorter one
    # to minimize the mismatch between pre-training and fine-tuning. A rough target, drawn once per
    # document as in the original; max_seq_length is the hard limit.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    current_chunk: Document = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                # `a_end` is how many sentences of `current_chunk` go into A.
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)

                tokens_a: List[str] = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])

                tokens_b: List[str] = []
                is_random_next = False
                if sentence_order:
                    # ALBERT SOP: B is the true continuation; swapped with probability 0.5.
                    if len(current_chunk) == 1:
                        if len(tokens_a) >= 2:
                            split = rng.randint(1, len(tokens_a) - 1)
                            tokens_a, tokens_b = tokens_a[:split], tokens_a[split:]
                    else:
                        for j in range(a_end, len(current_chunk)):
                            tokens_b.extend(current_chunk[j])
                    if tokens_b and rng.random() < 0.5:
                        is_random_next = True  # label 1 = swapped
                        tokens_a, tokens_b = tokens_b, tokens_a
                elif len(current_chunk) == 1 or rng.random() < 0.5:
                    # Random next
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)

                    # Try (10 times) to take the random document from another document than this one.
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
                    # We didn't actually use these segments so we "put them back" so they don't go to waste.
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                else:
                    # Actual next
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])

                if tokens_b:  # always true for NSP; false only for a 1-token SOP chunk
                    truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                    assert len(tokens_a) >= 1
                    assert len(tokens_b) >= 1

                    # [CLS] A [SEP] B [SEP]; segment 0 for [CLS] A [SEP], 1 for B [SEP].
                    tokens = [CLS_TOKEN, *tokens_a, SEP_TOKEN, *tokens_b, SEP_TOKEN]
                    segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                    yield TrainingInstance(tokens=tokens, segment_ids=segment_ids, is_random_next=is_random_next)
            current_chunk = []
            current_length = 0
        i += 1


def create_instances_from_document(
    all_documents: Sequence[Document],
    document_index: int,
    max_seq_length: int,
    short_seq_prob: float,
    masked_lm_prob: float,
    max_predictions_per_seq: int,
    vocab_words: Sequence[str],
    rng: random.Random,
    do_whole_word_mask: bool = False,
    sentence_order: bool = False,
    do_masking: bool = True,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
) -> List[TrainingInstance]:
    """Creates the (masked) `TrainingInstance`s of one document, as the original function of this name.

    Each pair of `create_pairs_from_document` is masked with `create_masked_lm_predictions` right after it
    is formed, so the random draws interleave as in the original.

    Args:
        all_documents: The documents of the current shard.
        document_index: Index of the document to use.
        max_seq_length: Length of the packed sequence.
        short_seq_prob: Probability of a shorter target length.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on the predictions per sequence.
        vocab_words: The vocabulary in file order.
        rng: The `random.Random` driving the choices.
        do_whole_word_mask: Mask whole words.
        sentence_order: Sentence-order (ALBERT) pairs instead of next-sentence pairs.
        do_masking: If False, return the pairs unmasked (for dynamic masking).
        mask_token_prob: Probability that a chosen word becomes "[MASK]" (`create_masked_lm_predictions`).
        keep_token_prob: Probability that it stays itself.
        random_token_prob: Probability that it becomes a random vocabulary word.

    Returns:
        A list of `TrainingInstance`s.

    Examples:

    >>> docs = [[["a", "b"], ["c", "d"]], [["x", "y", "z"]]]
    >>> insts = create_instances_from_document(docs, 0, 16, 0.0, 0.15, 20, ["a", "b"], random.Random(3))
    >>> all(len(i.masked_lm_positions) >= 1 for i in insts)
    True
    """
    instances = []
    for instance in create_pairs_from_document(
        all_documents, document_index, max_seq_length, short_seq_prob, rng, sentence_order=sentence_order
    ):
        if do_masking:
            tokens, positions, labels = create_masked_lm_predictions(
                instance.tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, do_whole_word_mask,
                mask_token_prob, keep_token_prob, random_token_prob,
            )
            instance = dataclasses.replace(
                instance, tokens=tokens, masked_lm_positions=positions, masked_lm_labels=labels
            )
        instances.append(instance)
    return instances


def create_training_instances(
    documents: Iterable[Document],
    vocab_words: Sequence[str],
    rng: random.Random,
    max_seq_length: int = 128,
    dupe_factor: int = 10,
    short_seq_prob: float = 0.1,
    masked_lm_prob: float = 0.15,
    max_predictions_per_seq: int = 20,
    do_whole_word_mask: bool = False,
    sentence_order: bool = False,
    shard_size_documents: Optional[int] = None,
    do_masking: bool = True,
    stats: Optional[dict] = None,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
) -> Iterator[TrainingInstance]:
    """Streams the `TrainingInstance`s of a corpus, shard by shard (the original's main loop).

    For each shard of at most `shard_size_documents` documents, as the original does for the whole
    corpus: shuffle the documents; for each of `dupe_factor` dupes, for each document, create its
    instances; shuffle the shard's instances; yield them. Only the current shard's documents and
    instances are held in memory. With one shard (`shard_size_documents` None or >= the number of
    documents) the instances and their order equal the original's for the same `rng` seed.

    Args:
        documents: An iterable of documents, e.g. `read_documents(files, tokenizer)`; consumed lazily.
        vocab_words: The vocabulary in file order (`list(tokenizer.vocab.keys())`).
        rng: A `random.Random`, e.g. `random.Random(12345)` (the original's default seed).
        max_seq_length: Length of the packed sequence.
        dupe_factor: Number of passes over each shard (each with different pairs and masks).
        short_seq_prob: Probability of a shorter target length.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on the predictions per sequence.
        do_whole_word_mask: Mask whole words.
        sentence_order: Sentence-order (ALBERT SOP) pairs instead of next-sentence pairs.
        shard_size_documents: Documents per shard (memory bound); None or 0 for the whole corpus at once.
        do_masking: If False, yield unmasked pairs (for dynamic masking in `tf.data`).
        stats: Optional dict updated in place with `documents_read`, `shards` and `instances_created`
            (for progress reports).
        mask_token_prob: Probability that a chosen word becomes "[MASK]" (`create_masked_lm_predictions`).
        keep_token_prob: Probability that it stays itself.
        random_token_prob: Probability that it becomes a random vocabulary word.

    Yields:
        `TrainingInstance`s.

    Examples:

    >>> docs = [[["a", "b"], ["c", "d"]], [["x", "y"], ["z"]]]
    >>> insts = list(create_training_instances(docs, ["[MASK]", "a", "b", "c"], random.Random(12345), max_seq_length=8,
    ...                                        dupe_factor=2))
    >>> len(insts) > 0 and all(len(i.tokens) <= 8 for i in insts)
    True
    """
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length must be >= 5 ([CLS] a [SEP] b [SEP]), got {max_seq_length}")
    check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)
    if do_masking and MASK_TOKEN not in vocab_words:  # else every masked token would be written as [UNK]
        raise UserInputError(f"the vocabulary has no {MASK_TOKEN} token; masked-LM data needs it.")
    if stats is None:
        stats = {}
    stats.setdefault("documents_read", 0)
    stats.setdefault("shards", 0)
    stats.setdefault("instances_created", 0)
    for shard in iter_document_shards(documents, shard_size_documents):
        stats["documents_read"] += len(shard)
        stats["shards"] += 1
        # Remove empty documents, then shuffle (original).
        all_documents = [d for d in shard if d]
        rng.shuffle(all_documents)
        instances: List[TrainingInstance] = []
        for _ in range(dupe_factor):
            for document_index in range(len(all_documents)):
                instances.extend(
                    create_instances_from_document(
                        all_documents,
                        document_index,
                        max_seq_length,
                        short_seq_prob,
                        masked_lm_prob,
                        max_predictions_per_seq,
                        vocab_words,
                        rng,
                        do_whole_word_mask=do_whole_word_mask,
                        sentence_order=sentence_order,
                        do_masking=do_masking,
                        mask_token_prob=mask_token_prob,
                        keep_token_prob=keep_token_prob,
                        random_token_prob=random_token_prob,
                    )
                )
        rng.shuffle(instances)
        stats["instances_created"] += len(instances)
        del shard, all_documents
        yield from instances


ORIGINAL_FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def instance_to_features(
    instance: TrainingInstance, tokenizer, max_seq_length: int, max_predictions_per_seq: int, with_masks: bool = True
) -> "collections.OrderedDict[str, np.ndarray]":
    """The padded feature arrays of one instance, named and ordered as the original's TFRecords.

    `input_ids`, `input_mask`, `segment_ids`: int64 [max_seq_length], zero-padded. `masked_lm_positions`,
    `masked_lm_ids`: int64 [max_predictions_per_seq], zero-padded; `masked_lm_weights`: float32, 1.0 per
    prediction then 0.0. `next_sentence_labels`: int64 [1], 1 if `is_random_next`. With
    `with_masks=False` (unmasked instances for dynamic masking) the three `masked_lm_*` features are
    replaced by `word_starts`: int64 [max_seq_length], 1 where a token does not start with "##".

    Args:
        instance: A `TrainingInstance`.
        tokenizer: Anything with `convert_tokens_to_ids`.
        max_seq_length: Padded sequence length.
        max_predictions_per_seq: Padded number of predictions.
        with_masks: Emit the masked-LM features (True) or `word_starts` (False).

    Returns:
        An `OrderedDict` of numpy arrays.

    Examples:

    >>> class Tok:
    ...     vocab = {"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[MASK]": 3, "a": 4}
    ...     def convert_tokens_to_ids(self, tokens):
    ...         return [self.vocab[t] for t in tokens]
    >>> inst = TrainingInstance(["[CLS]", "[MASK]", "[SEP]", "a", "[SEP]"], [0, 0, 0, 1, 1], True, [1], ["a"])
    >>> f = instance_to_features(inst, Tok(), 8, 2)
    >>> f["input_ids"].tolist(), f["masked_lm_ids"].tolist(), f["next_sentence_labels"].tolist()
    ([1, 3, 2, 4, 2, 0, 0, 0], [4, 0], [1])
    """
    input_ids = list(tokenizer.convert_tokens_to_ids(instance.tokens))
    if len(input_ids) > max_seq_length:
        raise ValueError(f"instance has {len(input_ids)} tokens > max_seq_length={max_seq_length}")
    if len(instance.segment_ids) != len(input_ids):
        raise ValueError("segment_ids and tokens differ in length")

    def pad(values, length, dtype):
        out = np.zeros([length], dtype=dtype)
        out[: len(values)] = values
        return out

    features = collections.OrderedDict()
    features["input_ids"] = pad(input_ids, max_seq_length, np.int64)
    features["input_mask"] = pad([1] * len(input_ids), max_seq_length, np.int64)
    features["segment_ids"] = pad(instance.segment_ids, max_seq_length, np.int64)
    if with_masks:
        positions = list(instance.masked_lm_positions)
        if len(positions) > max_predictions_per_seq:
            raise ValueError(f"{len(positions)} predictions > max_predictions_per_seq={max_predictions_per_seq}")
        masked_lm_ids = list(tokenizer.convert_tokens_to_ids(instance.masked_lm_labels))
        features["masked_lm_positions"] = pad(positions, max_predictions_per_seq, np.int64)
        features["masked_lm_ids"] = pad(masked_lm_ids, max_predictions_per_seq, np.int64)
        features["masked_lm_weights"] = pad([1.0] * len(masked_lm_ids), max_predictions_per_seq, np.float32)
    else:
        features["word_starts"] = pad(word_start_flags(instance.tokens), max_seq_length, np.int64)
    features["next_sentence_labels"] = np.array([instance.next_sentence_label], dtype=np.int64)
    return features
