"""Typed settings: the kinds of values a setting takes (a positive integer, a number in [0, 1], one of some
choices, ...), each with the words an error names it by; `setting`, a dataclass field of a kind; and
`check_settings`, which checks every such field of a dataclass.

The typed task configs (`tasks.base.FinetuningConfig`) check their fields with them: each field accepts
what its flag's type accepts (`runners.flags.positive_int`, ...; `tests/test_finetuning_config.py`).
"""

import dataclasses
import numbers
from typing import Callable

from keras_bert_impl.utils.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class Kind:
    """What a setting accepts: `expected` (the words an error names it by) and `accepts(value) -> bool`."""

    expected: str
    accepts: Callable


def _is_integer(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_learning_rate_grid(values):
    return (isinstance(values, (list, tuple)) and len(values) > 0 and all(_is_number(v) and v > 0 for v in values)
            and len(set(values)) == len(values))


POSITIVE_INT = Kind("a positive integer", lambda value: _is_integer(value) and value > 0)
NON_NEGATIVE_INT = Kind("an integer >= 0", lambda value: _is_integer(value) and value >= 0)
INTEGER = Kind("an integer", _is_integer)
POSITIVE_NUMBER = Kind("a positive number", lambda value: _is_number(value) and value > 0)
FRACTION = Kind("a number in [0, 1]", lambda value: _is_number(value) and 0 <= value <= 1)
NUMBER = Kind("a number", _is_number)
BOOLEAN = Kind("True or False", lambda value: isinstance(value, bool))
LEARNING_RATE_GRID = Kind("distinct positive learning rates such as (5e-5, 4e-5, 3e-5, 2e-5)", _is_learning_rate_grid)


def one_of(choices):
    """The `Kind` of a setting with a fixed set of values (a flag's `choices`)."""
    return Kind("one of " + ", ".join(map(repr, choices)), lambda value: value in choices)


def optional(kind):
    """`kind`, or None."""
    return Kind(f"None or {kind.expected}", lambda value: value is None or kind.accepts(value))


def setting(default, kind):
    """A dataclass field with `default`, of `kind` (`check_settings` checks it)."""
    return dataclasses.field(default=default, metadata={"kind": kind})


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
