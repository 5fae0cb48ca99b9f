"""The error a user's mistake raises: a missing or malformed file, a bad flag value.

Recipes print a `UserInputError` as one line and exit non-zero, without a traceback
(`keras_bert_impl.runners.cli.run_main`); every other exception is a bug and keeps its traceback.
The message names the file, line or field and says what was expected.
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
