"""The SWAG fine-tuning recipe (multiple choice; Devlin et al. §4.4): its flags, and a run of
`tasks.swag.SwagTask` on the `SwagConfig` made from them. `python recipes/run_swag.py` or
`python -m keras_bert_impl.runners.run_swag`; usage, data files and outputs: recipes/run_swag.py.
"""

from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
)
from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe


def build_parser():
    return add_task_flags(add_data_file_flags(finetuning_flag_parser("Fine-tune BERT on SWAG.")), "example")


# run(args): the task (imported when it runs) on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.swag.SwagTask")


if __name__ == "__main__":
    main()
