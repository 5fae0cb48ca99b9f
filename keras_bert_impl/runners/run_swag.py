"""The SWAG fine-tuning recipe (multiple choice; Devlin et al. §4.4): its flags, and a run of
`tasks.swag.SwagTask` on the `SwagConfig` made from them. `python recipes/run_swag.py` or
`python -m keras_bert_impl.runners.run_swag`; usage, data files and outputs: recipes/run_swag.py.
"""

from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
    finetuning_recipe,
)


def build_parser():
    return add_task_flags(add_data_file_flags(finetuning_flag_parser("Fine-tune BERT on SWAG.")), "example")


def task_class():
    """The task, imported when the recipe runs (its flags are parsed without Keras)."""
    from keras_bert_impl.tasks.swag import SwagTask

    return SwagTask


# run(args): the task run on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, task_class)


if __name__ == "__main__":
    main()
