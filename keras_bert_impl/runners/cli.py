"""Running a recipe from the command line: a user's mistake is one line on stderr and exit status 2,
training that diverged one line and exit status 1.

`run_main(build_parser, run, argv)` parses the flags and calls `run(args)`. A `UserInputError` (a missing
or malformed file, a bad flag value) is printed as `error: <message>` without a traceback and exits 2; a
`TrainingDivergedError` (a non-finite loss, metric or weight) as `error: training diverged: <message>` and
exits 1. `--debug` (a flag of every `runners.flags.FlagParser`) or the environment variable
`KERAS_BERT_IMPL_DEBUG=1` re-raises them with their traceback. Any other exception is a bug and keeps its
traceback. A flag the parser refuses (unknown, abbreviated, a bad value) is one line and exit status 2 as well
(`FlagParser.error`). TensorFlow's C++ log lines are kept off stderr (`utils.tensorflow_logs`) unless the
user set `TF_CPP_MIN_LOG_LEVEL` or passed `--debug`.
"""

import os
import sys

from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError
from keras_bert_impl.utils.tensorflow_logs import filtered_stderr, wants_tensorflow_logs

DEBUG_ENVIRONMENT_VARIABLE = "KERAS_BERT_IMPL_DEBUG"


def run_main(build_parser, run, argv=None):
    """Parses `argv` (default `sys.argv[1:]`) with `build_parser()` and returns `run(args)`; a
    `UserInputError` exits with status 2 and a `TrainingDivergedError` with status 1, each with a one-line
    message on stderr (see the module docstring).

    Examples:

    >>> import argparse, contextlib, io
    >>> def run(args):
    ...     raise TrainingDivergedError("step 7: loss is nan.")
    >>> stderr = io.StringIO()
    >>> try:
    ...     with contextlib.redirect_stderr(stderr):
    ...         run_main(argparse.ArgumentParser, run, [])
    ... except SystemExit as exit:
    ...     print(exit.code, stderr.getvalue().strip())
    1 error: training diverged: step 7: loss is nan.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in argv or os.environ.get(DEBUG_ENVIRONMENT_VARIABLE, "") not in ("", "0")
    # `--debug` is removed before parsing, so parsers that do not know it (plain argparse) work too.
    args = build_parser().parse_args([a for a in argv if a != "--debug"])
    args.debug = debug
    try:
        with filtered_stderr(enabled=not wants_tensorflow_logs(debug)):
            return run(args)
    except UserInputError as error:
        if debug:
            raise
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    except TrainingDivergedError as error:
        if debug:
            raise
        print(f"error: training diverged: {error}", file=sys.stderr)
        sys.exit(1)
