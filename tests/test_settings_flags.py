"""A recipe's flags are made from its typed config's fields (`runners.flags.settings_parser`): each field's name,
default, kind (absl's boolean forms, a switch, a negatable flag, choices, a checked number) and help; aliases;
required fields; the order of `flags_last`; and a typed value is refused with the same words as its flag's
text (`utils.settings.Kind`, one validator system)."""

import argparse
import contextlib
import dataclasses
import io
from typing import ClassVar, Optional

import pytest

from keras_bert_impl.runners.flags import add_setting_flags, config_from_flags, settings_parser
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.settings import (
    BOOLEAN,
    FRACTION,
    INTEGER,
    LEARNING_RATE_GRID,
    POSITIVE_INT,
    check_settings,
    one_of,
    optional,
    run_settings,
    setting,
)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Example:
    unit: ClassVar[str] = "window"
    flags_last: ClassVar[tuple] = ("verbose", "padding")

    output_dir: str = setting(help="Where it goes.", shapes_weights=False)
    padding: bool = setting(True, BOOLEAN, lambda config_class: f"Pad to the longest {config_class.unit}.")
    verbose: int = setting(1, one_of((0, 1, 2)), "Verbosity.", shapes_weights=False)
    batch_size: int = setting(32, POSITIVE_INT, "Examples per batch.")
    warmup: float = setting(0.1, FRACTION, "Warmup share.")
    stride: int = setting(128, INTEGER, "Stride.")
    lower_case: Optional[bool] = setting(None, optional(BOOLEAN), "Lower-case.")
    grid: Optional[tuple] = setting(None, optional(LEARNING_RATE_GRID), "Rates.")
    validation_file: Optional[str] = setting(None, help="Dev file.", aliases=(("dev_file", "Same."),))

    def __post_init__(self):
        check_settings(self)


def _error(parser, *argv):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), pytest.raises(SystemExit) as exit_info:
        parser.parse_args(argv)
    assert exit_info.value.code == 2
    return stderr.getvalue()


def test_every_field_is_a_flag_of_its_name_default_and_kind():
    parser = settings_parser(Example, "An example.")
    args = parser.parse_args(["--output_dir=out"])
    assert config_from_flags(Example, args) == Example(output_dir="out")
    args = parser.parse_args(["--output_dir=out", "--nopadding", "--verbose=2", "--batch_size=8", "--warmup=0",
                              "--stride=-3", "--lower_case", "--grid=5e-5,3e-5", "--dev_file=dev.txt"])
    config = config_from_flags(Example, args)
    assert (config.padding, config.verbose, config.batch_size, config.warmup, config.stride, config.lower_case,
            config.grid, config.validation_file) == (False, 2, 8, 0.0, -3, True, (5e-5, 3e-5), "dev.txt")
    assert parser.parse_args(["--output_dir=o", "--padding=no"]).padding is False
    assert parser.parse_args(["--output_dir=o", "--lower_case=False"]).lower_case is False


def test_a_flag_is_refused_in_one_line_in_its_kinds_words_as_the_field_is():
    parser = settings_parser(Example)
    assert "the following arguments are required: --output_dir" in _error(parser)
    cases = {"--batch_size=0": "argument --batch_size: expected a positive integer, got '0'",
             "--warmup=1.5": "argument --warmup: expected a number in [0, 1], got '1.5'",
             "--padding=maybe": "argument --padding: not a boolean: 'maybe'",
             "--stride=1.5": "argument --stride: invalid int value: '1.5'",
             "--verbose=3": "argument --verbose: invalid choice: 3 (choose from 0, 1, 2)",
             "--grid=5e-5,5e-5": "argument --grid: expected comma-separated positive learning rates such as 5e-5,4e-5,3e-5,2e-5, "
                                 "got '5e-5,5e-5'",
             "--batch_siz=8": "unrecognized arguments: --batch_siz=8"}  # never abbreviated
    for flag, message in cases.items():
        assert _error(parser, "--output_dir=o", flag) == f"error: {message} (see --help)\n", flag
    with pytest.raises(UserInputError, match=r"^Example\.batch_size: expected a positive integer, got 0$"):
        Example(output_dir="o", batch_size=0)
    with pytest.raises(UserInputError, match=r"^Example\.warmup: expected a number in \[0, 1\], got 1\.5$"):
        Example(output_dir="o", warmup=1.5)


def test_help_lists_the_fields_in_order_with_flags_last_at_the_end_and_their_help():
    text = settings_parser(Example, "An example.").format_help()
    order = [text.index(f"  --{name}") for name in ("debug", "output_dir", "batch_size", "warmup", "stride",
                                                      "lower_case", "grid", "validation_file", "dev_file", "verbose",
                                                      "padding")]
    assert order == sorted(order)
    assert "Pad to the longest window. (default: True)" in text and "Examples per batch. (default: 32)" in text


def test_switch_and_negatable_booleans_on_a_plain_parser():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Plain:
        quiet: bool = setting(False, BOOLEAN, "No output.", switch=True)
        lower_case: bool = setting(True, BOOLEAN, "Lower-case.", negatable=True)

    parser = add_setting_flags(argparse.ArgumentParser(allow_abbrev=False), Plain)
    assert vars(parser.parse_args([])) == {"quiet": False, "lower_case": True}
    assert vars(parser.parse_args(["--quiet", "--no-lower_case"])) == {"quiet": True, "lower_case": False}


def test_run_settings_are_the_fields_that_shape_the_weights():
    assert run_settings(Example(output_dir="o", grid=(5e-5,))) == {
        "batch_size": 32, "grid": [5e-5], "lower_case": None, "padding": True, "stride": 128,
        "validation_file": None, "warmup": 0.1}
