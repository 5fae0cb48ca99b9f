"""Command-line flags of the recipes, parsed the way google-research/bert's absl flags are.

The recipes keep the original scripts' flag names, so users' commands carry over; boolean flags take
absl's forms: `--do_lower_case`, `--do_lower_case=False`, `--nodo_lower_case`.
"""

import argparse
import sys


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


class FlagParser(argparse.ArgumentParser):
    """An `argparse.ArgumentParser` with absl-style boolean flags.

    Examples:

    >>> parser = FlagParser()
    >>> parser.add_bool_flag("do_train", False, "Run training.")
    >>> parser.parse_args(["--do_train"]).do_train, parser.parse_args(["--nodo_train"]).do_train
    (True, False)
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._bool_flags = set()

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
