"""The SQuAD v1.1 / v2.0 fine-tuning recipe (google-research/bert run_squad.py): its flags (the fields of
`tasks.configs.SquadConfig`), and a run of `tasks.squad.SquadTask` on the `SquadConfig` made from them.
`python recipes/run_squad.py` or `python -m keras_bert_impl.runners.run_squad`; usage, data files and
outputs: recipes/run_squad.py.
"""

from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe
from keras_bert_impl.tasks.configs import SquadConfig

# build_parser(): a flag per field of SquadConfig; run(args): the task (imported when it runs) on the config of the
# parsed flags; main(argv=None): parses and runs.
build_parser, run, main = finetuning_recipe(
    SquadConfig, "keras_bert_impl.tasks.squad.SquadTask",
    "Fine-tune BERT on SQuAD v1.1 / v2.0.")


if __name__ == "__main__":
    main()
