"""Writes the benchmark's inputs and NumPy references, and times numpy.fft.fft on them.

    python3 numpy_fft.py DATA_DIR N [N ...]

For each n: x_N.bin (a seeded complex128 normal sample, interleaved re/im) and ref_N.bin
(numpy.fft.fft of it, complex128). Appends to DATA_DIR/numpy.tsv the same columns as
fft_choice writes: candidate, dtype, n, median microseconds, relative error, plan ms, method.
NumPy 1.x's pocketfft computes in double only: a complex64 input is converted to complex128
first (that conversion is part of what its complex64 column times), and the result is complex128.
"""
import sys
import timeit

import numpy as np


def median_seconds(f):
    one = timeit.timeit(f, number=1)
    number = max(1, int(0.02 / max(one, 1e-9)))
    runs = timeit.repeat(f, number=number, repeat=7)
    return sorted(runs)[len(runs) // 2] / number


def main():
    out_dir, sizes = sys.argv[1], [int(a) for a in sys.argv[2:]]
    with open(f"{out_dir}/sizes.txt", "w") as f:
        f.write("\n".join(map(str, sizes)) + "\n")
    with open(f"{out_dir}/numpy.tsv", "w") as tsv:
        for n in sizes:
            rng = np.random.default_rng(n)
            x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
            ref = np.fft.fft(x)
            x.tofile(f"{out_dir}/x_{n}.bin")
            ref.tofile(f"{out_dir}/ref_{n}.bin")
            for dtype in (np.complex128, np.complex64):
                xi = x.astype(dtype)
                y = np.fft.fft(xi)
                err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
                sec = median_seconds(lambda: np.fft.fft(xi))
                name = np.dtype(dtype).name
                tsv.write(f"numpy\t{name}\t{n}\t{sec * 1e6}\t{err}\t0\tpocketfft (numpy {np.__version__})\n")
                print(f"numpy        {name:10s} n={n:<8d} {sec * 1e6:12.1f} us  err {err:.2e}", file=sys.stderr)


if __name__ == "__main__":
    main()
