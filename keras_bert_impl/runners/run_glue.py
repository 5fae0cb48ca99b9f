"""The GLUE fine-tuning recipe (google-research/bert run_classifier.py), also for your own classification
data (no --task_name: labels of any count from --train_file): its flags (the fields of
`tasks.configs.GlueConfig`), and a run of `tasks.glue.GlueTask` on the `GlueConfig` made from them.
`python recipes/run_glue.py` or `python -m keras_bert_impl.runners.run_glue`; usage, data files and outputs:
recipes/run_glue.py.
"""

from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe
from keras_bert_impl.tasks.configs import GlueConfig

# build_parser(): a flag per field of GlueConfig; run(args): the task (imported when it runs) on the config of the
# parsed flags; main(argv=None): parses and runs.
build_parser, run, main = finetuning_recipe(
    GlueConfig, "keras_bert_impl.tasks.glue.GlueTask",
    "Fine-tune BERT on a GLUE task, or on your own classification data.")


if __name__ == "__main__":
    main()
