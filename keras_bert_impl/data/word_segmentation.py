"""Whole words of Chinese text for whole-word masking: a segmenter's words marked on the WordPiece tokens.

BERT's tokenizer makes every CJK ideograph a token of its own, so Chinese has no "##" pieces and whole-word
masking (`masked_lm_predictions`) would mask single characters: `清华[MASK]学`. HFL's Chinese-BERT-wwm (and
transformers' `run_chinese_ref.py`) segment the text into words and mask all characters of a word together.
Here a segmenter's multi-character words of CJK ideographs mark their second and later characters as
continuing the word (`ContinuingToken`, a `str` equal to the token itself, so ids and labels do not change);
the masking groups those with the character before them exactly as it groups a "##" piece with its word,
in the static masking of `create_pretraining_data.py` and in the `word_starts` of the dynamic-masking path.

Segmenters: "jieba" (the `jieba` package, an optional extra: `pip install 'keras_bert_impl[chinese]'`).
"""

import logging

from keras_bert_impl.tokenizers.basic_tokenizer import is_cjk_char
from keras_bert_impl.utils.errors import UserInputError

WORD_SEGMENTERS = ("jieba",)


class ContinuingToken(str):
    """A token that continues the word of the token before it (a CJK character after the first of its
    segmenter word). Equal to, and hashed as, the token itself."""

    __slots__ = ()


def continues_word(token):
    """Whether `token` joins the word before it in whole-word masking: a "##" piece or a `ContinuingToken`.

    Examples:

    >>> continues_word("##am"), continues_word(ContinuingToken("华")), continues_word("华")
    (True, True, False)
    """
    return token.startswith("##") or isinstance(token, ContinuingToken)


def get_segmenter(name):
    """The function `text -> [(word, start, end)]` of the segmenter `name` (one of `WORD_SEGMENTERS`).

    Raises:
        UserInputError: an unknown name, or the segmenter's package is not installed.
    """
    if name not in WORD_SEGMENTERS:
        raise UserInputError(f"--word_segmenter: one of {', '.join(WORD_SEGMENTERS)}, got {name!r}.")
    try:
        import jieba
    except ImportError:
        raise UserInputError("--word_segmenter=jieba needs the jieba package: pip install "
                             "'keras_bert_impl[chinese]' (or pip install jieba).") from None
    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict ..." lines on stderr
    return lambda text: list(jieba.tokenize(text))


def continuation_offsets(words):
    """The character offsets that continue a word: the second and later characters of every segmenter word
    of two or more characters, all CJK ideographs (as `run_chinese_ref.py` marks them).

    Examples:

    >>> sorted(continuation_offsets([("清华大学", 0, 4), ("位于", 4, 6), ("BERT", 6, 10), ("。", 10, 11)]))
    [1, 2, 3, 5]
    """
    offsets = set()
    for word, start, end in words:
        if end - start > 1 and all(is_cjk_char(char) for char in word):
            offsets.update(range(start + 1, end))
    return offsets


def mark_whole_words(text, tokenizer, segmenter):
    """The WordPiece tokens of `text`, those that continue a segmenter word as `ContinuingToken`s.

    Args:
        text: one line of text.
        tokenizer: a `BertTokenizer` (`tokenize_with_offsets`).
        segmenter: `text -> [(word, start, end)]` (`get_segmenter`).

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "清", "华", "大", "学", "在", "北", "京"])
    >>> words = lambda text: [("清华大学", 0, 4), ("在", 4, 5), ("北京", 5, 7)]
    >>> tokens = mark_whole_words("清华大学在北京", tokenizer, words)
    >>> tokens, [continues_word(t) for t in tokens]
    (['清', '华', '大', '学', '在', '北', '京'], [False, True, True, True, False, False, True])
    """
    tokens, offsets = tokenizer.tokenize_with_offsets(text)
    continuing = continuation_offsets(segmenter(text))
    return [ContinuingToken(token) if start in continuing and not token.startswith("##") and end - start == 1
            else token for token, (start, end) in zip(tokens, offsets)]
