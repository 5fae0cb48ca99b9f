"""The named-entity recognition recipe (the paper's Section 5.3; CoNLL-2003 format and the datasets
ecosystem's records): its flags (the fields of `tasks.configs.NerConfig`), and a run of `tasks.ner.NerTask`
on the `NerConfig` made from them. `python recipes/run_ner.py` or `python -m keras_bert_impl.runners.run_ner`;
usage, options and outputs: recipes/run_ner.py.
"""

from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe
from keras_bert_impl.tasks.configs import NerConfig

# build_parser(): a flag per field of NerConfig; run(args): the task (imported when it runs) on the config of the
# parsed flags; main(argv=None): parses and runs.
build_parser, run, main = finetuning_recipe(
    NerConfig, "keras_bert_impl.tasks.ner.NerTask",
    "Fine-tune BERT for named-entity recognition (CoNLL-2003 format, records, CLUENER).")


if __name__ == "__main__":
    main()
