"""Extracts fixed BERT features (the feature-based approach), as google-research/bert's extract_features.py.

`python -m keras_bert_impl.runners.extract_features`, or in a checkout `python recipes/extract_features.py`:

    python -m keras_bert_impl.runners.extract_features --input_file=input.txt --output_file=output.jsonl \
        --init_checkpoint=PATH --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8

Every line of --input_file is `text_a` or `text_a ||| text_b`; --output_file gets one JSON object per
line in the original's structure (see keras_bert_impl/tasks/feature_extraction.py). --init_checkpoint is a
Hugging Face directory, a Google checkpoint (directory or prefix) or a directory written by
save_pretrained; --vocab_file and --bert_config_file default to the checkpoint's own.

--feature_mode names one of the paper's Table 7 rows instead of --layers: embeddings, second_to_last,
last, sum_last_four, concat_last_four or sum_all (the "sum_" rows write the plain average of their layers,
an untrained scalar mix; see keras_bert_impl/tasks/feature_extraction.py).

The flags, the input and the checkpoint are checked before --output_file is opened, and the output is
written under a temporary name renamed once complete: a mistake or a full disk leaves no --output_file.
A mistake in a flag or a file stops the run with one line and exit status 2 (--debug: the traceback).
"""

import dataclasses
import logging
from typing import Optional

from keras_bert_impl.models.feature_modes import FEATURE_MODES
from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import config_from_flags, settings_parser
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.settings import BOOLEAN, POSITIVE_INT, one_of, setting

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FeatureExtractionConfig:
    """The settings of the recipe, one per flag, with the original's flag names and defaults."""

    input_file: str = setting(help="Text lines: `text_a` or `text_a ||| text_b`.")
    output_file: str = setting(help="Where the JSON Lines go.")
    layers: str = setting("-1,-2,-3,-4", help="Comma-separated encoder layer indices.")
    feature_mode: str = setting("", one_of(("", *FEATURE_MODES)), "A Table 7 row written instead of --layers (the "
                                "sum_ rows: the plain average of their layers).")
    bert_config_file: Optional[str] = setting(None, help="bert_config.json; default: the checkpoint's own.")
    max_seq_length: int = setting(128, POSITIVE_INT, "Sequence length after WordPiece.")
    init_checkpoint: str = setting(help="The pretrained checkpoint.")
    vocab_file: Optional[str] = setting(None, help="vocab.txt; default: the checkpoint directory's.")
    do_lower_case: bool = setting(True, BOOLEAN, "Lower-case the input (uncased models).")
    batch_size: int = setting(32, POSITIVE_INT, "Lines per forward pass.")


def build_parser():
    """The argument parser: a flag per field of `FeatureExtractionConfig`."""
    return settings_parser(FeatureExtractionConfig, __doc__)


def parse_layers(value):
    """`--layers` ("-1,-2") -> [-1, -2]; UserInputError for anything but comma-separated integers."""
    try:
        layers = [int(x) for x in value.split(",")]
    except ValueError:
        raise UserInputError(
            f"--layers: expected comma-separated integers such as -1,-2,-3,-4, got {value!r}."
        ) from None
    return layers


def run(args):
    """Checks the flags and the input, loads the checkpoint, writes --output_file; returns the line count."""
    return extract(config_from_flags(FeatureExtractionConfig, args))


def extract(config):
    """Checks `config` (a `FeatureExtractionConfig`) and the input, loads the checkpoint, writes --output_file;
    returns the line count."""
    from keras_bert_impl.tasks.base import load_backbone, load_tokenizer  # Keras: after the flags
    from keras_bert_impl.tasks.feature_extraction import extract_features, read_input_lines, write_features

    layer_indexes = parse_layers(config.layers)
    if config.max_seq_length < 3:
        raise UserInputError(f"--max_seq_length: expected at least 3 ([CLS] a [SEP]), got {config.max_seq_length}.")
    lines = read_input_lines(config.input_file)
    tokenizer = load_tokenizer(config)
    backbone = load_backbone(config, output_hidden_states=True)
    if config.max_seq_length > backbone.config.max_position_embeddings:
        raise UserInputError(f"--max_seq_length: {config.max_seq_length} exceeds the model's max_position_embeddings "
                             f"({backbone.config.max_position_embeddings}).")
    try:
        records = extract_features(backbone, tokenizer, lines, layer_indexes, config.max_seq_length, config.batch_size,
                                   feature_mode=config.feature_mode or None)
    except UserInputError as error:
        raise UserInputError(f"--layers: {error}") from None
    count = write_features(config.output_file, records)
    logger.info(f"wrote features of {count} lines to {config.output_file}")
    return count


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv)


if __name__ == "__main__":
    main()
