"""Command-line flags of the recipes, parsed the way google-research/bert's absl flags are.

The recipes keep the original scripts' flag names, so users' commands carry over; boolean flags take
absl's forms: `--do_lower_case`, `--do_lower_case=False`, `--nodo_lower_case`. Flag names are never
abbreviated (`--num_train_epoch=7` is an error, not `--num_train_epochs`), `--help` shows every flag's
default, and a bad flag (unknown name, a value of the wrong type or range) is one line on stderr and
exit status 2.
"""

import argparse
import sys

from keras_bert_impl.training.strategy_names import MIXED_PRECISION, STRATEGY_NAMES
from keras_bert_impl.utils.errors import UserInputError


def parse_bool(value):
    """absl's boolean spellings: true/false, t/f, yes/no, y/n, 1/0 (any case)."""
    if isinstance(value, bool):
        return value
    lowered = value.strip().lower()
    if lowered in ("1", "true", "t", "yes", "y"):
        return True
    if lowered in ("0", "false", "f", "no", "n"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {value!r}")


def _number(kind, value, check, expected):
    try:
        number = kind(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}") from None
    if not check(number):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}")
    return number


def positive_int(value):
    """An integer flag value > 0.

    Examples:

    >>> positive_int("8")
    8
    >>> positive_int("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a positive integer, got '0'
    """
    return _number(int, value, lambda n: n > 0, "a positive integer")


def non_negative_int(value):
    """An integer flag value >= 0."""
    return _number(int, value, lambda n: n >= 0, "an integer >= 0")


def positive_float(value):
    """A float flag value > 0 (a learning rate, a number of epochs).

    Examples:

    >>> positive_float("5e-5")
    5e-05
    >>> positive_float("-1")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a positive number, got '-1'
    """
    return _number(float, value, lambda x: x > 0, "a positive number")


def fraction(value):
    """A float flag value in [0, 1] (a dropout rate, a warmup proportion)."""
    return _number(float, value, lambda x: 0 <= x <= 1, "a number in [0, 1]")


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """`--help` keeps the description's line breaks (the recipes' docstrings) and shows every default."""


class FlagParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` with absl-style boolean flags, no abbreviations, the defaults in
    `--help`, `--debug`, and one-line errors.

    `--debug` shows the traceback of a user's mistake (`runners.cli.run_main` reads it).

    Examples:

    >>> parser = FlagParser()
    >>> parser.add_bool_flag("do_train", False, "Run training.")
    >>> parser.parse_args(["--do_train"]).do_train, parser.parse_args(["--nodo_train"]).do_train
    (True, False)
    >>> parser.parse_args(["--do_tr"])
    Traceback (most recent call last):
    SystemExit: 2
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self._bool_flags = set()
        self.add_argument("--debug", action="store_true",
                          help="Show the full traceback of an error in the flags or the data.")

    def add_bool_flag(self, name, default, help_text):
        self._bool_flags.add(name)
        self.add_argument(f"--{name}", type=parse_bool, nargs="?", const=True, default=default, help=help_text)

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        rewritten = []
        for arg in args:
            for name in self._bool_flags:
                if arg in (f"--no{name}", f"-no{name}"):
                    arg = f"--{name}=false"
            rewritten.append(arg)
        return super().parse_args(rewritten, namespace)

    def error(self, message):
        """One line on stderr (`error: <message> (see --help)`) and exit status 2."""
        print(f"error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def accumulation_options(gradient_accumulation_steps, train_batch_size):
    """The optimizer's `gradient_accumulation_steps` option ({} for 1), or a `UserInputError` naming the flag
    when it does not divide `--train_batch_size` (each update's batch is split into that many).

    Examples:

    >>> accumulation_options(4, 32), accumulation_options(1, 32)
    ({'gradient_accumulation_steps': 4}, {})
    """
    if gradient_accumulation_steps < 1 or train_batch_size % gradient_accumulation_steps:
        raise UserInputError(f"--gradient_accumulation_steps={gradient_accumulation_steps}: expected a positive "
                             f"divisor of --train_batch_size={train_batch_size}.")
    return {"gradient_accumulation_steps": gradient_accumulation_steps} if gradient_accumulation_steps > 1 else {}


def add_distribution_flags(parser):
    """Adds --strategy, --tpu and --mixed_precision to a recipe's `FlagParser`."""
    parser.add_argument("--strategy", default="auto", choices=STRATEGY_NAMES, help="Distribution strategy.")
    parser.add_argument("--tpu", default=None, help="TPU name or grpc:// address (Colab: leave empty).")
    parser.add_argument(
        "--mixed_precision", default="float32", choices=tuple(MIXED_PRECISION), help="Compute dtype policy."
    )
