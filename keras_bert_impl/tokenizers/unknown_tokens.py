"""The [UNK] report: how much of the text a recipe read its vocabulary does not cover.

`unknown_token_stats` tokenizes texts as `BertTokenizer` does and counts their WordPiece tokens, the
[UNK] tokens among them, and what each [UNK] stands for (its whole word: a CJK ideograph, or a word with
a piece the vocabulary lacks). `report_unknown_tokens` logs that in one line (the package's logger: a
recipe's line on stdout) and warns (`UnknownTokenWarning`) when more than 1% of the tokens are [UNK]: a
Chinese file read with an English vocabulary, or full-width forms without `--nfkc`, never passes silently. Every fine-tuning recipe calls it
once, on the texts of the files it read (`runners.finetuning`).

Examples:

>>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
>>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "ann", "sang", "州"])
>>> stats = unknown_token_stats(tokenizer, ["Ann sang", "杭州 杭州 Bob"])
>>> stats.num_tokens, stats.num_unknown, stats.most_unknown
(7, 3, [('杭', 2), ('Bob', 1)])
"""

import collections
import dataclasses
import logging
import warnings

from keras_bert_impl.tokenizers.basic_tokenizer import word_regex

logger = logging.getLogger(__name__)

# The share of [UNK] tokens above which `report_unknown_tokens` warns.
WARN_ABOVE = 0.01


class UnknownTokenWarning(UserWarning):
    """More than `WARN_ABOVE` of the tokens of the data are [UNK]."""


@dataclasses.dataclass
class UnknownTokenStats:
    """The [UNK] tokens of some texts.

    Attributes:
        num_tokens: WordPiece tokens of the texts.
        num_unknown: [UNK] tokens among them.
        most_unknown: (text, count) of what became [UNK] (the characters or words of the texts), most frequent
            first (ties: in order of appearance), at most `top` of them.
    """

    num_tokens: int
    num_unknown: int
    most_unknown: list

    @property
    def share(self):
        """The [UNK] tokens' share of all tokens (0 without tokens)."""
        return self.num_unknown / self.num_tokens if self.num_tokens else 0.0


def unknown_token_stats(tokenizer, texts, top=10):
    """Counts the tokens and the [UNK] tokens of `texts` (str) as `tokenizer` (a `BertTokenizer`) tokenizes
    them, each distinct raw word once (`basic_tokenizer.word_regex`); `top`: how many of the most frequent
    unknown characters or words to keep."""
    words = collections.Counter()
    for text in texts:
        words.update(word_regex().findall(text))
    num_tokens = num_unknown = 0
    unknown = collections.Counter()
    for word, count in words.items():
        tokens, offsets = tokenizer.tokenize_with_offsets(word)
        num_tokens += count * len(tokens)
        for token, (start, end) in zip(tokens, offsets):
            if token == "[UNK]":
                num_unknown += count
                unknown[word[start:end]] += count
    return UnknownTokenStats(num_tokens, num_unknown, unknown.most_common(top))


def report_unknown_tokens(tokenizer, texts, what="the data", top=10):
    """Logs the share of [UNK] tokens of `texts` and the characters (words) most often unknown, in one line,
    and warns with an `UnknownTokenWarning` when the share is above `WARN_ABOVE` (1%). Returns the
    `UnknownTokenStats`.

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "ann", "sang"])
    >>> report_unknown_tokens(tokenizer, ["Ann sang"], "train.txt").num_unknown  # logs "[UNK] tokens: none of ..."
    0
    """
    stats = unknown_token_stats(tokenizer, texts, top)
    if not stats.num_unknown:
        logger.info(f"[UNK] tokens: none of the {stats.num_tokens:,} tokens of {what}")
        return stats
    examples = ", ".join(f"{text!r} ({count:,})" for text, count in stats.most_unknown)
    logger.info(f"[UNK] tokens: {stats.num_unknown:,} of the {stats.num_tokens:,} tokens of {what} "
                f"({stats.share:.2%}); most often unknown: {examples}")
    if stats.share > WARN_ABOVE:
        warnings.warn(f"{stats.share:.2%} of the tokens of {what} are [UNK] (more than {WARN_ABOVE:.0%}): the "
                      "vocabulary lacks their characters or words (check --vocab_file and --init_checkpoint, "
                      "--do_lower_case, and --nfkc for full-width forms).", UnknownTokenWarning, stacklevel=2)
    return stats
