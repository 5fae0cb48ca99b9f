"""The GLUE fine-tuning recipe (google-research/bert run_classifier.py), also for your own classification
data (no --task_name: labels of any count from --train_file): its flags, and a run of `tasks.glue.GlueTask`
on the `GlueConfig` made from them. `python recipes/run_glue.py` or
`python -m keras_bert_impl.runners.run_glue`; usage, data files and outputs: recipes/run_glue.py.
"""

from keras_bert_impl.data import glue_data
from keras_bert_impl.data.dataset_files import STREAMING_MIN_BYTES
from keras_bert_impl.data.text_classification_data import LONG_INPUT_MODES
from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
)
from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe


def build_parser():
    p = finetuning_flag_parser("Fine-tune BERT on a GLUE task, or on your own classification data.")
    p.add_argument("--task_name", default=None, help=f"One of {', '.join(glue_data.GLUE_TASKS)}. Without it: your "
                   "own data in --train_file / --validation_file / --test_file, labels of any count (integers or "
                   "strings; floats: a regression) read from --train_file.")
    p.add_argument("--classifier_dropout", type=float, default=0.1)
    add_data_file_flags(p)
    p.add_argument("--text_column", default=None, help="Column of the first text in --*_file records; default: the "
                   "task's glue datasets column (sentence, sentence1, question1, premise or question); your own "
                   "data: sentence1 (with sentence2), else text or sentence.")
    p.add_argument("--text_pair_column", default=None, help="Column of the second text ('' for none); default: "
                   "the task's (sentence2, question2, hypothesis, sentence; none for cola and sst2).")
    p.add_argument("--label_column", default="label", help="Column of the label in --*_file records.")
    p.add_argument("--long_input", choices=LONG_INPUT_MODES, default="truncate",
                   help="A text longer than --max_seq_length: truncate it (the original), or classify its windows "
                   "of --max_seq_length tokens, pooling their logits by their mean or max (training on every "
                   "window).")
    p.add_bool_flag("regression", False, "Your own data: a regression on its labels (integers too); without it "
                    "float labels make a regression and other labels a classifier of at least two labels.")
    p.add_bool_flag("stream_train_data", None, "Stream the training file of a GLUE task (a TSV or JSON lines) "
                    "from disk every epoch, in bounded memory, instead of featurizing it whole in memory (another batch order). Default: "
                    f"for files of {STREAMING_MIN_BYTES // 2**20} MiB or more.")
    return add_task_flags(p, "example")


# run(args): the task (imported when it runs) on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.glue.GlueTask")


if __name__ == "__main__":
    main()
