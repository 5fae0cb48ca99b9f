"""The sentence-embedding recipe (sentence-transformers' training of a sentence encoder): its flags, and a run
of `tasks.sentence_embeddings.SentenceEmbeddingsTask` on the `SentenceEmbeddingsConfig` made from them.
`python recipes/run_sentence_embeddings.py` or `python -m keras_bert_impl.runners.run_sentence_embeddings`;
usage, data files and outputs: recipes/run_sentence_embeddings.py.
"""

from keras_bert_impl.runners.finetuning_flags import (
    add_data_file_flags,
    add_task_flags,
    finetuning_flag_parser,
)
from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe

# The choices of --loss and --pooling (`data.sentence_pairs_data.LOSSES`, `tasks.sentence_embeddings.
# POOLING_CHOICES`), written here so that --help answers without importing Keras.
LOSSES = ("mnrl", "cosent", "simcse")
POOLING_CHOICES = ("mean", "cls", "max", "mean_sqrt_len_tokens")


def build_parser():
    p = finetuning_flag_parser("Train a sentence encoder (sentence embeddings) with in-batch negatives, CoSENT or "
                               "SimCSE; score scored pairs (STS-B's Spearman and Pearson).")
    add_data_file_flags(p)
    p.add_argument("--loss", choices=LOSSES, default="mnrl", help="mnrl: in-batch negatives (--train_file columns "
                   "anchor, positive, optional negative); cosent: CoSENT on scored pairs (sentence1, sentence2, "
                   "score); simcse: unsupervised SimCSE (text, each twice through dropout).")
    p.add_bool_flag("symmetric", False, "--loss=mnrl: also rank the anchors for each positive "
                    "(MultipleNegativesSymmetricRankingLoss).")
    p.add_argument("--pooling", choices=POOLING_CHOICES, default=None,
                   help="How token vectors become the sentence embedding. Default: the checkpoint's "
                   "(1_Pooling/config.json of a sentence-transformers directory), else mean.")
    p.add_bool_flag("normalize", None, "L2-normalize the embeddings (a Normalize module). Default: whether the "
                    "checkpoint has one, else off.")
    return add_task_flags(p, "text group")


# run(args): the task (imported when it runs) on the config of the parsed flags; main(argv=None): parses and runs.
run, main = finetuning_recipe(build_parser, "keras_bert_impl.tasks.sentence_embeddings.SentenceEmbeddingsTask")


if __name__ == "__main__":
    main()
