"""The entry point of a fine-tuning recipe: `finetuning_recipe(build_parser, task_class_path)` gives its
`run(args)` and `main(argv=None)`. Nothing here imports Keras or the task: the task is imported by its path
once the flags are parsed (recipes/run_glue.py's `--help` answers without TensorFlow).
"""

import importlib

from keras_bert_impl.runners.cli import run_main
from keras_bert_impl.runners.finetuning_flags import config_from_flags


def finetuning_recipe(build_parser, task_class_path):
    """The `run(args)` and `main(argv=None)` of the fine-tuning recipe whose flags `build_parser()` parses
    and whose task is the class at `task_class_path` ("module.Class", a `tasks.base.FinetuningTask` subclass),
    imported when the recipe runs, after its flags are parsed.

    `run(args)` makes the task's config from the parsed flags (`config_from_flags(task_class.config_class,
    args)`) and returns `runners.finetuning.run_finetuning(task_class(config))`: the results written to
    eval_results.json (or {}). `main(argv)` parses `argv` (default: the command line) and returns `run`'s
    results; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback;
    `cli.run_main`).

    Examples:

    >>> from keras_bert_impl.runners.run_swag import build_parser
    >>> run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.swag.SwagTask")
    >>> main(["--output_dir=/tmp/swag", "--do_train", "--learning_rate=0"])  # stderr: the flag's error
    Traceback (most recent call last):
    SystemExit: 2
    """

    def run(args):
        """Trains / evaluates / predicts as the flags say; returns the results written to eval_results.json
        (or {})."""
        from keras_bert_impl.runners.finetuning import run_finetuning  # Keras: imported once the flags are parsed

        module, name = task_class_path.rsplit(".", 1)
        task_class = getattr(importlib.import_module(module), name)
        return run_finetuning(task_class(config_from_flags(task_class.config_class, args)))

    def main(argv=None):
        """Runs the recipe; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
        return run_main(build_parser, run, argv)

    return run, main
