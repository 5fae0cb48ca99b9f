"""Running a recipe from the command line: a user's mistake is one line on stderr and exit status 2,
training that diverged one line and exit status 1, a run stopped by a signal one line and 128 + the signal.

`run_main(build_parser, run, argv)` parses the flags and calls `run(args)`. A `UserInputError` (a missing
or malformed file, a bad flag value) is printed as `error: <message>` without a traceback and exits 2; a
`TrainingDivergedError` (a non-finite or grown loss, metric or weight) as `error: training diverged:
<message>` and exits 1; a `RunInterrupted` (Ctrl-C or SIGTERM during training: `training.interrupts`) as its
message (where the same command resumes) and exits 130 (SIGINT) or 143 (SIGTERM). Outside training, anywhere
else in the run (reading data, evaluation, prediction, export, writing pretraining data), SIGINT and SIGTERM
raise a `RunInterrupted` where the main thread is (`stop_on_signals`): every `finally` and the atomic writers'
cleanup run (no temporary file is left, on SIGTERM as on Ctrl-C), and the run ends with one line, "stopped
by SIGTERM.", and exit status 130 or 143. A second signal while the first is handled ends the process at
once (the signal's default action). A file system's refusal
to write (no space left, a read-only file system, no permission: an `OSError` with one of
`FILE_SYSTEM_ERRORS`) is one line naming the path and exits 2. `--debug` (a flag of every
`runners.flags.FlagParser`) or the environment variable `KERAS_BERT_IMPL_DEBUG=1` re-raises them with their
traceback. Any other exception is a bug and keeps its traceback. A Python warning is one line, `warning:
<message>` (with --debug: Python's own form, naming its source line). A flag the parser refuses (unknown,
abbreviated, a bad value) is one line and exit status 2 as well (`FlagParser.error`). TensorFlow's C++ log
lines are kept off stderr (`utils.tensorflow_logs`) unless the user set `TF_CPP_MIN_LOG_LEVEL` or passed
`--debug`.

The package writes its messages to the logger "keras_bert_impl" and its children (`logging.getLogger(__name__)`
in each module); a library user configures them as any logger's. While a recipe runs, `recipe_logging` gives
them the recipes' one-line form: an INFO message is its line on stdout, a WARNING one `warning: <message>` on
stderr.
"""

import contextlib
import errno
import logging
import os
import signal
import sys
import threading
import warnings

from keras_bert_impl.utils.errors import RunInterrupted, TrainingDivergedError, UserInputError
from keras_bert_impl.utils.optional_dependencies import MissingDependencyError
from keras_bert_impl.utils.tensorflow_logs import filtered_stderr, wants_tensorflow_logs

DEBUG_ENVIRONMENT_VARIABLE = "KERAS_BERT_IMPL_DEBUG"
# The logger of the package's messages: every module's `logging.getLogger(__name__)` is its child.
PACKAGE_LOGGER = "keras_bert_impl"
# The `OSError`s of a file system that refuses a write: reported in one line naming the path.
FILE_SYSTEM_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def run_main(build_parser, run, argv=None, before_import=None, uses_keras=True):
    """Parses `argv` (default `sys.argv[1:]`) with `build_parser()` and returns `run(args)`; a
    `UserInputError` exits with status 2 and a `TrainingDivergedError` with status 1, each with a one-line
    message on stderr (see the module docstring). `before_import(args)`, if given, runs before the package
    (and Keras) is imported: e.g. a check that a feature's optional packages are installed
    (`utils.optional_dependencies`), which a Keras backend that cannot import would otherwise preempt.
    `uses_keras=False`: a recipe that computes nothing with Keras (the data and vocabulary recipes) runs
    without importing Keras and its backend, which takes seconds and needs the backend installed.

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
        with stop_on_signals(), filtered_stderr(enabled=not wants_tensorflow_logs(debug)), \
                one_line_warnings(enabled=not debug), recipe_logging():
            if before_import is not None:
                before_import(args)
            if uses_keras:
                import_keras_backend_or_explain(_import_keras)  # the backend, or one line naming its extra
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
    except RunInterrupted as error:  # a signal: training says where it resumes, elsewhere "stopped by SIG..."
        if debug:
            raise
        print(str(error), file=sys.stderr)
        sys.exit(error.exit_status)
    except KeyboardInterrupt:  # Ctrl-C before the handlers were installed, or raised by a library
        if debug:
            raise
        print("stopped by SIGINT.", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
    except OSError as error:
        if debug or error.errno not in FILE_SYSTEM_ERRORS:
            raise
        print(f"error: {file_system_error(error)}", file=sys.stderr)
        sys.exit(2)


class _ConsoleHandler(logging.Handler):
    """Writes a record as one line to `sys.stdout` (below WARNING) or `sys.stderr`, the streams of the moment it is
    written (so that a redirection, e.g. `contextlib.redirect_stdout`, takes the package's lines too)."""

    def emit(self, record):
        try:
            stream = sys.stdout if record.levelno < logging.WARNING else sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # noqa: BLE001 (logging's own rule: a failing handler reports, never raises)
            self.handleError(record)


class _RecipeFormatter(logging.Formatter):
    """A message as the recipes print it: an INFO message as it is, a WARNING (or above) as "warning: <message>"."""

    def format(self, record):
        message = record.getMessage()
        return message if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {message}"


@contextlib.contextmanager
def recipe_logging():
    """Within: the messages of the package's logger (`PACKAGE_LOGGER` and its children) from INFO up are the
    recipes' lines, INFO on stdout as they are, WARNING and above on stderr as "warning: <message>", and go
    nowhere else (not to the root logger's handlers). Nested (a recipe run in the process of another), the
    outer one's form stays.

    Examples:

    >>> with recipe_logging():
    ...     logging.getLogger("keras_bert_impl.tasks").info("wrote 3 test predictions to out/SST-2.tsv")
    wrote 3 test predictions to out/SST-2.tsv
    """
    logger = logging.getLogger(PACKAGE_LOGGER)
    if any(isinstance(handler, _ConsoleHandler) for handler in logger.handlers):
        yield
        return
    handler = _ConsoleHandler()
    handler.setFormatter(_RecipeFormatter())
    level, propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        logger.propagate = propagate


# The signals that stop a run: each raises `RunInterrupted` in the main thread (`stop_on_signals`).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_on_signals():
    """Within (in the main thread): SIGINT and SIGTERM raise `RunInterrupted(signum, "stopped by SIG....")`
    where the main thread is, so that the code running unwinds as on Ctrl-C (its `finally` blocks, the
    atomic writers' removal of their temporary files); a second signal meanwhile ends the process by the
    signal's default action. Training installs its own handlers inside (`training.interrupts.StopOnSignal`:
    it stops after the current step). The previous handlers are back after the block.

    Examples:

    >>> try:
    ...     with stop_on_signals():
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ... except RunInterrupted as error:
    ...     print(error.exit_status, error)
    143 stopped by SIGTERM.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        for each in STOP_SIGNALS:  # a second signal: the default action, at once
            signal.signal(each, signal.SIG_DFL)
        raise RunInterrupted(signum, f"stopped by {signal.Signals(signum).name}.")

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _import_keras():
    import keras  # noqa: F401 (its backend with it)


def import_keras_backend_or_explain(import_keras):
    """Calls `import_keras()` (a function importing Keras); a Keras backend that is not installed
    (KERAS_BACKEND=tensorflow, Keras' default, without TensorFlow) is a `MissingDependencyError`: one line naming
    the backend and its extra."""
    try:
        import_keras()
    except ModuleNotFoundError as error:
        module = (error.name or "").partition(".")[0]
        if module not in ("tensorflow", "jax", "torch"):
            raise
        backend = os.environ.get("KERAS_BACKEND") or "tensorflow"
        default = "; Keras' default" if "KERAS_BACKEND" not in os.environ else ""
        raise MissingDependencyError(f"KERAS_BACKEND={backend} (the Keras backend{default})", module, module) from None


@contextlib.contextmanager
def one_line_warnings(enabled=True):
    """Within: a warning shown is "warning: <message>", without its category and source line (it is still
    recorded as it is raised: `pytest.warns` and `warnings.catch_warnings(record=True)` see it unchanged)."""
    original = warnings.formatwarning
    if enabled:
        warnings.formatwarning = lambda message, category, filename, lineno, line=None: f"warning: {message}\n"
    try:
        yield
    finally:
        warnings.formatwarning = original


def file_system_error(error):
    """The one line of a file system's `OSError`: its reason and the path (also when the error's text holds it).

    Examples:

    >>> file_system_error(OSError(errno.ENOSPC, "No space left on device", "out/checkpoints/ckpt-2.weights.h5"))
    'No space left on device: out/checkpoints/ckpt-2.weights.h5'
    >>> file_system_error(OSError(errno.ENOSPC, "no space left on device while writing out/metrics.json"))
    'no space left on device while writing out/metrics.json'
    """
    reason = error.strerror or str(error)
    return f"{reason}: {error.filename}" if error.filename else reason
