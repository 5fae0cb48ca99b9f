"""The dense products of BERT's layers on torch's CPU, forward and backward, through the two paths:

    python benchmarks/torch_dense_paths.py [--rounds 20]

"addmm": `torch.addmm(bias, x, kernel)`, what `torch.nn.functional.linear` and Keras' Dense compute on torch
(MKL's sgemm); "onednn": `backends/torch_ops.onednn_dense` (oneDNN's products, what `BertDense` and
`BertEinsumDense` run in float32 on the CPU). Each shape is bert_small's at 16 x 128 (2048 rows) or
bert_base's vocabulary product; the two paths run in turn, round by round. Prints, per shape, the median
milliseconds of one forward and backward of each path, their ratio, the largest difference of the output
and the gradients relative to the largest value, and each path's GFLOP/s. Not a test.
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("KERAS_BACKEND", "torch")  # keras_bert_impl imports Keras

import torch  # noqa: E402

from keras_bert_impl.backends import torch_ops  # noqa: E402

SHAPES = [  # (rows, in, out): the attention's projections, the feed-forward's two, the vocabulary product
    (2048, 512, 512),
    (2048, 512, 2048),
    (2048, 2048, 512),
    (1024, 768, 30522),
]


def forward_backward(product, x, kernel, bias, upstream):
    """One forward and backward of `product`; returns the output and the three gradients."""
    for t in (x, kernel, bias):
        t.grad = None
    y = product(x, kernel, bias)
    y.backward(upstream)
    return [y.detach(), x.grad, kernel.grad, bias.grad]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    paths = {"addmm": lambda x, k, b: torch.addmm(b, x, k), "onednn": torch_ops.onednn_dense}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for rows, fan_in, fan_out in SHAPES:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(rows, fan_in, generator=generator).requires_grad_()
        kernel = (torch.randn(fan_in, fan_out, generator=generator) * 0.02).requires_grad_()
        bias = torch.randn(fan_out, generator=generator).requires_grad_()
        upstream = torch.randn(rows, fan_out, generator=generator)
        results = {name: forward_backward(path, x, kernel, bias, upstream) for name, path in paths.items()}
        error = max(float((a - b).abs().max() / a.abs().max()) for a, b in zip(results["addmm"], results["onednn"]))
        times = {name: [] for name in paths}
        for _ in range(args.rounds):
            for name, path in paths.items():
                start = time.perf_counter()
                forward_backward(path, x, kernel, bias, upstream)
                times[name].append(time.perf_counter() - start)
        median = {name: statistics.median(t) for name, t in times.items()}
        flops = 3 * 2 * rows * fan_in * fan_out
        print(f"[{rows}, {fan_in}] x [{fan_in}, {fan_out}]: addmm {median['addmm'] * 1e3:.1f} ms, "
              f"onednn {median['onednn'] * 1e3:.1f} ms ({median['addmm'] / median['onednn']:.2f}x); "
              f"max relative difference {error:.1e}; GFLOP/s {flops / median['addmm'] / 1e9:.0f} and "
              f"{flops / median['onednn'] / 1e9:.0f}")


if __name__ == "__main__":
    main()
