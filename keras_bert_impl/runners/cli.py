"""Running a recipe from the command line: a user's mistake is one line on stderr and exit status 2.

`run_main(build_parser, run, argv)` parses the flags and calls `run(args)`. A `UserInputError` (a missing
or malformed file, a bad flag value) is printed as `error: <message>` without a traceback; `--debug` (a
flag of every `runners.flags.FlagParser`) or the environment variable `KERAS_BERT_IMPL_DEBUG=1` re-raises it
with its traceback. Any other exception is a bug and keeps its traceback. A flag the parser refuses
(unknown, abbreviated, a bad value) is one line and exit status 2 as well (`FlagParser.error`).
"""

import os
import sys

from keras_bert_impl.utils.errors import UserInputError

DEBUG_ENVIRONMENT_VARIABLE = "KERAS_BERT_IMPL_DEBUG"


def run_main(build_parser, run, argv=None):
    """Parses `argv` (default `sys.argv[1:]`) with `build_parser()` and returns `run(args)`; a
    `UserInputError` exits with status 2 and a one-line message (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv or os.environ.get(DEBUG_ENVIRONMENT_VARIABLE, "") not in ("", "0")
    # `--debug` is removed before parsing, so parsers that do not know it (plain argparse) work too.
    args = build_parser().parse_args([a for a in argv if a != "--debug"])
    args.debug = debug
    try:
        return run(args)
    except UserInputError as error:
        if debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
