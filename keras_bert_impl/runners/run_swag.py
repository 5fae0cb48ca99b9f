"""The SWAG fine-tuning recipe (multiple choice; Devlin et al. §4.4): its flags (the fields of
`tasks.configs.SwagConfig`), and a run of `tasks.swag.SwagTask` on the `SwagConfig` made from them.
`python recipes/run_swag.py` or `python -m keras_bert_impl.runners.run_swag`; usage, data files and outputs:
recipes/run_swag.py.
"""

from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe
from keras_bert_impl.tasks.configs import SwagConfig

# build_parser(): a flag per field of SwagConfig; run(args): the task (imported when it runs) on the config of the
# parsed flags; main(argv=None): parses and runs.
build_parser, run, main = finetuning_recipe(
    SwagConfig, "keras_bert_impl.tasks.swag.SwagTask",
    "Fine-tune BERT on SWAG.")


if __name__ == "__main__":
    main()
