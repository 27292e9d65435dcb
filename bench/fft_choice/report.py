"""Renders the benchmark's results as markdown (bench/fft_choice/RESULTS.md).

    python3 report.py numpy.tsv cands.tsv > RESULTS.md

Times are medians in microseconds per transform; a ratio is the candidate's time over NumPy's
for the same element type (complex64 candidates against numpy on complex64 input), so below 1
is faster than NumPy. kissfft cells at primes it was not run on are extrapolated from the
largest prime it was run on by its O(n^2) cost there, and marked so.
"""
import os
import sys
import time

COLUMNS = [  # (candidate, dtype, heading)
    ("numpy", "complex128", "NumPy c128"),
    ("numpy", "complex64", "NumPy c64"),
    ("kiss", "complex64", "kissfft c64"),
    ("halide64", "complex64", "Halide c64"),
    ("halide64par", "complex64", "Halide c64, parallel"),
    ("halide128", "complex128", "Halide c128"),
    ("hlfft64", "complex64", "hl_fft c64"),
    ("hlfft128", "complex128", "hl_fft c128"),
]


def is_prime(n):
    return n > 1 and all(n % d for d in range(2, int(n ** 0.5) + 1))


def kind(n):
    if n & (n - 1) == 0:
        return "2^%d" % (n.bit_length() - 1)
    return "prime" if is_prime(n) else "composite"


def read(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            for line in f:
                cand, dtype, n, us, err, plan_ms, method = line.rstrip("\n").split("\t")
                rows[(cand, dtype, int(n))] = (float(us), float(err), float(plan_ms), method)
    return rows


def fmt_us(us):
    return f"{us:,.0f}" if us >= 100 else f"{us:.1f}"


def main():
    rows = read(sys.argv[1:])
    sizes = sorted({k[2] for k in rows}, key=lambda n: (kind(n) == "prime", kind(n) == "composite", n))
    cols = [c for c in COLUMNS if any((c[0], c[1], n) in rows for n in sizes)]
    measured_primes = [n for n in sizes if is_prime(n) and ("kiss", "complex64", n) in rows]
    p0 = max(measured_primes) if measured_primes else None
    out = []
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    load = open("/proc/loadavg").read().split()[:3]
    out.append("# FFT choice: measured results\n")
    out.append(f"Written by `bench/fft_choice/run` on {time.strftime('%Y-%m-%d %H:%M')}: {cpu}, "
               f"{os.cpu_count()} cores, load average at the end {' '.join(load)} "
               "(a shared machine: single numbers move by up to 2x between runs; ratios within a "
               "row were taken minutes apart at most).\n")
    out.append("Median microseconds per forward complex transform of length n; (ratio) is the time over "
               "NumPy's for the same element type, below 1 is faster. NumPy 1.x computes complex64 input "
               "in complex128 (its c64 time includes the conversion). `~` marks a kissfft time "
               "extrapolated by n^2 from the largest prime it ran (O(n^2) there).\n")
    out.append("| n | kind | " + " | ".join(c[2] for c in cols) + " |")
    out.append("|---:|:---|" + "---:|" * len(cols))
    for n in sizes:
        cells = []
        for cand, dtype, _ in cols:
            base = rows.get(("numpy", dtype, n))
            r = rows.get((cand, dtype, n))
            est = False
            if r is None and cand == "kiss" and is_prime(n) and p0:
                r = (rows[("kiss", "complex64", p0)][0] * (n / p0) ** 2, float("nan"), 0, "")
                est = True
            if r is None:
                cells.append("")
                continue
            cell = ("~" if est else "") + fmt_us(r[0])
            if cand != "numpy" and base:
                cell += f" ({r[0] / base[0]:.2g})"
            cells.append(cell)
        out.append(f"| {n} | {kind(n)} | " + " | ".join(cells) + " |")
    out.append("\nRelative L2 error against NumPy's complex128 transform of the same input:\n")
    out.append("| n | " + " | ".join(c[2] for c in cols) + " |")
    out.append("|---:|" + "---:|" * len(cols))
    for n in sizes:
        cells = []
        for cand, dtype, _ in cols:
            r = rows.get((cand, dtype, n))
            cells.append("" if r is None else f"{r[1]:.1e}")
        out.append(f"| {n} | " + " | ".join(cells) + " |")
    out.append("\nHalide: JIT compile time per n (lowering and LLVM, milliseconds) and the plan:\n")
    out.append("| n | c64 | c64 parallel | c128 | stages |")
    out.append("|---:|---:|---:|---:|:---|")
    for n in sizes:
        h = [rows.get((c, d, n)) for c, d in (("halide64", "complex64"), ("halide64par", "complex64"),
                                             ("halide128", "complex128"))]
        if not any(h):
            continue
        method = next(r[3] for r in h if r)
        out.append(f"| {n} | " + " | ".join("" if r is None else f"{r[2]:.0f}" for r in h) + f" | {method} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
