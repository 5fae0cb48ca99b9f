"""Reproduces the shape of the paper's ablation Tables 5, 7 and 8 end to end on this machine.

    python recipes/ablations.py --table=5 --work_dir=/tmp/ablations   # pre-training tasks (NSP, LTR, + BiLSTM)
    python recipes/ablations.py --table=8 --work_dir=/tmp/ablations   # masking strategies (MASK/SAME/RND)
    python recipes/ablations.py --table=7 --work_dir=/tmp/ablations   # feature-based NER on MiniLM

Each step is a command of this repository (corpus, vocabulary, create_pretraining_data.py, pretrain.py,
run_glue.py / run_ner.py / run_squad.py) with the same data, steps and seeds across a table's rows. Writes
work_dir/table_N.md (the table in the paper's layout, the commands and their run times) and table_N.json.
The same command run again skips the finished steps. Tables 5 and 8 share the corpus, vocabulary and
80/10/10 model when run in one work_dir. `--smoke`: the same pipelines at toy size. The steps are
listed in keras_bert_impl/experiments/ablations.py; docs/experiments.md says what each table measures.
"""

import os

from keras_bert_impl.experiments.ablations import build_parser, run
from keras_bert_impl.runners.cli import run_main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(argv=None):
    """Runs the table; a user's mistake is one line on stderr and exit status 2 (--debug: its traceback)."""
    return run_main(lambda: build_parser(REPO), lambda args: run(args, REPO), argv)


if __name__ == "__main__":
    main()
