"""A stand-in for scikit-learn that cannot be imported, for the test suite's subprocesses.

`tests/finetuning_files.subprocess_pythonpath()` puts this folder on a subprocess's PYTHONPATH, so the recipes
and scripts the tests run start as in an environment without scikit-learn. keras_bert_impl does not use
scikit-learn; the test environments hold it only as a reference (tests/test_glue_metrics.py) and for
sentence-transformers, both used in the pytest processes themselves.

Keras imports scikit-learn at its own import when it is installed (`keras.wrappers`). That import is
0.6–0.9 s of each subprocess's start; docs/performance.md ("Test suite") gives the figures.
"""

raise ImportError("scikit-learn is hidden from the test suite's subprocesses (tests/without_scikit_learn)")
