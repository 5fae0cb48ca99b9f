"""Learn a WordPiece vocab.txt from plain-text files.

Example (`python -m keras_bert_impl.runners.learn_vocab`, or in a checkout `python recipes/learn_vocab.py`):
    python -m keras_bert_impl.runners.learn_vocab --input_files "corpus/*.txt" --output_file vocab.txt \
        --vocab_size 30522 --do_lower_case

The vocabulary is written under a temporary name and renamed once complete. A mistake in a flag or an
input file stops the run with one line and exit status 2 (--debug: the traceback).
"""

import argparse
import sys

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import positive_int
from keras_bert_impl.tokenizers.vocabulary import RESERVED_TOKENS


def build_parser():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    parser.add_argument("--input_files", required=True, help="Comma-separated paths or globs of UTF-8 text files.")
    parser.add_argument("--output_file", default="vocab.txt", help="Where to write the vocabulary.")
    parser.add_argument("--vocab_size", type=positive_int, default=30522,
                        help="Vocabulary size, reserved tokens included.")
    parser.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction, default=True,
                        help="Lower-case and strip accents (uncased); --no-do_lower_case for cased.")
    parser.add_argument("--min_frequency", type=int, default=2, help="Lowest frequency threshold of a piece.")
    parser.add_argument("--reserved_tokens", default=",".join(RESERVED_TOKENS),
                        help="Comma-separated tokens written first.")
    parser.add_argument("--max_unique_words", type=positive_int, default=5_000_000, help="Bound of the word counter.")
    parser.add_argument("--max_unique_chars", type=positive_int, default=1000, help="Alphabet size.")
    parser.add_argument("--max_token_length", type=positive_int, default=50, help="Longest piece, in characters.")
    parser.add_argument("--num_iterations", type=positive_int, default=4, help="Iterations of the WordPiece learner.")
    parser.add_argument("--quiet", action="store_true", help="No progress output.")
    return parser


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def run(args):
    """Learns the vocabulary of the flags and writes --output_file; returns 0."""
    from keras_bert_impl.tokenizers.tf_vocab_learning import learn_vocab, write_vocab  # TensorFlow: after the flags

    vocab = learn_vocab(
        args.input_files,
        args.vocab_size,
        do_lower_case=args.do_lower_case,
        reserved_tokens=[t for t in args.reserved_tokens.split(",") if t],
        min_frequency=args.min_frequency,
        max_unique_words=args.max_unique_words,
        verbose=not args.quiet,
        max_unique_chars=args.max_unique_chars,
        max_token_length=args.max_token_length,
        num_iterations=args.num_iterations,
    )
    write_vocab(vocab, args.output_file)
    if not args.quiet:
        print(f"Wrote {len(vocab)} tokens to {args.output_file}")
    return 0


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv)


if __name__ == "__main__":
    sys.exit(main())
