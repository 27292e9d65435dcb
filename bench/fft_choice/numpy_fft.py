"""Writes the benchmark's inputs and NumPy references, and times numpy.fft.fft on them.

    python3 numpy_fft.py DATA_DIR N [N ...]           inputs and references
    python3 numpy_fft.py --time DATA_DIR N            timings of one n

The first writes, for each n, x_N.bin (a seeded complex128 normal sample, interleaved re/im)
and ref_N.bin (numpy.fft.fft of it, complex128). The second appends to DATA_DIR/numpy.tsv the
same columns as fft_choice writes: candidate, dtype, n, median microseconds, relative error,
plan ms, method (run per n between the C++ candidates' runs of that n, so that the machine's
load drifts less between the numbers a ratio compares).
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
    if sys.argv[1] == "--time":
        out_dir, n = sys.argv[2], int(sys.argv[3])
        x = np.fromfile(f"{out_dir}/x_{n}.bin", dtype=np.complex128)
        ref = np.fromfile(f"{out_dir}/ref_{n}.bin", dtype=np.complex128)
        with open(f"{out_dir}/numpy.tsv", "a") as tsv:
            for dtype in (np.complex128, np.complex64):
                xi = x.astype(dtype)
                y = np.fft.fft(xi)
                err = np.linalg.norm(y - ref) / np.linalg.norm(ref)
                sec = median_seconds(lambda: np.fft.fft(xi))
                name = np.dtype(dtype).name
                tsv.write(f"numpy\t{name}\t{n}\t{sec * 1e6}\t{err}\t0\tpocketfft (numpy {np.__version__})\n")
                print(f"numpy        {name:10s} n={n:<8d} {sec * 1e6:12.1f} us  err {err:.2e}", file=sys.stderr)
        return
    out_dir, sizes = sys.argv[1], [int(a) for a in sys.argv[2:]]
    with open(f"{out_dir}/sizes.txt", "w") as f:
        f.write("\n".join(map(str, sizes)) + "\n")
    for n in sizes:
        rng = np.random.default_rng(n)
        x = rng.standard_normal(n) + 1j * rng.standard_normal(n)
        x.tofile(f"{out_dir}/x_{n}.bin")
        np.fft.fft(x).tofile(f"{out_dir}/ref_{n}.bin")


if __name__ == "__main__":
    main()
