"""The masked-LM predictions of one packed sequence: google-research/bert's `create_masked_lm_predictions`,
with the same sequence of random draws.

The candidates are every WordPiece but [CLS] and [SEP] (with whole-word masking, the words); they are
shuffled and taken while the number of predictions stays within `num_masked_lm_predictions`; each chosen
word becomes [MASK] (80%), stays (10%) or becomes a random vocabulary word (10%), or the split of the
paper's Table 8 (`mask_token_prob`, `keep_token_prob`, `random_token_prob`, checked by
`check_masking_split`). `data/tf_dynamic_masking.py` applies the same rules inside a `tf.data` pipeline.

Difference from the original, deliberate: **whole-word masking, bug #910.** With `do_whole_word_mask` the
original chose "[MASK]" / keep / random token independently for every WordPiece of a chosen word (so
"phil ##am ##mon" could become "[MASK] ##am [MASK]"). Here the decision is made once per word and applied to
all its pieces (a random replacement draws one random vocabulary word per piece). Also, a "##" piece only
joins the word right before it (the original could glue the first piece of a front-truncated B segment to
the last word of A across the [SEP]). Without whole-word masking every word is one piece and the draws are
exactly the original's. Chinese words come from a segmenter (`word_segmentation`): the characters after the
first of a word join it as "##" pieces do.
"""

import random
from typing import List, Sequence

from keras_bert_impl.data.word_segmentation import continues_word
from keras_bert_impl.utils.errors import UserInputError

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"


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
    """1 where a token starts a word, 0 for a "##" continuation piece or a character that continues a
    segmenter word (`word_segmentation.continues_word`): the whole-word-masking groups.

    Args:
        tokens: WordPiece tokens.

    Examples:

    >>> word_start_flags(["[CLS]", "phil", "##am", "##mon", "is", "[SEP]"])
    [1, 1, 0, 0, 1, 1]
    """
    return [0 if continues_word(token) else 1 for token in tokens]


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
        # Whole Word Masking: all the WordPieces of a word are masked together. A "##" piece (or a character
        # continuing a segmenter word) joins the previous candidate only if that candidate ends right before it
        # (never across a [SEP]).
        if do_whole_word_mask and cand_indexes and continues_word(token) and cand_indexes[-1][-1] == i - 1:
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
