"""The entry point of a fine-tuning recipe: `finetuning_recipe(config_class, task_class_path, description)`
gives its `build_parser()`, `run(args)` and `main(argv=None)`. Nothing here imports Keras or the task: the
flags are made from the config (`tasks.configs`, a module without Keras) and the task is imported by its
path once the flags are parsed (recipes/run_glue.py's `--help` answers without TensorFlow).
"""

import importlib

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.flags import config_from_flags, settings_parser


def finetuning_recipe(config_class, task_class_path, description):
    """The `build_parser()`, `run(args)` and `main(argv=None)` of the fine-tuning recipe whose settings are
    `config_class` (a `tasks.configs.FinetuningConfig` subclass) and whose task is the class at
    `task_class_path` ("module.Class", a `tasks.base.FinetuningTask` subclass), imported when the recipe runs,
    after its flags are parsed.

    `build_parser()` is the recipe's flags, one per field of `config_class` (`flags.settings_parser`, with
    `description`). `run(args)` makes the task's config from the parsed flags (`config_from_flags`) and returns
    `runners.finetuning.run_finetuning(task_class(config))`: the results written to eval_results.json (or {}).
    `main(argv)` parses `argv` (default: the command line) and returns `run`'s results; a user's mistake is one
    line on stderr and exit status 2 (--debug: its traceback; `cli.run_main`).

    Examples:

    >>> from keras_bert_impl.tasks.configs import SwagConfig
    >>> build_parser, run, main = finetuning_recipe(SwagConfig, "keras_bert_impl.tasks.swag.SwagTask", "SWAG.")
    >>> main(["--output_dir=/tmp/swag", "--do_train", "--learning_rate=0"])  # stderr: the flag's error
    Traceback (most recent call last):
    SystemExit: 2
    """

    def build_parser():
        """The recipe's flags: one per field of its config, with the field's name, default and help."""
        return settings_parser(config_class, description)

    def run(args):
        """Trains / evaluates / predicts as the flags say; returns the results written to eval_results.json
        (or {})."""
        from keras_bert_impl.runners.finetuning import run_finetuning  # Keras: imported once the flags are parsed

        module, name = task_class_path.rsplit(".", 1)
        return run_finetuning(getattr(importlib.import_module(module), name)(config_from_flags(config_class, args)))

    def main(argv=None):
        """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
        return run_main(build_parser, run, argv)

    return build_parser, run, main
