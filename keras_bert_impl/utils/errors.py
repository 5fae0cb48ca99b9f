"""The errors a run ends with on purpose: a user's mistake, training that diverged, and a run stopped by a
signal.

Recipes print a `UserInputError`, a `TrainingDivergedError` or a `RunInterrupted` as one line and exit
non-zero, without a traceback (`keras_bert_impl.runners.cli.run_main`); every other exception is a bug and
keeps its traceback. A `UserInputError` names the file, line or field and says what was expected; a
`TrainingDivergedError` names the step (or epoch) and the value that was not finite or grew too far; a
`RunInterrupted` names the signal, the step and where the same command resumes.
"""

import signal


class UserInputError(ValueError):
    """A user's mistake (file, data or flag), with a one-line message naming where and what was expected.

    Examples:

    >>> try:
    ...     raise UserInputError("train.tsv:3: expected 2 tab-separated fields, found 1.")
    ... except ValueError as error:
    ...     print(error)
    train.tsv:3: expected 2 tab-separated fields, found 1.
    """


def describe(value, limit=40):
    """How a user's value is shown in an error message: its repr (cut to `limit` characters) and its type.

    Examples:

    >>> describe(float("nan")), describe("B-PER"), describe(None), describe(3)
    ('nan (a float)', "'B-PER' (a str)", 'None', '3 (an int)')
    """
    if value is None:
        return "None"
    text = repr(value.item() if hasattr(value, "item") and getattr(value, "ndim", 1) == 0 else value)
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    kind = type(value).__name__
    for generic in ("float", "int", "str", "bool", "complex"):  # numpy scalars: float64 -> float
        if kind.startswith(generic) or kind.startswith(f"{generic}_"):
            kind = generic
    article = "an" if kind[0] in "aeiou" else "a"
    return f"{text} ({article} {kind})"


class CheckpointNotFoundError(FileNotFoundError, UserInputError):
    """No checkpoint (or no config file in it) at the path or name given: a `FileNotFoundError` that recipes
    report as one line, as every `UserInputError`.

    Examples:

    >>> isinstance(CheckpointNotFoundError("No checkpoint at /nowhere"), (FileNotFoundError, UserInputError))
    True
    """


class TrainingDivergedError(RuntimeError):
    """Training produced a non-finite loss, metric or weight; the message names the step and the value.

    Raised instead of saving: no checkpoint, best or final model is written from a diverged state.

    Examples:

    >>> try:
    ...     raise TrainingDivergedError("step 12: loss is nan; the newest checkpoint is step 10.")
    ... except RuntimeError as error:
    ...     print(error)
    step 12: loss is nan; the newest checkpoint is step 10.
    """


class RunInterrupted(KeyboardInterrupt):
    """Training stopped on purpose by SIGINT (Ctrl-C) or SIGTERM (`training.interrupts.StopOnSignal`): the
    message says at which step and where the same command resumes; `exit_status` is the shell's status of a
    process ended by that signal (128 + its number: 130 for SIGINT, 143 for SIGTERM).

    A `KeyboardInterrupt`, so that code catching `Exception` lets it through, as it does Ctrl-C's.

    Examples:

    >>> error = RunInterrupted(signal.SIGTERM, "stopped after step 40; the same command resumes from step 40.")
    >>> error.exit_status, str(error)
    (143, 'stopped after step 40; the same command resumes from step 40.')
    """

    def __init__(self, signum, message):
        super().__init__(message)
        self.signum = int(signum)

    @property
    def exit_status(self):
        return 128 + self.signum

    @property
    def signal_name(self):
        """The signal's name, e.g. "SIGINT"."""
        return signal.Signals(self.signum).name
