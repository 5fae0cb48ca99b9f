"""Command-line flags of the recipes, made from their typed configs and parsed the way google-research/bert's
absl flags are.

A recipe's settings are a dataclass (`tasks.configs.GlueConfig`, `runners.pretrain.PretrainingConfig`, ...)
whose fields are `utils.settings.setting`s; `settings_parser(config_class)` makes one flag per field (its
name, default, kind, choices and help: as transformers' `HfArgumentParser` does), and
`config_from_flags(config_class, args)` makes the config of the parsed flags. The recipes keep the original
scripts' flag names, so users' commands carry over; boolean flags take absl's forms: `--do_lower_case`,
`--do_lower_case=False`, `--nodo_lower_case`. Flag names are never abbreviated (`--num_train_epoch=7` is an
error, not `--num_train_epochs`), `--help` shows every flag's default, and a bad flag (unknown name, a value
of the wrong type or range: its kind's words) is one line on stderr and exit status 2.
"""

import argparse
import dataclasses
import sys

from keras_bert_impl.utils.settings import BOOLEAN, is_boolean

# Flags of every recipe's parser that are no setting of a run (`FlagParser`'s --debug, read by `cli.run_main`).
NOT_SETTINGS = ("debug",)


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

    def add_bool_flag(self, name, default, help_text, dest=None, metavar=None):
        """A flag `--name` taking absl's boolean forms (`--name`, `--name=False`, `--noname`)."""
        self._bool_flags.add(name)
        extra = {} if dest is None else {"dest": dest, "metavar": metavar}
        self.add_argument(f"--{name}", type=flag_type(BOOLEAN), nargs="?", const=True, default=default,
                          help=help_text, **extra)

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


def flag_type(kind):
    """The argparse `type` of a flag of `kind` (a `utils.settings.Kind`): its `parse`, refusing a text with the
    kind's own words (`argparse.ArgumentTypeError`); its plain `parse` (int, float) or None where the kind leaves
    the words to argparse ("invalid int value", "invalid choice").

    Examples:

    >>> from keras_bert_impl.utils.settings import POSITIVE_INT
    >>> flag_type(POSITIVE_INT)("8")
    8
    >>> flag_type(POSITIVE_INT)("0")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: expected a positive integer, got '0'
    """
    if kind is None or kind.text_error is None:
        return None if kind is None else kind.parse

    def parse(text):
        try:
            return kind.from_text(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _default(field, defaults):
    if field.name in defaults:
        return defaults[field.name]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def flag_fields(config_class):
    """The fields of `config_class` in the order of their flags: the order of declaration, then the fields of
    its `flags_last` (a class attribute, if any) in that order."""
    last = tuple(getattr(config_class, "flags_last", ()))
    fields = dataclasses.fields(config_class)
    return ([field for field in fields if field.name not in last]
            + sorted((field for field in fields if field.name in last), key=lambda field: last.index(field.name)))


def add_setting_flags(parser, config_class, defaults=None):
    """Adds a flag per field of the dataclass `config_class` to `parser` (a `FlagParser`, or a plain
    `argparse.ArgumentParser` when no boolean field takes absl's forms) and returns it.

    A field's flag has its name, its default (`defaults[name]` replacing it; none: a required flag), its help
    (`setting(help=...)`) and, by its kind: absl's boolean forms (`setting(switch=True)`: a flag without a
    value; `setting(negatable=True)`: `--name` / `--no-name`), its choices (`one_of`), or a type refusing a text
    in the kind's words. A field's `aliases` are more flags setting it.
    """
    defaults = dict(defaults or {})
    for field in flag_fields(config_class):
        metadata = field.metadata
        kind, help_text = metadata.get("kind"), metadata.get("help")
        if callable(help_text):
            help_text = help_text(config_class)
        default = _default(field, defaults)
        options = {"required": True} if default is dataclasses.MISSING else {"default": default}
        if is_boolean(kind) and metadata.get("switch"):
            parser.add_argument(f"--{field.name}", action="store_true", help=help_text)
        elif is_boolean(kind) and metadata.get("negatable"):
            parser.add_argument(f"--{field.name}", action=argparse.BooleanOptionalAction, help=help_text, **options)
        elif is_boolean(kind):
            parser.add_bool_flag(field.name, default, help_text)
        else:
            if kind is not None and kind.choices is not None:
                options["choices"] = kind.choices
            if flag_type(kind) is not None:
                options["type"] = flag_type(kind)
            parser.add_argument(f"--{field.name}", help=help_text, **options)
        for alias, alias_help in metadata.get("aliases", ()):
            parser.add_argument(f"--{alias}", dest=field.name, metavar=alias.upper(), default=options.get("default"),
                                type=options.get("type"), help=alias_help)
    return parser


def settings_parser(config_class, description=None, defaults=None, **parser_options):
    """The `FlagParser` of a recipe whose settings are the dataclass `config_class`: `--debug` and a flag per
    field (`add_setting_flags`, `defaults` replacing fields' defaults).

    Examples:

    >>> from keras_bert_impl.tasks.configs import SwagConfig
    >>> args = settings_parser(SwagConfig).parse_args(["--output_dir=/tmp/swag", "--nodo_lower_case"])
    >>> args.output_dir, args.do_lower_case, args.train_batch_size, args.learning_rate_grid
    ('/tmp/swag', False, 32, None)
    """
    return add_setting_flags(FlagParser(description=description, **parser_options), config_class, defaults)


def config_from_flags(config_class, args):
    """The `config_class` (a dataclass of settings) of the parsed flags `args`: each field from the flag of its
    name, the fields without a flag at their defaults.

    Raises:
        TypeError: `args` holds a flag the config has no field for (a recipe's parser and its config disagree).

    Examples:

    >>> from keras_bert_impl.tasks.configs import SwagConfig
    >>> from keras_bert_impl.runners.run_swag import build_parser
    >>> config = config_from_flags(SwagConfig, build_parser().parse_args(["--output_dir=/tmp/swag", "--do_train"]))
    >>> config.do_train, config.train_batch_size, type(config).__name__
    (True, 32, 'SwagConfig')
    """
    flags = {name: value for name, value in vars(args).items() if name not in NOT_SETTINGS}
    unknown = sorted(set(flags) - {field.name for field in dataclasses.fields(config_class)})
    if unknown:
        raise TypeError(f"{config_class.__name__} has no field for the flags {', '.join(unknown)}")
    return config_class(**flags)
