"""Learn a WordPiece vocab.txt from plain-text files.

Example (`python -m keras_bert_impl.runners.learn_vocab`, or in a checkout `python recipes/learn_vocab.py`):
    python -m keras_bert_impl.runners.learn_vocab --input_files "corpus/*.txt" --output_file vocab.txt \
        --vocab_size 30522 --do_lower_case

The vocabulary is written under a temporary name and renamed once complete. A mistake in a flag or an
input file stops the run with one line and exit status 2 (--debug: the traceback).
"""

import argparse
import dataclasses
import logging
import sys

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import add_setting_flags, config_from_flags
from keras_bert_impl.tokenizers.vocabulary import RESERVED_TOKENS
from keras_bert_impl.utils.settings import BOOLEAN, INTEGER, POSITIVE_INT, setting

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabLearningConfig:
    """The settings of the recipe, one per flag."""

    input_files: str = setting(help="Comma-separated paths or globs of UTF-8 text files.")
    output_file: str = setting("vocab.txt", help="Where to write the vocabulary.")
    vocab_size: int = setting(30522, POSITIVE_INT, "Vocabulary size, reserved tokens included.")
    do_lower_case: bool = setting(True, BOOLEAN, "Lower-case and strip accents (uncased); --no-do_lower_case for "
                                  "cased.", negatable=True)
    min_frequency: int = setting(2, INTEGER, "Lowest frequency threshold of a piece.")
    reserved_tokens: str = setting(",".join(RESERVED_TOKENS), help="Comma-separated tokens written first.")
    max_unique_words: int = setting(5_000_000, POSITIVE_INT, "Bound of the word counter.")
    max_unique_chars: int = setting(1000, POSITIVE_INT, "Alphabet size.")
    max_token_length: int = setting(50, POSITIVE_INT, "Longest piece, in characters.")
    num_iterations: int = setting(4, POSITIVE_INT, "Iterations of the WordPiece learner.")
    quiet: bool = setting(False, BOOLEAN, "No progress output.", switch=True)


def build_parser():
    """The argument parser: a flag per field of `VocabLearningConfig` (without the defaults in `--help`)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    return add_setting_flags(parser, VocabLearningConfig)


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def run(args):
    """Learns the vocabulary of the flags and writes --output_file; returns 0."""
    return learn(config_from_flags(VocabLearningConfig, args))


def learn(config):
    """Learns the vocabulary `config` (a `VocabLearningConfig`) asks for and writes its output_file; returns 0."""
    from keras_bert_impl.tokenizers.tf_vocab_learning import learn_vocab, write_vocab  # TensorFlow: after the flags

    vocab = learn_vocab(
        config.input_files,
        config.vocab_size,
        do_lower_case=config.do_lower_case,
        reserved_tokens=[t for t in config.reserved_tokens.split(",") if t],
        min_frequency=config.min_frequency,
        max_unique_words=config.max_unique_words,
        verbose=not config.quiet,
        max_unique_chars=config.max_unique_chars,
        max_token_length=config.max_token_length,
        num_iterations=config.num_iterations,
    )
    write_vocab(vocab, config.output_file)
    if not config.quiet:
        logger.info(f"Wrote {len(vocab)} tokens to {config.output_file}")
    return 0


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv, uses_keras=False)


if __name__ == "__main__":
    sys.exit(main())
