"""The fast path of `BertTokenizer`'s batch encoding: Hugging Face's `tokenizers` library (Rust), configured
to give the original's tokens, ids and character offsets, where it is installed.

Configured as the original tokenizes (google-research/bert's `FullTokenizer`): `BertNormalizer` (text cleaning,
spaces around CJK ideographs, lower-casing and accent stripping for an uncased vocabulary, neither for a cased
one), `BertPreTokenizer` (whitespace and punctuation), and `WordPiece` with `##` continuations and the
original's 200-character word cap (transformers' `BertTokenizerFast` caps at 100), with no added tokens, so
"[CLS]" inside the text is text, as in the original.

When which path runs (`BertTokenizer.__call__`, the batch encoding of every preprocessor and recipe):
- this one, when `tokenizers` is installed and the tokenizer has `fast_path=True`, `normalize=None` and
  `split_special_tokens=True` (the defaults), for every text but those of `needs_python_path`;
- the Python path (`BertTokenizer._encode_text`) for every other text and tokenizer: lower-casing, Python
  turns a capital sigma that ends a word into "ς", Rust always into "σ", so a text where a "Σ" is not followed
  by a letter goes the Python way when the tokenizer lower-cases.
`tokenize`, `tokenize_with_offsets` and everything else always run the Python path.

Both paths give identical ids and offsets (`tests/test_tokenization.py` compares them on the held-out cases
and on a mixed-script corpus). Which is faster depends on the words (`benchmarks/tokenization_benchmark.py`,
`benchmarks/results/tokenization/results.md`): this one on words seen for the first time (a dataset's one
pass, a pipeline's new inputs), the Python path's word cache on words seen before (the same texts again).
"""

import re

from keras_bert_impl.tokenizers.basic_tokenizer import MAX_INPUT_CHARS_PER_WORD
from keras_bert_impl.utils.optional_dependencies import is_installed

# A capital sigma not followed by a letter: it may end a word (see the module docstring).
_FINAL_SIGMA_RE = re.compile("\u03a3(?![^\\W\\d_])")


def needs_python_path(text, do_lower_case):
    """Whether `text` goes the Python way: lower-cased, a capital sigma that may end a word.

    Examples:

    >>> needs_python_path("ΟΔΟΣ", True), needs_python_path("ΣΑΣ ΟΔΟΣ", False), needs_python_path("ΣΑ", True)
    (True, False, False)
    """
    return bool(do_lower_case) and _FINAL_SIGMA_RE.search(text) is not None


def available():
    """Whether the `tokenizers` package is installed (the fast path can be built).

    Examples:

    >>> isinstance(available(), bool)
    True
    """
    return is_installed("tokenizers")


class FastWordPiece:
    """Encodes texts as the original tokenizer does, with `tokenizers` (Rust).

    Args:
        vocab: token -> id (the `BertTokenizer`'s vocabulary).
        do_lower_case: Lower-case and strip accents (uncased vocabularies).

    Examples:

    >>> vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "una": 4, "##ffa": 5, "##ble": 6, ",": 7}
    >>> fast = FastWordPiece(vocab, do_lower_case=True)  # doctest: +SKIP
    >>> fast.encode_batch(["UNaff\\u00E0ble,", "\\u03a3"], with_offsets=True)  # doctest: +SKIP
    [([4, 5, 6, 7], [0, 3, 5, 8], [3, 5, 8, 9]), None]
    """

    def __init__(self, vocab, do_lower_case):
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

        tokenizer = Tokenizer(models.WordPiece(dict(vocab), unk_token="[UNK]", continuing_subword_prefix="##",
                                               max_input_chars_per_word=MAX_INPUT_CHARS_PER_WORD))
        tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                          strip_accents=bool(do_lower_case),
                                                          lowercase=bool(do_lower_case))
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        self._tokenizer = tokenizer
        self.do_lower_case = bool(do_lower_case)

    def encode_batch(self, texts, with_offsets):
        """`(ids, starts, ends)` (lists; starts and ends empty without offsets) of each text, or None for a text
        that the Python path must encode (`needs_python_path`)."""
        fast = [i for i, text in enumerate(texts) if not needs_python_path(text, self.do_lower_case)]
        encodings = self._tokenizer.encode_batch([texts[i] for i in fast], add_special_tokens=False)
        results = [None] * len(texts)
        for i, encoding in zip(fast, encodings):
            if with_offsets:
                offsets = encoding.offsets
                results[i] = (encoding.ids, [s for s, _ in offsets], [e for _, e in offsets])
            else:
                results[i] = (encoding.ids, [], [])
        return results
