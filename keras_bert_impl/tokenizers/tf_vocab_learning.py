"""learn_vocab: learn a WordPiece vocabulary (vocab.txt) of a given size from plain-text files.

Words are counted by streaming over the files line by line (never a whole file in memory) with the
very basic tokenizer of `BertTokenizer` (clean, split CJK / whitespace / punctuation, lower-case and
strip accents when uncased), in a counter bounded by `max_unique_words` (the rarest words are pruned
when it fills up). The vocabulary itself is learned by tensorflow-text's WordPiece learner
(`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib`, the algorithm behind
`bert_vocab_from_dataset`), run at the frequency threshold found by binary search, then cut to exactly
`vocab_size`: reserved tokens first, then every kept character alone and as a `##` continuation (so
every word of an allowed alphabet stays tokenizable), then the learned pieces, most frequent first.
"""

import collections
import glob
import logging
import os

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("vocabulary learning (tokenizers/tf_vocab_learning.py, learn_vocab.py)", "tensorflow", ("tensorflow_text",))

from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from keras_bert_impl.tokenizers.basic_tokenizer import basic_tokenize
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.tokenizers.vocabulary import RESERVED_TOKENS
from keras_bert_impl.utils.file_io import atomic_open

logger = logging.getLogger(__name__)



def expand_input_files(input_files):
    """A comma-separated string of paths / glob patterns (or a list of them) -> sorted file paths."""
    patterns = input_files.split(",") if isinstance(input_files, str) else list(input_files)
    files = []
    for pattern in (p.strip() for p in patterns):
        if not pattern:
            continue
        matches = sorted(glob.glob(pattern))
        if not matches:
            raise UserInputError(f"No input file matches {pattern!r}.")
        files.extend(matches)
    if not files:
        raise UserInputError("No input files given.")
    return files


class _Progress:
    """Bytes-read progress over the input files (`utils.progress.progress_bar` when verbose)."""

    def __init__(self, files, verbose):
        self.done = 0
        self.bar = None
        if verbose:
            from keras_bert_impl.utils.progress import progress_bar

            self.bar = progress_bar(sum(os.path.getsize(f) for f in files), unit_name="byte")

    def add(self, n):
        self.done += n
        if self.bar is not None:
            self.bar.update(self.done)


def count_words(files, do_lower_case=True, max_unique_words=5_000_000, verbose=True):
    """Counts the basic-tokenized words of `files`, streaming, in a bounded counter.

    Args:
        files: File paths (UTF-8 text; undecodable bytes become U+FFFD and are dropped).
        do_lower_case: Lower-case and strip accents, as the tokenizer that will use the vocabulary.
        max_unique_words: When the counter holds more distinct words than this, it keeps only the
            `max_unique_words // 2` most frequent ones (counts of rare words become approximate).
        verbose: Show a progress bar.

    Returns:
        A `collections.Counter` of words.
    """
    counts = collections.Counter()
    progress = _Progress(files, verbose)
    for path in files:
        with open(path, "rb") as f:
            pending = 0
            for raw in f:
                counts.update(basic_tokenize(raw.decode("utf-8", errors="replace"), do_lower_case))
                pending += len(raw)
                if pending >= 1 << 20:
                    progress.add(pending)
                    pending = 0
                if len(counts) > max_unique_words:
                    counts = collections.Counter(dict(counts.most_common(max_unique_words // 2)))
            progress.add(pending)
    return counts


def learn_vocab_from_counts(
    word_counts,
    vocab_size,
    reserved_tokens=RESERVED_TOKENS,
    min_frequency=2,
    max_token_length=50,
    max_unique_chars=1000,
    num_iterations=4,
    max_input_tokens=5_000_000,
):
    """Learns a WordPiece vocabulary of exactly `vocab_size` tokens from word counts.

    Args:
        word_counts: Mapping word -> count (words as the basic tokenizer gives them).
        vocab_size: Size of the vocabulary, reserved tokens included.
        reserved_tokens: Tokens put first, in this order.
        min_frequency: Lowest frequency threshold tried: a learned (multi-character) piece occurs at
            least this often.
        max_token_length: Longest piece; longer words only contribute their pieces.
        max_unique_chars: Alphabet size: words with rarer characters are dropped.
        num_iterations: Iterations of the WordPiece learner.
        max_input_tokens: Most frequent distinct words given to the learner.

    Returns:
        The vocabulary: a list of `vocab_size` tokens. It is shorter only when the corpus has too few
        distinct pieces even at `min_frequency` (a `UserWarning` says so).
    """
    reserved = list(reserved_tokens)
    word_counts = [(w, c) for w, c in dict(word_counts).items() if w]
    if not word_counts:
        raise UserInputError("No words to learn a vocabulary from (the input files are empty?).")
    words = learner.get_input_words(word_counts, reserved, max_token_length)
    allowed = learner.get_allowed_chars(words, max_unique_chars)
    words = learner.filter_input_words(words, allowed, max_input_tokens)
    chars = sorted(learner.extract_char_tokens(words))
    base = reserved + [c for c in chars if c not in reserved]
    base += [t for t in ("##" + c for c in chars) if t not in set(base)]
    if len(base) > vocab_size:
        raise UserInputError(
            f"vocab_size={vocab_size} is smaller than the {len(reserved)} reserved tokens plus the "
            f"{2 * len(chars)} single characters (alone and as ##continuations) of the corpus; raise "
            "vocab_size or lower max_unique_chars."
        )
    base_set = set(base)

    def vocab_at(threshold):
        params = learner.Params(
            upper_thresh=None, lower_thresh=None, num_iterations=num_iterations, max_input_tokens=max_input_tokens,
            max_token_length=max_token_length, max_unique_chars=max_unique_chars, vocab_size=vocab_size,
            slack_ratio=0.0, include_joiner_token=True, joiner="##", reserved_tokens=reserved,
        )
        learned = learner.learn_with_thresh(words, threshold, params)  # Sorted by count after the chars.
        return base + [t for t in learned if t not in base_set]

    # The vocabulary shrinks as the threshold grows: find the highest threshold giving enough tokens.
    low, high = max(1, int(min_frequency)), max(c for _, c in words)
    best = vocab_at(low)
    if len(best) < vocab_size:
        import warnings

        warnings.warn(
            f"The corpus yields only {len(best)} tokens at min_frequency={min_frequency}; the vocabulary is "
            f"smaller than vocab_size={vocab_size}.",
            stacklevel=2,
        )
        return best
    while low < high:
        mid = (low + high + 1) // 2
        vocab = vocab_at(mid)
        if len(vocab) >= vocab_size:
            low, best = mid, vocab
        else:
            high = mid - 1
    return best[:vocab_size]


def learn_vocab(
    input_files,
    vocab_size,
    do_lower_case=True,
    reserved_tokens=RESERVED_TOKENS,
    min_frequency=2,
    max_unique_words=5_000_000,
    verbose=True,
    **learner_kwargs,
):
    """Learns a WordPiece vocabulary from plain-text files (see the module docstring).

    Args:
        input_files: Comma-separated paths / globs, or a list of them.
        vocab_size: Size of the vocabulary, reserved tokens included.
        do_lower_case: Learn an uncased vocabulary (the tokenizer must use the same setting).
        reserved_tokens: Tokens put first.
        min_frequency: See `learn_vocab_from_counts`.
        max_unique_words: Bound of the word counter (see `count_words`).
        verbose: Show progress.
        **learner_kwargs: More arguments of `learn_vocab_from_counts`.

    Returns:
        The list of tokens.

    Examples:

    >>> import tempfile
    >>> corpus_dir = tempfile.mkdtemp()
    >>> with open(os.path.join(corpus_dir, "a.txt"), "w") as f:
    ...     _ = f.write("the cat sat on the mat\\nthe dog sat on the log\\n")
    >>> vocab = learn_vocab(os.path.join(corpus_dir, "*.txt"), vocab_size=30, verbose=False)
    >>> len(vocab), vocab[:5]
    (30, ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'])
    >>> write_vocab(vocab, os.path.join(corpus_dir, "vocab.txt"))
    """
    files = expand_input_files(input_files)
    counts = count_words(files, do_lower_case, max_unique_words, verbose)
    if verbose:
        logger.info(f"Counted {sum(counts.values())} words, {len(counts)} distinct; learning {vocab_size} pieces...")
    return learn_vocab_from_counts(counts, vocab_size, reserved_tokens, min_frequency, **learner_kwargs)


def write_vocab(vocab, output_file):
    """Writes one token a line (UTF-8), the format `BertTokenizer` reads.

    The file is written under a temporary name and renamed once complete (`file_io.atomic_open`): a
    full disk or a kill leaves no `output_file`, never a vocabulary cut short.

    Raises:
        UserInputError: the file cannot be written (a full disk, no permission), naming it.
    """
    try:
        with atomic_open(output_file, "w") as f:
            for token in vocab:
                f.write(token + "\n")
    except OSError as error:
        raise UserInputError(f"{output_file}: cannot write the vocabulary: {error.strerror or error}.") from None
