"""The backbone forward through each attention path of `BertSelfAttention` at inference, and keras-hub's,
timed in turn in one process (bert_base, random weights, 8 x 128, `predict_on_batch`):

    KERAS_BACKEND=tensorflow python benchmarks/attention_paths.py [--rounds 10]

"fused": `keras.ops.dot_product_attention`; "explicit": the einsums, softmax and product with the values
(the two `attention` paths of `keras_bert_impl/backends/cpu_paths`, forced in turn). Each model is traced
with its path, then the three run round-robin, so the medians compare runs under the same load.
Prints one line of medians and minima in seconds. Not a test.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import bench_case  # noqa: E402
from keras_bert_impl.backends import cpu_paths  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    x = bench_case.random_batch(8, 128)
    def with_path(model, path):
        def run():
            with cpu_paths.forced(attention=path):  # read while the first call traces (torch: every call)
                return model.predict_on_batch(x)
        return run

    hub = bench_case.keras_backbone("keras_hub", "bert_base")
    runs = {"fused": with_path(bench_case.keras_backbone("ours", "bert_base"), "fused"),
            "explicit": with_path(bench_case.keras_backbone("ours", "bert_base"), "explicit"),
            "keras_hub": lambda: hub.predict_on_batch(x)}
    for run in runs.values():
        run(), run()
    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    print("median", {n: round(float(np.median(t)), 4) for n, t in times.items()},
          "min", {n: round(float(np.min(t)), 4) for n, t in times.items()})


if __name__ == "__main__":
    main()
