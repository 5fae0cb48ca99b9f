"""The SWAG fine-tuning recipe (multiple choice; Devlin et al. §4.4): its flags, and a run of
`tasks.swag.SwagTask` on the `SwagConfig` made from them. `python recipes/run_swag.py` or
`python -m keras_bert_impl.runners.run_swag`; usage, data files and outputs: recipes/run_swag.py.
"""

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.finetuning import run_finetuning
from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    config_from_flags,
    finetuning_flag_parser,
)
from keras_bert_impl.tasks.swag import SwagConfig, SwagTask


def build_parser():
    return add_task_flags(add_data_file_flags(finetuning_flag_parser("Fine-tune BERT on SWAG.")), "example")


def run(args):
    """Trains / evaluates / predicts as the flags say; returns the dev metrics (or {})."""
    return run_finetuning(SwagTask(config_from_flags(SwagConfig, args)))


def main(argv=None):
    """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(build_parser, run, argv)


if __name__ == "__main__":
    main()
