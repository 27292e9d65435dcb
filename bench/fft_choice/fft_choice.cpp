/* Times one complex-to-complex forward FFT of length n per candidate and checks its result
 * against NumPy's (complex128) transform of the same input. bench/fft_choice/run builds and
 * drives it; numpy_fft.py writes the inputs and references it reads.
 *
 *   fft_choice DATA_DIR CANDIDATES OUT.tsv
 *
 * DATA_DIR holds sizes.txt (one n a line), x_N.bin and ref_N.bin (interleaved complex128).
 * CANDIDATES is a comma list of: kiss (kissfft, float), halide64 / halide128 (the Halide
 * stages, serial schedule), halide64par (the same with parallel loops at large n), hlfft64 /
 * hlfft128 (halua's C FFT, engine/host/hl_fft.c, when the build found it).
 * Each line of OUT.tsv: candidate, dtype, n, median microseconds per transform, relative L2
 * error against NumPy, plan/compile milliseconds, method. */
#include "halide_fft.h"

extern "C" {
#include <kissfft/kiss_fft.h>
}
#ifdef HAVE_HL_FFT
#include "hlfft_adapter.h"
#endif

#include <malloc.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using clk = std::chrono::steady_clock;

static std::vector<double> read_bin(const std::string &path, size_t count) {
  std::vector<double> v(count);
  FILE *f = fopen(path.c_str(), "rb");
  if (!f || fread(v.data(), sizeof(double), count, f) != count) {
    fprintf(stderr, "fft_choice: cannot read %s\n", path.c_str());
    exit(1);
  }
  fclose(f);
  return v;
}

/* median per-call seconds: each sample runs the call often enough to last ~20 ms, so the
 * clock's resolution and the loop around it are negligible; slow calls (kissfft at a large
 * prime: O(n^2)) get fewer samples, the slowest a single one */
template <typename F>
static double time_call(F &&call) {
  auto t0 = clk::now();
  call();   // warm: first-touch of buffers, caches, thread pool start
  double one = std::chrono::duration<double>(clk::now() - t0).count();
  int samples = one > 5.0 ? 1 : one > 0.5 ? 3 : 7;
  if (one > 5.0) return one;
  long iters = std::max(1L, (long)(0.02 / std::max(one, 1e-9)));
  std::vector<double> t;
  for (int s = 0; s < samples; s++) {
    auto a = clk::now();
    for (long k = 0; k < iters; k++) call();
    t.push_back(std::chrono::duration<double>(clk::now() - a).count() / (double)iters);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

template <typename T>
static double rel_err(const std::vector<T> &y, const std::vector<double> &ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); i++) {
    double d = (double)y[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / den);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: fft_choice DATA_DIR CANDIDATES OUT.tsv\n");
    return 2;
  }
  /* Halide allocates each compute_root stage per call: above glibc's mmap threshold (128 kB)
   * every call would map, fault in and unmap fresh pages (half the time at n = 2^16). halua's
   * engine gives its pipelines a reusing scratch allocator; the heap kept by these two settings
   * is this benchmark's equivalent */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  std::string dir = argv[1], cands = std::string(",") + argv[2] + ",";
  auto want = [&](const char *c) { return cands.find(std::string(",") + c + ",") != std::string::npos; };
  std::ofstream out(argv[3]);
  std::ifstream sizes(dir + "/sizes.txt");
  int n;
  while (sizes >> n) {
    std::vector<double> x = read_bin(dir + "/x_" + std::to_string(n) + ".bin", 2 * (size_t)n);
    std::vector<double> ref = read_bin(dir + "/ref_" + std::to_string(n) + ".bin", 2 * (size_t)n);
    std::vector<float> xf(x.begin(), x.end()), yf(2 * (size_t)n);
    std::vector<double> yd(2 * (size_t)n);
    auto emit = [&](const char *cand, const char *dtype, double sec, double err, double plan_ms,
                    const std::string &method) {
      out << cand << "\t" << dtype << "\t" << n << "\t" << sec * 1e6 << "\t" << err << "\t" << plan_ms
          << "\t" << method << "\n";
      out.flush();
      fprintf(stderr, "%-12s %-10s n=%-8d %12.1f us  err %.2e  plan %.1f ms  (%s)\n", cand, dtype, n,
              sec * 1e6, err, plan_ms, method.c_str());
    };

    if (want("kiss")) {
      auto t0 = clk::now();
      kiss_fft_cfg cfg = kiss_fft_alloc(n, 0, nullptr, nullptr);
      double plan = std::chrono::duration<double, std::milli>(clk::now() - t0).count();
      const kiss_fft_cpx *in = (const kiss_fft_cpx *)xf.data();
      kiss_fft_cpx *o = (kiss_fft_cpx *)yf.data();
      std::fill(yf.begin(), yf.end(), 0.f);
      double sec = time_call([&] { kiss_fft(cfg, in, o); });
      emit("kiss", "complex64", sec, rel_err(yf, ref), plan, "kissfft 131 mixed radix (generic O(p^2) for p>5)");
      kiss_fft_free(cfg);
    }
    for (int par = 0; par < 2; par++) {
      const char *c64 = par ? "halide64par" : "halide64";
      if (want(c64)) {
        fftchoice::HalideFFT<float> h(n, par);
        std::fill(yf.begin(), yf.end(), 0.f);
        double sec = time_call([&] { h.run(xf.data(), yf.data()); });
        emit(c64, "complex64", sec, rel_err(yf, ref), h.compile_ms, h.method());
      }
    }
    if (want("halide128")) {
      fftchoice::HalideFFT<double> h(n, false);
      std::fill(yd.begin(), yd.end(), 0.0);
      double sec = time_call([&] { h.run(x.data(), yd.data()); });
      emit("halide128", "complex128", sec, rel_err(yd, ref), h.compile_ms, h.method());
    }
#ifdef HAVE_HL_FFT
    if (want("hlfft64")) {
      HaluaFFT<float> h(n);
      h.load(xf.data());
      double sec = time_call([&] { h.run(); });
      std::fill(yf.begin(), yf.end(), 0.f);
      h.result(yf.data());
      emit("hlfft64", "complex64", sec, rel_err(yf, ref), 0, "halua hl_fft.c (plans kept between calls)");
    }
    if (want("hlfft128")) {
      HaluaFFT<double> h(n);
      h.load(x.data());
      double sec = time_call([&] { h.run(); });
      std::fill(yd.begin(), yd.end(), 0.0);
      h.result(yd.data());
      emit("hlfft128", "complex128", sec, rel_err(yd, ref), 0, "halua hl_fft.c (plans kept between calls)");
    }
#endif
  }
  return 0;
}
