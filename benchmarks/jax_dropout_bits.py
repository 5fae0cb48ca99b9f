"""A dropout mask on JAX from the two threefry layouts, jitted, timed in turn round by round:

    python benchmarks/jax_dropout_bits.py [--rounds 40]

"partitionable": `jax.random.bernoulli` under JAX's default `jax_threefry_partitionable`, what Keras' dropout
draws; "original": the same call with it off, what `BertDropout` draws on JAX's CPU in one process
(`backends/jax_ops.unpartitioned_threefry`). Shapes: bert_small's attention probabilities and hidden
states at 16 x 128. Prints the median and fastest milliseconds of each. Not a test.
"""

import argparse
import statistics
import time

import jax

SHAPES = [(16, 8, 128, 128), (16, 128, 512)]  # [batch, heads, seq, seq]; [batch, seq, hidden]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    key = jax.random.key(0)
    masks = {(shape, partitionable): jax.jit(lambda k, s=shape: jax.random.bernoulli(k, 0.9, s))
             for shape in SHAPES for partitionable in (True, False)}
    times = {case: [] for case in masks}
    for _ in range(args.rounds + 2):
        for (shape, partitionable), mask in masks.items():
            with jax.threefry_partitionable(partitionable):  # each layout traced and run under its setting
                start = time.perf_counter()
                jax.block_until_ready(mask(key))
                times[(shape, partitionable)].append(time.perf_counter() - start)
    print(f"jax {jax.__version__} on {jax.default_backend()}")
    for (shape, partitionable), t in times.items():
        t = t[2:]  # the first two rounds compile
        print(f"{list(shape)} {'partitionable' if partitionable else 'original'}: median "
              f"{statistics.median(t) * 1e3:.2f} ms, fastest {min(t) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
