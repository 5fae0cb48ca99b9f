"""Typed settings, declared once: the kinds of values a setting takes (a positive integer, a number in [0, 1],
one of some choices, ...), each with the words an error names it by and the way a command-line text becomes
such a value; `setting`, a dataclass field of a kind with its flag's help text; and `check_settings`, which
checks every such field of a dataclass.

The recipes' typed configs (`tasks.configs.FinetuningConfig` and the others) declare each setting once, as a
field: its name is the flag's, its default the flag's, its kind both checks a value given from Python and
parses and checks the flag's text (`runners.flags.settings_parser` makes the flags from the fields, as
transformers' `HfArgumentParser` does). A value of the wrong kind is refused with the same words either way
(`tests/test_finetuning_config.py`).
"""

import dataclasses
import numbers
from typing import Callable, Optional

from keras_bert_impl.utils.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a setting accepts.

    Attributes:
        expected: the words an error names it by ("a positive integer").
        accepts: `accepts(value) -> bool`, on a typed value.
        parse: `parse(text) -> value`, a command-line text as a value (raising `ValueError`); None: the text.
        text_error: the error of a text that `parse` or `accepts` refuses, a template with `{text!r}`; None:
            the flag parser's own error (argparse's "invalid int value: '1.5'", "invalid choice: ...").
        choices: the values of a setting with a fixed set of them (`one_of`), else None.
    """

    expected: str
    accepts: Callable
    parse: Optional[Callable] = None
    text_error: Optional[str] = None
    choices: Optional[tuple] = None

    def from_text(self, text):
        """The value of the command-line `text`, or a `ValueError` saying what was expected.

        Examples:

        >>> POSITIVE_INT.from_text("8"), POSITIVE_NUMBER.from_text("5e-5"), BOOLEAN.from_text("no")
        (8, 5e-05, False)
        >>> POSITIVE_INT.from_text("0")
        Traceback (most recent call last):
        ValueError: expected a positive integer, got '0'
        >>> POSITIVE_NUMBER.from_text("-1")
        Traceback (most recent call last):
        ValueError: expected a positive number, got '-1'
        >>> LEARNING_RATE_GRID.from_text("5e-5,4e-5, 3e-5")
        (5e-05, 4e-05, 3e-05)
        >>> LEARNING_RATE_GRID.from_text("5e-5,0")
        Traceback (most recent call last):
        ValueError: expected comma-separated positive learning rates such as 5e-5,4e-5,3e-5,2e-5, got '5e-5,0'
        """
        try:
            value = text if self.parse is None else self.parse(text)
        except ValueError:
            if self.text_error is None:
                raise
            raise ValueError(self.text_error.format(text=text)) from None
        if not self.accepts(value):
            raise ValueError((self.text_error or f"expected {self.expected}, got {{text!r}}").format(text=text))
        return value


def _is_integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_learning_rate_grid(values):
    return (isinstance(values, (list, tuple)) and len(values) > 0 and all(_is_number(v) and v > 0 for v in values)
            and len(set(values)) == len(values))


def parse_bool(text):
    """absl's boolean spellings: true/false, t/f, yes/no, y/n, 1/0 (any case).

    Examples:

    >>> parse_bool("True"), parse_bool("n"), parse_bool(True)
    (True, False, True)
    """
    if isinstance(text, bool):
        return text
    lowered = text.strip().lower()
    if lowered in ("1", "true", "t", "yes", "y"):
        return True
    if lowered in ("0", "false", "f", "no", "n"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _learning_rates(text):
    """Comma-separated numbers as a tuple of floats ("5e-5,4e-5" -> (5e-05, 4e-05))."""
    return tuple(float(part.strip()) for part in str(text).split(","))


def _checked(expected, accepts, parse):
    """A kind whose flag's text is refused as "expected <expected>, got '<text>'"."""
    return Kind(expected, accepts, parse, "expected " + expected + ", got {text!r}")


POSITIVE_INT = _checked("a positive integer", lambda value: _is_integer(value) and value > 0, int)
NON_NEGATIVE_INT = _checked("an integer >= 0", lambda value: _is_integer(value) and value >= 0, int)
POSITIVE_NUMBER = _checked("a positive number", lambda value: _is_number(value) and value > 0, float)
FRACTION = _checked("a number in [0, 1]", lambda value: _is_number(value) and 0 <= value <= 1, float)
# Any integer or number: a flag's text that is none is refused by the parser's own words ("invalid int value").
INTEGER = Kind("an integer", _is_integer, int)
NUMBER = Kind("a number", _is_number, float)
BOOLEAN = Kind("True or False", lambda value: isinstance(value, bool), parse_bool, "not a boolean: {text!r}")
LEARNING_RATE_GRID = Kind("distinct positive learning rates such as (5e-5, 4e-5, 3e-5, 2e-5)", _is_learning_rate_grid,
                          _learning_rates, "expected comma-separated positive learning rates such as "
                          "5e-5,4e-5,3e-5,2e-5, got {text!r}")


def one_of(choices):
    """The `Kind` of a setting with a fixed set of values (a flag's `choices`; integer choices parse as int)."""
    choices = tuple(choices)
    parse = int if choices and all(_is_integer(choice) for choice in choices) else None
    return Kind("one of " + ", ".join(map(repr, choices)), lambda value: value in choices, parse, choices=choices)


def optional(kind):
    """`kind`, or None (a flag's text is never None: it is parsed and refused as `kind`'s)."""
    return dataclasses.replace(kind, expected=f"None or {kind.expected}",
                               accepts=lambda value: value is None or kind.accepts(value))


def is_boolean(kind):
    """Whether `kind` is `BOOLEAN` or `optional(BOOLEAN)` (its flags take absl's boolean forms)."""
    return kind is not None and kind.parse is parse_bool


def setting(default=dataclasses.MISSING, kind=None, help=None, *, default_factory=dataclasses.MISSING,  # noqa: A002
            aliases=(), switch=False, negatable=False, shapes_weights=True):
    """A dataclass field of `kind` (`check_settings` checks it) that a recipe's flag of the same name sets.

    Args:
        default, default_factory: the field's (and the flag's) default; neither: the flag is required.
        kind: a `Kind`, or None for any text (a path, a name).
        help: the flag's `--help` text, or `help(config_class) -> str` (a text naming a class attribute).
        aliases: `(name, help)` of more flag names setting this field (e.g. run_ner.py's `--dev_file`).
        switch, negatable: a boolean flag without a value (`--quiet`), or with its negation (`--do_lower_case`,
            `--no-do_lower_case`), instead of absl's forms (`--do_train`, `--do_train=False`, `--nodo_train`).
        shapes_weights: whether the setting shapes a training run's weights (`run_settings`: recorded in a run's
            output_dir, where a rerun with another value is refused); False for where the outputs go, logging,
            evaluation and prediction.
    """
    metadata = {"kind": kind, "help": help, "aliases": tuple(aliases), "switch": switch, "negatable": negatable,
                "shapes_weights": shapes_weights}
    return dataclasses.field(default=default, default_factory=default_factory, metadata=metadata)


def check_settings(instance):
    """Raises `UserInputError` naming the first field of the dataclass `instance` whose value its kind
    (`setting`) does not accept.

    Examples:

    >>> @dataclasses.dataclass
    ... class Batches:
    ...     size: int = setting(32, POSITIVE_INT)
    ...     padding: str = setting("dynamic", one_of(("dynamic", "static")))
    >>> check_settings(Batches(size=8))
    >>> check_settings(Batches(size=0))
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: Batches.size: expected a positive integer, got 0
    >>> check_settings(Batches(padding="none"))
    Traceback (most recent call last):
    keras_bert_impl.utils.errors.UserInputError: Batches.padding: expected one of 'dynamic', 'static', got 'none'
    """
    for field in dataclasses.fields(instance):
        kind, value = field.metadata.get("kind"), getattr(instance, field.name)
        if kind is not None and not kind.accepts(value):
            raise UserInputError(f"{type(instance).__name__}.{field.name}: expected {kind.expected}, got {value!r}")


def run_settings(config):
    """The settings of a typed config that shape a training run's weights (every field but those declared
    `shapes_weights=False`), as JSON values: recorded in a run's output_dir (`training.run_directory`).

    Examples:

    >>> @dataclasses.dataclass
    ... class Run:
    ...     learning_rate: float = setting(5e-5, POSITIVE_NUMBER)
    ...     grid: tuple = setting((1e-4, 5e-5), LEARNING_RATE_GRID)
    ...     output_dir: str = setting("out", shapes_weights=False)
    >>> run_settings(Run())
    {'grid': [0.0001, 5e-05], 'learning_rate': 5e-05}
    """
    settings = {}
    for field in sorted(dataclasses.fields(config), key=lambda field: field.name):
        if field.metadata.get("shapes_weights", True):
            value = getattr(config, field.name)
            settings[field.name] = list(value) if isinstance(value, tuple) else value
    return settings
