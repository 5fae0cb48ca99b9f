"""BERT pretraining data: the masked-LM / next-sentence algorithm of google-research/bert, streamed.

This module is pure Python (plus numpy): it turns a text corpus into `TrainingInstance`s exactly as
google-research/bert's `create_pretraining_data.py` does, with the same sequence of choices drawn from
a `random.Random(seed)`. The TensorFlow side (TFRecord files, `tf.data` pipelines, dynamic masking)
lives in `keras_bert_impl/data/tf_pretraining_data.py`; `recipes/create_pretraining_data.py` is the command
line.

Input format (as the original): plain text files, one sentence per line, a blank line between
documents. Sentences are the units that the "A"/"B" segments are built from. The article markup lines of
WikiExtractor's output (`<doc id=... url=... title=...>`, `</doc>`) are dropped and end the current
document, as a blank line does (the original would have tokenized them as sentences).

Differences from the original, all deliberate and documented where they happen:

* **Streaming.** The original reads the whole corpus into memory before creating a single instance
  (google-research/bert issues #612, #616). `create_training_instances` reads documents shard by shard
  (`shard_size_documents` documents at a time), creates all the instances of a shard (every dupe),
  shuffles them and yields them before it reads the next shard. The random "B" document of a
  random-next pair is drawn within the current shard. With `shard_size_documents` at least the number of
  documents in the corpus, the output is identical, instance for instance, to the original's for the
  same seed (tests/test_pretraining_data.py checks this against a port of the original).
* **End of file ends a document.** The original keeps appending to the last document across input
  files when a file does not end with a blank line; here each file's end closes its last document.
* **Whole-word masking, bug #910.** With `do_whole_word_mask` the original chose "[MASK]" / keep /
  random token independently for every WordPiece of a chosen word (so "phil ##am ##mon" could become
  "[MASK] ##am [MASK]"). Here the 80/10/10 (or `mask_token_prob` / `keep_token_prob` / `random_token_prob`,
  paper Table 8) decision is made once per word and applied to all its pieces
  (a random replacement draws one random vocabulary word per piece). Also, a "##" piece only joins the
  word right before it (the original could glue the first piece of a front-truncated B segment to the
  last word of A across the [SEP]). Without whole-word masking every word is one piece and the draws are
  exactly the original's.
* **Sentence-order prediction** (ALBERT, `sentence_order=True`) is an addition; see
  `create_pairs_from_document`.
"""

import collections
import dataclasses
import random
from typing import Callable, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.file_io import open_text

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"

# A document is a list of sentences; a sentence is a list of WordPiece tokens.
Document = List[List[str]]


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


# ---------------------------------------------------------------------------------------------------
# Reading documents
# ---------------------------------------------------------------------------------------------------


def is_wikiextractor_markup(line: str) -> bool:
    """Whether a stripped line is WikiExtractor's article markup: `<doc id=... url=... title=...>` or `</doc>`.

    Examples:

    >>> is_wikiextractor_markup('<doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">')
    True
    >>> is_wikiextractor_markup("</doc>"), is_wikiextractor_markup("<document> is a word.")
    (True, False)
    """
    return line == "</doc>" or (line.startswith("<doc ") and line.endswith(">"))


def read_documents(input_files: Iterable[str], tokenizer, open_fn: Optional[Callable] = None,
                   stats: Optional[dict] = None) -> Iterator[Document]:
    """Yields the tokenized documents of text files, one at a time (never the whole corpus).

    As the original: each line is stripped; a blank line ends the current document; a line whose
    tokenization is empty is dropped; empty documents are dropped. Unlike the original, the end of a
    file also ends its last document, and WikiExtractor's `<doc ...>` / `</doc>` lines
    (`is_wikiextractor_markup`) are dropped and end the current document.

    Args:
        input_files: Paths of text files, read in this order.
        tokenizer: Anything with `tokenize(text) -> list[str]` (e.g. `keras_bert_impl.tokenizers.bert_tokenizer.BertTokenizer`).
        open_fn: `open_fn(path)` returning a text file object; defaults to `file_io.open_text(path)` (UTF-8).
            Pass `tf.io.gfile.GFile` to read from GCS and other TensorFlow file systems.
        stats: Optional dict whose `markup_lines_dropped` counts the WikiExtractor lines dropped.

    Yields:
        Documents: lists of sentences, each a non-empty list of tokens.

    Examples:

    >>> class Ws:
    ...     def tokenize(self, text):
    ...         return text.split()
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "c.txt")
    >>> _ = open(path, "w").write("a b\\nc\\n\\nd e\\n")
    >>> list(read_documents([path], Ws()))
    [[['a', 'b'], ['c']], [['d', 'e']]]
    >>> _ = open(path, "w").write('<doc id="1" url="u" title="T">\\nT\\n\\na b\\n</doc>\\n<doc id="2" url="v" title="U">\\nc\\n')
    >>> stats = {}
    >>> list(read_documents([path], Ws(), stats=stats)), stats
    ([[['T']], [['a', 'b']], [['c']]], {'markup_lines_dropped': 3})
    """
    if stats is None:
        stats = {}
    stats.setdefault("markup_lines_dropped", 0)
    if open_fn is None:

        def open_fn(path):
            return open_text(path)

    for input_file in input_files:
        document: Document = []
        with open_fn(input_file) as reader:
            for line in reader:
                if isinstance(line, bytes):
                    line = line.decode("utf-8")
                line = line.strip()
                # Empty lines are document delimiters (original); so is WikiExtractor's markup, dropped.
                markup = is_wikiextractor_markup(line)
                stats["markup_lines_dropped"] += markup
                if not line or markup:
                    if document:
                        yield document
                    document = []
                    continue
                tokens = tokenizer.tokenize(line)
                if tokens:
                    document.append(tokens)
        if document:
            yield document


def iter_document_shards(
    documents: Iterable[Document], shard_size_documents: Optional[int]
) -> Iterator[List[Document]]:
    """Groups a stream of documents into lists of at most `shard_size_documents` documents.

    Only one shard is held at a time: the next document is pulled from `documents` only after the
    consumer asked for the next shard.

    Args:
        documents: An iterable of documents (e.g. `read_documents(...)`).
        shard_size_documents: Maximum documents per shard; `None` or 0 means one shard with everything
            (the original's in-memory behaviour).

    Yields:
        Lists of documents.

    Examples:

    >>> [len(s) for s in iter_document_shards([[["a"]]] * 5, 2)]
    [2, 2, 1]
    """
    if shard_size_documents is not None and shard_size_documents < 0:
        raise ValueError(f"shard_size_documents must be >= 0 or None, got {shard_size_documents}")
    shard: List[Document] = []
    for document in documents:
        shard.append(document)
        if shard_size_documents and len(shard) >= shard_size_documents:
            yield shard
            shard = []
    if shard:
        yield shard


# ---------------------------------------------------------------------------------------------------
# The algorithm (google-research/bert create_pretraining_data.py)
# ---------------------------------------------------------------------------------------------------


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


def num_masked_lm_predictions(num_tokens: int, masked_lm_prob: float, max_predictions_per_seq: int) -> int:
    """The original's `num_to_predict`: `min(max_predictions_per_seq, max(1, int(round(n * masked_lm_prob))))`.

    `n` counts every token of the sequence, [CLS] and [SEP] included (as the original). Python's `round`
    rounds halves to even.

    Args:
        num_tokens: Length of the (unpadded) sequence.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound.

    Examples:

    >>> num_masked_lm_predictions(128, 0.15, 20)
    19
    >>> num_masked_lm_predictions(5, 0.15, 20)
    1
    """
    return min(max_predictions_per_seq, max(1, int(round(num_tokens * masked_lm_prob))))


def word_start_flags(tokens: Sequence[str]) -> List[int]:
    """1 where a token starts a word, 0 for a "##" continuation piece (the whole-word-masking groups).

    Args:
        tokens: WordPiece tokens.

    Examples:

    >>> word_start_flags(["[CLS]", "phil", "##am", "##mon", "is", "[SEP]"])
    [1, 1, 0, 0, 1, 1]
    """
    return [0 if token.startswith("##") else 1 for token in tokens]


def check_masking_split(mask_token_prob: float, keep_token_prob: float, random_token_prob: float) -> None:
    """Checks a masked-LM replacement split (paper Table 8: MASK / SAME / RND), one line per mistake.

    Each chosen token becomes "[MASK]" with `mask_token_prob`, stays itself with `keep_token_prob`, or
    becomes a random vocabulary token with `random_token_prob`; the original's split is 0.8 / 0.1 / 0.1.

    Raises:
        UserInputError: a probability outside [0, 1], naming it, or three that do not sum to 1 (within 1e-6).

    Examples:

    >>> check_masking_split(0.8, 0.1, 0.1)
    >>> try:
    ...     check_masking_split(0.8, 0.0, 0.1)
    ... except UserInputError as error:
    ...     print(error)
    mask_token_prob + keep_token_prob + random_token_prob must sum to 1, got 0.8 + 0.0 + 0.1 = 0.9.
    """
    values = {"mask_token_prob": mask_token_prob, "keep_token_prob": keep_token_prob,
              "random_token_prob": random_token_prob}
    for name, value in values.items():
        if not 0.0 <= float(value) <= 1.0:
            raise UserInputError(f"{name} must be in [0, 1], got {value}.")
    total = float(mask_token_prob) + float(keep_token_prob) + float(random_token_prob)
    if abs(total - 1.0) > 1e-6:
        raise UserInputError(f"mask_token_prob + keep_token_prob + random_token_prob must sum to 1, got "
                             f"{mask_token_prob} + {keep_token_prob} + {random_token_prob} = {round(total, 6)}.")


def create_masked_lm_predictions(
    tokens: Sequence[str],
    masked_lm_prob: float,
    max_predictions_per_seq: int,
    vocab_words: Sequence[str],
    rng: random.Random,
    do_whole_word_mask: bool = False,
    mask_token_prob: float = 0.8,
    keep_token_prob: float = 0.1,
    random_token_prob: float = 0.1,
):
    """Chooses and applies the masked-LM predictions of one sequence (original algorithm).

    Candidates are all positions except [CLS] and [SEP]; with `do_whole_word_mask` a "##" piece joins
    the word right before it. The candidate words are shuffled and taken in that order while the number
    of predictions stays within `num_masked_lm_predictions(len(tokens), ...)`; a word that would overflow
    is skipped (a later, shorter one may still fit). Each chosen word becomes "[MASK]" with probability
    `mask_token_prob` (0.8), stays itself with `keep_token_prob` (0.1), or becomes a random vocabulary word
    with `random_token_prob` (0.1) - decided once per word (bug #910 fix; identical to the original for
    one-piece words). The decision draws as the original: `rng.random() < mask_token_prob` gives [MASK];
    otherwise a second `rng.random() < keep_token_prob / (keep_token_prob + random_token_prob)` keeps the
    word (0.1 / 0.2 == 0.5 exactly, the original's threshold), else a random word.

    Args:
        tokens: The packed sequence `[CLS] A [SEP] B [SEP]`.
        masked_lm_prob: Fraction of tokens to predict.
        max_predictions_per_seq: Upper bound on the predictions.
        vocab_words: The vocabulary, in file order (random replacements are drawn uniformly from it).
        rng: The `random.Random` driving the choices.
        do_whole_word_mask: Mask whole words rather than single WordPieces.
        mask_token_prob: Probability that a chosen word becomes "[MASK]" (paper Table 8's MASK).
        keep_token_prob: Probability that it stays itself (SAME).
        random_token_prob: Probability that it becomes a random vocabulary word (RND; the draw is uniform
            over `vocab_words`, so it can be the word itself or "[MASK]"). The three sum to 1.

    Returns:
        `(output_tokens, masked_lm_positions, masked_lm_labels)`: the masked copy of `tokens`, the sorted
        positions of the predictions and the original tokens there.

    Examples:

    >>> tokens = ["[CLS]", "a", "b", "c", "[SEP]"]
    >>> out, pos, labels = create_masked_lm_predictions(tokens, 0.4, 20, ["a", "b", "c"], random.Random(1))
    >>> len(pos), labels == [tokens[p] for p in pos], 0 in pos or 4 in pos
    (2, True, False)
    """
    check_masking_split(mask_token_prob, keep_token_prob, random_token_prob)
    # Share of "keep" among the non-[MASK] outcomes: 0.5 for the original's 0.1 / 0.1.
    not_masked = keep_token_prob + random_token_prob
    keep_share = keep_token_prob / not_masked if not_masked > 0 else 1.0

    # Candidate groups (lists of positions), in sequence order.
    cand_indexes: List[List[int]] = []
    for i, token in enumerate(tokens):
        if token == CLS_TOKEN or token == SEP_TOKEN:
            continue
        # Whole Word Masking: all the WordPieces of a word are masked together. A "##" piece joins the
        # previous candidate only if that candidate ends right before it (never across a [SEP]).
        if do_whole_word_mask and cand_indexes and token.startswith("##") and cand_indexes[-1][-1] == i - 1:
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)

    output_tokens = list(tokens)
    num_to_predict = num_masked_lm_predictions(len(tokens), masked_lm_prob, max_predictions_per_seq)

    masked_lms = []  # (index, label)
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        # If adding a whole-word mask would exceed the maximum number of predictions, skip this word.
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        if any(index in covered_indexes for index in index_set):
            continue
        # The MASK/SAME/RND decision, once per word (the original drew it per piece: bug #910). For a
        # one-piece word at the default split the draws are the original's: random() < 0.8, then
        # random() < 0.5, then randint.
        if rng.random() < mask_token_prob:
            replacement = "mask"  # 80% of the time by default, replace with [MASK]
        elif rng.random() < keep_share:
            replacement = "keep"  # 10% of the time by default, keep original
        else:
            replacement = "random"  # 10% of the time by default, replace with a random word
        for index in index_set:
            covered_indexes.add(index)
            if replacement == "mask":
                masked_token = MASK_TOKEN
            elif replacement == "keep":
                masked_token = tokens[index]
            else:
                masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output_tokens[index] = masked_token
            masked_lms.append((index, tokens[index]))
    assert len(masked_lms) <= num_to_predict
    masked_lms.sort(key=lambda x: x[0])
    masked_lm_positions = [index for index, _ in masked_lms]
    masked_lm_labels = [label for _, label in masked_lms]
    return output_tokens, masked_lm_positions, masked_lm_labels


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


# ---------------------------------------------------------------------------------------------------
# Features (the original's write_instance_to_example_files, minus TensorFlow)
# ---------------------------------------------------------------------------------------------------

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
