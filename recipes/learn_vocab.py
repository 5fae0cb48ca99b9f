"""Learn a WordPiece vocab.txt from plain-text files.

Example:
    python recipes/learn_vocab.py --input_files "corpus/*.txt" --output_file vocab.txt \
        --vocab_size 30522 --do_lower_case

The vocabulary is written under a temporary name and renamed once complete. A mistake in a flag or an
input file stops the run with one line and exit status 2 (--debug: the traceback).
"""

import sys

from keras_bert_impl.runners.learn_vocab import build_parser, main, run  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
