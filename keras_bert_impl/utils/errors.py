"""The errors a run ends with on purpose: a user's mistake, and training that diverged.

Recipes print a `UserInputError` or a `TrainingDivergedError` as one line and exit non-zero, without a
traceback (`keras_bert_impl.runners.cli.run_main`); every other exception is a bug and keeps its
traceback. A `UserInputError` names the file, line or field and says what was expected; a
`TrainingDivergedError` names the step (or epoch) and the value that was not finite.
"""


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
