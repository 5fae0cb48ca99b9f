"""The sentence-embedding recipe (sentence-transformers' training of a sentence encoder): its flags (the fields
of `tasks.configs.SentenceEmbeddingsConfig`), and a run of `tasks.sentence_embeddings.SentenceEmbeddingsTask` on
the `SentenceEmbeddingsConfig` made from them.
`python recipes/run_sentence_embeddings.py` or `python -m keras_bert_impl.runners.run_sentence_embeddings`;
usage, data files and outputs: recipes/run_sentence_embeddings.py.
"""

from keras_bert_impl.runners.finetuning_recipe import finetuning_recipe
from keras_bert_impl.tasks.configs import SentenceEmbeddingsConfig

# build_parser(): a flag per field of SentenceEmbeddingsConfig; run(args): the task (imported when it runs) on the
# config of the parsed flags; main(argv=None): parses and runs.
build_parser, run, main = finetuning_recipe(
    SentenceEmbeddingsConfig, "keras_bert_impl.tasks.sentence_embeddings.SentenceEmbeddingsTask",
    "Train a sentence encoder (sentence embeddings) with in-batch negatives, CoSENT or SimCSE; score scored pairs "
    "(STS-B's Spearman and Pearson).")


if __name__ == "__main__":
    main()
