"""The original BERT's basic tokenization rules (google-research/bert tokenization.py), one predicate each.

The text is processed as the original does it, before WordPiece:

1. Clean: drop U+0000, U+FFFD and control characters (categories Cc and Cf, except tab, newline and
   carriage return); tab, newline, carriage return and category Zs are whitespace.
2. Put every CJK ideograph (the original's code-point ranges) in its own word.
3. Split on whitespace (Python's `str.split`, so U+2028 and U+2029 also separate words).
4. Per word, when `do_lower_case`: `str.lower()`, then NFD and drop the nonspacing marks (Mn).
5. Split off every punctuation character (ASCII 33-47, 58-64, 91-96, 123-126 and categories P*).

Not the original's, and off by default: `BertTokenizer(normalize="nfkc")` first replaces every character
by its NFKC form alone (`nfkc_char`). `split_words` is the word split of the word-level tasks' raw
strings (whitespace, and every CJK ideograph a word).

`basic_tokenize` applies them to a text; `BertTokenizer` (bert_tokenizer.py) applies them word by word
with character offsets, then WordPiece; the in-graph twin (tf_bert_tokenizer.py) builds its tables from
these same predicates.
"""

import functools
import itertools
import re
import unicodedata

from keras_bert_impl.utils.errors import UserInputError, describe

MAX_INPUT_CHARS_PER_WORD = 200

# The CJK Unified Ideographs blocks, as listed by the original `_is_chinese_char`.
CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


# --- The normalization rules, one predicate each (as in the original) --------------------------------


def _is_whitespace(char):
    """Whether `char` is whitespace for the cleaning step: tab, newline, carriage return or Zs."""
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Whether `char` is a control character (Cc or Cf), tab, newline and carriage return excepted."""
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Whether `char` is punctuation: every non-alphanumeric ASCII symbol, and Unicode categories P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Whether the code point `cp` is a CJK ideograph (one of `CJK_RANGES`)."""
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_cjk_char(char):
    """Whether the character `char` is a CJK ideograph (`_is_chinese_char` of its code point)."""
    return _is_chinese_char(ord(char))


def _is_removed(char):
    """Whether cleaning deletes `char`: U+0000, U+FFFD and control characters."""
    return char in ("\x00", "\ufffd") or _is_control(char)


def _is_separator(char):
    """Whether `char` separates words: cleaning whitespace, or what `str.split` splits on (U+2028...)."""
    return not _is_removed(char) and (_is_whitespace(char) or char.isspace())


def _strip_accents(text):
    """NFD, then drop the nonspacing marks (category Mn)."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def normalize_word(word, do_lower_case):
    """Normalizes one cleaned word as the original does: lower-case and strip accents, or nothing."""
    return _strip_accents(word.lower()) if do_lower_case else word


@functools.lru_cache(maxsize=65536)
def normalize_char(char, do_lower_case):
    """Normalizes one character alone (`normalize_word` of it); used to map offsets back to the text.

    Lower-casing alone differs from lower-casing in context only for a final capital sigma ("Σ" at the
    end of a word lowers to "ς", alone to "σ"); callers handle that case.
    """
    return normalize_word(char, do_lower_case)


@functools.lru_cache(maxsize=65536)
def nfkc_char(char):
    """The NFKC form of one character alone (`BertTokenizer(normalize="nfkc")`): full-width letters, digits
    and punctuation become their ASCII forms, ligatures and squared words expand ("ﬁ" -> "fi", "㍿" -> "株式会社")."""
    return unicodedata.normalize("NFKC", char)


def _char_class(chars):
    """A regex character class (without brackets) of the given characters."""
    return "".join(re.escape(c) for c in chars)


def _cjk_class():
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES)


@functools.lru_cache(maxsize=None)
def word_regex():
    """Compiled regex whose matches are the raw words of a text: runs of non-separator, non-CJK
    characters, and single CJK ideographs. Removed (control) characters stay inside the raw words."""
    # Every separator is in the Basic Multilingual Plane (Zs, tab/newline/CR, U+2028, U+2029).
    separators = [chr(cp) for cp in range(0x10000) if _is_separator(chr(cp))]
    sep, cjk = _char_class(separators), _cjk_class()
    return re.compile(f"[^{sep}{cjk}]+|[{cjk}]")


@functools.lru_cache(maxsize=None)
def _cjk_split_regex():
    cjk = _cjk_class()
    return re.compile(f"[{cjk}]|[^{cjk}]+")


def split_cjk(word):
    """A word cut into its CJK ideographs, each alone, and the runs of other characters between them.

    >>> split_cjk("2019年在杭州"), split_cjk("Hangzhou")
    (['2019', '年', '在', '杭', '州'], ['Hangzhou'])
    """
    if word.isascii():
        return [word]
    return _cjk_split_regex().findall(word)


def split_words(text):
    """The words of a text for word-level tasks: split on whitespace (`str.split`), every CJK ideograph a
    word of its own (unspaced Chinese becomes one word a character, as the NER SavedModel splits it).

    >>> split_words("周杰昨天从广州回来了。 Peter ran")
    ['周', '杰', '昨', '天', '从', '广', '州', '回', '来', '了', '。', 'Peter', 'ran']
    """
    return [piece for word in text.split() for piece in split_cjk(word)]


# ASCII punctuation split for the fast path: a run of non-punctuation, or one punctuation character.
_ASCII_PUNCT = "".join(chr(cp) for cp in range(128) if _is_punctuation(chr(cp)))
_ASCII_SPLIT_RE = re.compile(f"[^{re.escape(_ASCII_PUNCT)}]+|[{re.escape(_ASCII_PUNCT)}]")
ASCII_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


def split_on_punctuation(text):
    """Splits a normalized word into `(piece, start)`: every punctuation character alone; whitespace
    (which normalization may produce) separates."""
    if text.isascii():
        return [(m.group(), m.start()) for m in _ASCII_SPLIT_RE.finditer(text)]
    out, begin = [], None
    for i, c in enumerate(text):
        if c.isspace() or _is_punctuation(c):
            if begin is not None:
                out.append((text[begin:i], begin))
                begin = None
            if not c.isspace():
                out.append((c, i))
        elif begin is None:
            begin = i
    if begin is not None:
        out.append((text[begin:], begin))
    return out


@functools.lru_cache(maxsize=262144)
def _basic_tokenize_raw_word(raw, do_lower_case):
    cleaned = "".join(c for c in raw if not _is_removed(c)) if not raw.isascii() or ASCII_CONTROL_RE.search(raw) else raw
    return tuple(piece for piece, _ in split_on_punctuation(normalize_word(cleaned, do_lower_case)))


def basic_tokenize(text, do_lower_case=True):
    """The original `BasicTokenizer.tokenize`: clean, split CJK, whitespace and punctuation, and
    lower-case + strip accents when `do_lower_case`. Returns the list of words (before WordPiece)."""
    check_text(text, "text")
    return list(itertools.chain.from_iterable(_basic_tokenize_raw_word(w, do_lower_case) for w in word_regex().findall(text)))


def check_text(text, name):
    """Refuses (`UserInputError`) a `text` that is not a str (None, a number, NaN), naming it `name` (e.g.
    "x[3]") and showing what it is."""
    if text is None:
        raise UserInputError(f"{name} is None; expected a str.")
    if not isinstance(text, str):
        raise UserInputError(f"{name} must be a str, got {describe(text)}.")

