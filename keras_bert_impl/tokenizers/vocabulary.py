"""Vocabulary files: reading vocab.txt and tokenizer.json, and checking a vocabulary against a model.

`load_vocab` reads the original's vocab.txt (one token a line, ids by line number); `read_tokenizer_json`
reads a Hugging Face tokenizers file with a WordPiece model or a keras-hub preset's tokenizer entry;
`check_vocab_size` refuses a vocabulary whose ids do not fit a model's embedding table.
"""

import json
import os
import warnings

from keras_bert_impl.utils.errors import UserInputError

# The special tokens a learned vocabulary begins with (`tf_vocab_learning`, learn_vocab.py's --reserved_tokens).
RESERVED_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def load_vocab(vocab_file):
    """Reads a vocab.txt (one token a line, ids by line number) into an ordered list of tokens.

    Like the original, each line is stripped of surrounding whitespace, and a blank line is the token ""
    at its id (kept with a warning naming the file and line: it shifts no id, but no text maps to it).
    Raises `ValueError` for a missing or empty file, and `UserInputError` (a ValueError) naming the file
    and line for bytes that are not UTF-8 and for a token that repeats an earlier line (the original
    would silently map it to its last id, leaving the earlier id unused).

    Examples:

    >>> import pathlib, tempfile
    >>> vocab_file = pathlib.Path(tempfile.mkdtemp()) / "vocab.txt"
    >>> _ = vocab_file.write_text("[PAD]\\n[UNK]\\n[CLS]\\n[SEP]\\nrun\\n##ning\\nrun\\n")
    >>> load_vocab(vocab_file)
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: ...vocab.txt:7: the token 'run' repeats line 5; expected each token once (its line number is its id).
    """
    if not isinstance(vocab_file, (str, os.PathLike)):
        raise TypeError(f"vocab_file must be a path (str or os.PathLike), got {type(vocab_file).__name__}.")
    vocab_file = os.fspath(vocab_file)
    if not os.path.isfile(vocab_file):
        raise ValueError(f"Vocabulary file not found: {vocab_file!r}.")
    with open(vocab_file, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines or not any(line.strip() for line in lines):
        raise ValueError(f"Vocabulary file {vocab_file!r} is empty.")
    tokens, first_line, blank_lines = [], {}, []
    for number, line in enumerate(lines, start=1):
        try:
            token = line.decode("utf-8").strip()
        except UnicodeDecodeError as e:
            raise UserInputError(
                f"{vocab_file}:{number}: the bytes {line[e.start:e.end]!r} of line {number} are not valid UTF-8 "
                f"({e.reason})."
            ) from None
        if not token:
            blank_lines.append(number)
        elif token in first_line:
            raise UserInputError(f"{vocab_file}:{number}: the token {token!r} repeats line {first_line[token]}; "
                                 "expected each token once (its line number is its id).")
        first_line.setdefault(token, number)
        tokens.append(token)
    if blank_lines:
        warnings.warn(f"{vocab_file}:{blank_lines[0]}: blank line ({len(blank_lines)} in all); kept as the token "
                      "'' so that the ids of the lines below stay their line numbers, as the original "
                      "load_vocab does, but no text maps to it.", stacklevel=2)
    return tokens


def _checked_token_list(tokens):
    """A vocabulary given as a list of tokens (id = index), checked as `load_vocab` checks a file."""
    first = {}
    for index, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"vocabulary[{index}] must be a str, got {type(token).__name__}.")
        if token and token in first:
            raise ValueError(f"vocabulary[{index}]: the token {token!r} repeats vocabulary[{first[token]}]; "
                             "expected each token once (its index is its id).")
        first.setdefault(token, index)
    if not tokens:
        raise ValueError("The vocabulary list is empty.")
    return list(tokens)


def _bert_normalizer(normalizer):
    """The BertNormalizer entry of a tokenizer.json normalizer (possibly inside a Sequence), or None."""
    if not isinstance(normalizer, dict):
        return None
    if normalizer.get("type") == "BertNormalizer":
        return normalizer
    if normalizer.get("type") == "Sequence":
        for entry in normalizer.get("normalizers") or []:
            found = _bert_normalizer(entry)
            if found is not None:
                return found
    return None


def _warn_accents(path, lowercase, strip_accents):
    if strip_accents is not None and bool(strip_accents) != bool(lowercase):
        warnings.warn(
            f"{path}: lowercase={bool(lowercase)} with strip_accents={bool(strip_accents)}; this tokenizer's "
            f"do_lower_case={bool(lowercase)} {'strips' if lowercase else 'keeps'} accents, so accented text may "
            "tokenize differently.",
            stacklevel=4,
        )


def _read_keras_hub_tokenizer(path, values):
    """(tokens, do_lower_case) of a keras-hub preset's tokenizer.json and assets/tokenizer/vocabulary.txt."""
    if values["class_name"] != "BertTokenizer":
        raise UserInputError(
            f"{path}: a keras-hub {values['class_name']}, not BertTokenizer; expected a WordPiece BERT tokenizer."
        )
    config = values["config"]
    vocabulary = config.get("vocabulary")
    if not isinstance(vocabulary, list):
        vocabulary = os.path.join(os.path.dirname(path), "assets", "tokenizer", "vocabulary.txt")
        if not os.path.isfile(vocabulary):
            raise UserInputError(f"{path}: a keras-hub BertTokenizer whose vocabulary file {vocabulary} is missing.")
        vocabulary = load_vocab(vocabulary)
    lowercase = bool(config.get("lowercase", False))
    _warn_accents(path, lowercase, config.get("strip_accents", False))
    return vocabulary, lowercase


def read_tokenizer_json(path):
    """(tokens in id order, do_lower_case) of a tokenizer.json.

    Reads a Hugging Face tokenizers file whose `model` is WordPiece (`model.vocab`: token -> id;
    lower-casing from its `BertNormalizer`, possibly inside a `Sequence`; no BertNormalizer: no
    lower-casing), or a keras-hub preset's serialized BertTokenizer (`config.lowercase`, with the
    vocabulary in the preset's assets/tokenizer/vocabulary.txt). A normalizer whose `strip_accents`
    differs from `lowercase` gives a warning: `do_lower_case` lower-cases and strips accents together.

    Raises:
        UserInputError: the file is not JSON, its model is not WordPiece (the message names the type),
            its ids are not 0..n-1, or its continuation prefix is not `##`.

    Examples:

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "tokenizer.json")
    >>> vocab = {"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "##ning": 4, "run": 3}
    >>> with open(path, "w") as f:
    ...     json.dump({"normalizer": {"type": "BertNormalizer", "lowercase": True},
    ...                "model": {"type": "WordPiece", "vocab": vocab}}, f)
    >>> read_tokenizer_json(path)
    (['[UNK]', '[CLS]', '[SEP]', 'run', '##ning'], True)
    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> BertTokenizer.from_pretrained(os.path.dirname(path)).tokenize("Running")
    ['run', '##ning']
    """
    try:
        with open(path, encoding="utf-8") as f:
            values = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UserInputError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(values, dict):
        raise UserInputError(f"{path}: expected a JSON object (a tokenizers file with a WordPiece model).")
    if "class_name" in values and isinstance(values.get("config"), dict):
        return _read_keras_hub_tokenizer(path, values)
    model = values.get("model")
    model_type = model.get("type") if isinstance(model, dict) else None
    if model_type != "WordPiece":
        raise UserInputError(f"{path}: the tokenizer model is {model_type}, not WordPiece; expected a BERT WordPiece tokenizer.")
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise UserInputError(f"{path}: continuing_subword_prefix is {prefix!r}; expected '##'.")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise UserInputError(f"{path}: model.vocab must be a non-empty object of token -> id.")
    tokens = [None] * len(vocab)
    for token, index in vocab.items():
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(vocab) or tokens[index] is not None:
            raise UserInputError(
                f"{path}: model.vocab gives {token!r} the id {index!r}; expected each id of 0..{len(vocab) - 1} once."
            )
        tokens[index] = token
    normalizer = _bert_normalizer(values.get("normalizer"))
    if normalizer is None:
        return tokens, False
    lowercase = bool(normalizer.get("lowercase", True))
    _warn_accents(path, lowercase, normalizer.get("strip_accents"))
    return tokens, lowercase



# A model's embedding table may hold a few rows past its vocabulary: NVIDIA's BERT checkpoints pad 30,522 tokens
# to 30,528 rows (a multiple of 8, for tensor cores), Nordic BERT's 31,748 tokens have 32,000 rows (room for
# added words), Baidu's converted ERNIE 17,964 tokens 18,000 rows. A vocabulary that leaves at most this share
# of the rows without a token is the model's; a shorter one is another model's or a cut file, under which the
# texts get the wrong ids or [UNK].
MAX_UNUSED_ROWS = 0.01


def check_vocab_size(tokenizer, vocab_size, where, allow_smaller=False):
    """Refuses a tokenizer whose vocabulary is not the one of a model's embedding table of `vocab_size` rows.

    An id >= `vocab_size` is out of the table: TensorFlow fails in the gather, JAX silently reads garbage (NaN
    losses). A vocabulary smaller than the table by more than `MAX_UNUSED_ROWS` of its rows is another
    model's (or a file cut short): refused too, unless `allow_smaller` (a model built in Python on a toy
    vocabulary). Tables padded past their vocabulary by up to 1% (NVIDIA's, Nordic BERT's) are accepted.

    Args:
        tokenizer: a `BertTokenizer` (or anything with `vocab_size` and `vocab_file`).
        vocab_size: the model's `vocab_size` (rows of its token embedding table).
        where: what holds the model's `vocab_size`, for the message (a config file or a flag).
        allow_smaller: accept any vocabulary whose ids fit the table.

    Raises:
        UserInputError: naming the vocabulary file, its size, `where` and its `vocab_size`.

    Examples:

    >>> from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"])
    >>> check_vocab_size(tokenizer, 6, "config.json")
    >>> check_vocab_size(tokenizer, 5, "config.json")
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: <vocabulary list>: 6 tokens (ids 0..5), but config.json has vocab_size 5; the vocabulary must be the model's (at most vocab_size tokens).
    >>> check_vocab_size(tokenizer, 30522, "config.json")
    Traceback (most recent call last):
    ...
    keras_bert_impl.utils.errors.UserInputError: <vocabulary list>: 6 tokens, but config.json has vocab_size 30522 (30516 rows of its embedding table without a token); the vocabulary must be the model's (tables padded past their vocabulary by at most 1% are accepted).
    """
    size, vocab_size = int(tokenizer.vocab_size), int(vocab_size)
    vocab_file = getattr(tokenizer, "vocab_file", "the vocabulary")
    if size > vocab_size:
        raise UserInputError(f"{vocab_file}: {size} tokens (ids 0..{size - 1}), but {where} has vocab_size {vocab_size}; "
                             "the vocabulary must be the model's (at most vocab_size tokens).")
    if not allow_smaller and vocab_size - size > MAX_UNUSED_ROWS * vocab_size:
        raise UserInputError(f"{vocab_file}: {size} tokens, but {where} has vocab_size {vocab_size} ({vocab_size - size} "
                             "rows of its embedding table without a token); the vocabulary must be the model's "
                             f"(tables padded past their vocabulary by at most {MAX_UNUSED_ROWS:.0%} are accepted).")
