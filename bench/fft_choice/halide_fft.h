/* Candidate (b): a complex-to-complex forward FFT written as Halide stages, JIT-compiled per
 * length n. Stockham autosort (no bit-reversal pass): stage j with stride s and radix r reads
 * x[q + s(p + k m)] and writes y[q + s(r p + c)] = w^(p c) * sum_k x[q + s(p + k m)] e^(-2 pi i k c / r),
 * with m = n / (s r) and w = e^(-2 pi i s / n); the last stage leaves natural order.
 *
 * Each stage is a Func Y(qq, p) of extents (s r, m) whose flat index is qq + s r p: the next
 * stage (stride s r) then reads it at (q, p + k m) with no division, and the stage's own q and c
 * (qq mod s, qq / s) become loop variables once qq is split by s. Radices 4, 2, 3 and 5 cover
 * n = 2^a 3^b 5^c; any other n goes through Bluestein's chirp-z: two FFTs of a power of two
 * M >= 2n - 1 in the same pipeline, with the filter's transform computed at plan time.
 *
 * Complex data in and out is interleaved (re, im), as NumPy and halua store it; between stages
 * it is planar (a Tuple), which vectorises without shuffles. */
#pragma once
#include "Halide.h"

#include <chrono>
#include <cmath>
#include <complex>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fftchoice {

using namespace Halide;

struct Cx {
  Expr re, im;
};
static inline Cx cadd(const Cx &a, const Cx &b) { return {a.re + b.re, a.im + b.im}; }
static inline Cx csub(const Cx &a, const Cx &b) { return {a.re - b.re, a.im - b.im}; }
static inline Cx cmul(const Cx &a, const Cx &b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
static inline Cx conj(const Cx &a) { return {a.re, -a.im}; }
static inline Cx mul_minus_i(const Cx &a) { return {a.im, -a.re}; }   // a * (-i)

/* the radices, largest first: 4s, then 5, 3, and one 2 when the power of two is odd;
 * empty when n has another prime factor */
static std::vector<int> radices(int n) {
  std::vector<int> r;
  while (n % 4 == 0) { r.push_back(4); n /= 4; }
  while (n % 5 == 0) { r.push_back(5); n /= 5; }
  while (n % 3 == 0) { r.push_back(3); n /= 3; }
  if (n % 2 == 0) { r.push_back(2); n /= 2; }
  if (n != 1) r.clear();
  return r;
}

/* reads the flat index q + s P of the previous stage (s is the reading stage's stride) */
using Source = std::function<Cx(Expr q, Expr P)>;

template <typename T>
class HalideFFT {
 public:
  /* threads: 1 keeps every stage serial; more lets large stages run parallel loops
   * (Halide's thread pool size itself comes from HL_NUM_THREADS) */
  HalideFFT(int n, bool parallel) : n_(n), parallel_(parallel) {
    auto t0 = std::chrono::steady_clock::now();
    target_ = get_host_target()
                  .with_feature(Target::JIT)
                  .with_feature(Target::NoAsserts)
                  .with_feature(Target::NoBoundsQuery)
                  .with_feature(Target::DisableLLVMLoopOpt);
    if (getenv("FFT_CHOICE_PROFILE")) target_ = target_.with_feature(Target::Profile);   // per-stage times
    V_ = target_.natural_vector_size<T>();
    in_ = ImageParam(type_of<T>(), 2, "in");
    in_.dim(0).set_bounds(0, 2).dim(1).set_bounds(0, n).set_stride(2);
    Var ri("ri"), i("i");
    Func out("out");
    std::vector<int> rad = radices(n);
    if (!rad.empty()) {
      Source src = [this](Expr, Expr P) { return Cx{in_(0, P), in_(1, P)}; };
      Func y = transform(n, rad, src, "a");
      out(ri, i) = mux(ri, {y(i, 0)[0], y(i, 0)[1]});
      method_ = "Stockham radix";
      for (int r : rad) method_ += " " + std::to_string(r);
    } else {
      bluestein(out, ri, i);
    }
    out.output_buffer().dim(0).set_bounds(0, 2).dim(1).set_bounds(0, n).set_stride(2);
    out.bound(ri, 0, 2).reorder(ri, i).unroll(ri).vectorize(i, V_);
    if (parallel_ && n >= kParallelMin) out.parallel(i, std::max(1, n / V_ / 16), TailStrategy::GuardWithIf);
    std::vector<Argument> args = {in_};
    for (auto &t : tables_) args.push_back(t.param);
    Module m = Pipeline(out).compile_to_module(args, "fft_" + std::to_string(n), target_);
    module_ = Internal::JITModule(m, m.get_function_by_name("fft_" + std::to_string(n)), {});
    entry_ = module_.argv_function();
    compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }

  /* one transform of n interleaved complex values */
  void run(const T *x, T *y) {
    halide_dimension_t dx[2] = {{0, 2, 1}, {0, n_, 2}}, dy[2] = {{0, 2, 1}, {0, n_, 2}};
    halide_buffer_t bx = {}, by = {};
    bx.host = (uint8_t *)x;
    bx.type = type_of<T>();
    bx.dimensions = 2;
    bx.dim = dx;
    by.host = (uint8_t *)y;
    by.type = type_of<T>();
    by.dimensions = 2;
    by.dim = dy;
    std::vector<const void *> argv = {&bx};
    for (auto &t : tables_) argv.push_back(t.data.raw_buffer());
    argv.push_back(&by);
    int rc = entry_(argv.data());
    if (rc != 0) throw std::runtime_error("halide fft: pipeline failed");
  }

  double compile_ms = 0;
  const std::string &method() const { return method_; }

 private:
  static constexpr int kParallelMin = 1 << 15;   // below this a parallel loop costs more than it gives
  /* (parallel task splits guard their tail: at lengths that are not powers of two a task size
   * seldom divides its loop, and a split that shifts inwards would read out of bounds) */

  /* the stages of one transform of length len, reading src; returns the last stage, whose
   * (i, 0) is output i */
  Func transform(int len, const std::vector<int> &rad, Source src, const std::string &tag) {
    int s = 1;
    Func y;
    for (size_t j = 0; j < rad.size(); j++) {
      int r = rad[j];
      bool next_vec_p = j + 1 < rad.size() && s * r < V_;
      y = stage(len, s, r, src, next_vec_p, tag + std::to_string(j));
      Func prev = y;
      src = [prev](Expr q, Expr P) { return Cx{prev(q, P)[0], prev(q, P)[1]}; };
      s *= r;
    }
    return y;
  }

  Func stage(int len, int s, int r, const Source &src, bool next_vec_p, const std::string &name) {
    int m = len / (s * r);
    Var qq("qq"), p("p");
    Expr q = s == 1 ? Expr(0) : qq % s, c = s == 1 ? Expr(qq) : qq / s;
    std::vector<Cx> x(r);
    for (int k = 0; k < r; k++) x[k] = src(q, p + k * m);
    std::vector<Cx> y = butterfly(x, r);
    /* twiddles w^(p c), computed at plan time (as every candidate's plan does), p fastest */
    Buffer<T> twr(m, r), twi(m, r);
    for (int cc = 0; cc < r; cc++)
      for (int pp = 0; pp < m; pp++) {
        /* the angle's integer part reduced mod len first: exact at any length */
        long e = ((long)pp * cc * s) % len;
        double a = -2.0 * M_PI * (double)e / (double)len;
        twr(pp, cc) = (T)std::cos(a);
        twi(pp, cc) = (T)std::sin(a);
      }
    ImageParam tr = table(twr), ti = table(twi);
    for (int cc = 1; cc < r; cc++) y[cc] = cmul(y[cc], Cx{tr(p, cc), ti(p, cc)});
    Expr re = y[r - 1].re, im = y[r - 1].im;
    for (int cc = r - 2; cc >= 0; cc--) {
      re = select(c == cc, y[cc].re, re);
      im = select(c == cc, y[cc].im, im);
    }
    Func Y("stage_" + name);
    Y(qq, p) = Tuple(re, im);
    Y.bound(qq, 0, s * r).bound(p, 0, m).compute_root();
    /* once qq splits into (c, q), q and c are loop variables: the selects fold per unrolled c */
    Var co("co"), qi("qi"), po("po"), pv("pv"), qo("qo"), qv("qv");
    bool big = parallel_ && len >= kParallelMin;
    if (s >= V_) {
      /* vectors along q: every load of the previous stage and every store is dense */
      Y.split(qq, co, qi, s).split(qi, qo, qv, V_).vectorize(qv).unroll(co).reorder(qv, co, qo, p);
      if (big) {
        if (m >= 16) Y.parallel(p, std::max(1, m / 16), TailStrategy::GuardWithIf);
        else Y.parallel(qo, std::max(1, s / V_ / 16), TailStrategy::GuardWithIf);
      }
    } else if (m >= V_) {
      /* early stages (short strides): vectors along p */
      if (s == 1) Y.unroll(qq).split(p, po, pv, V_).vectorize(pv).reorder(pv, qq, po);
      else Y.split(qq, co, qi, s).unroll(co).unroll(qi).split(p, po, pv, V_).vectorize(pv).reorder(pv, qi, co, po);
      if (big) Y.parallel(po, std::max(1, m / V_ / 16), TailStrategy::GuardWithIf);
    }
    /* the next stage vectorises along p too: store p fastest for it */
    if (next_vec_p) Y.reorder_storage(p, qq);
    return Y;
  }

  /* the length-r DFT of x (forward) */
  std::vector<Cx> butterfly(const std::vector<Cx> &x, int r) {
    if (r == 2) return {cadd(x[0], x[1]), csub(x[0], x[1])};
    if (r == 4) {
      Cx a0 = cadd(x[0], x[2]), a1 = csub(x[0], x[2]), a2 = cadd(x[1], x[3]), a3 = mul_minus_i(csub(x[1], x[3]));
      return {cadd(a0, a2), cadd(a1, a3), csub(a0, a2), csub(a1, a3)};
    }
    /* 3 and 5: the direct sum with constant roots (r^2 multiply-adds, as small as it gets here) */
    std::vector<Cx> y(r);
    for (int c = 0; c < r; c++) {
      Cx acc = x[0];
      for (int k = 1; k < r; k++) {
        int e = (k * c) % r;
        if (e == 0) { acc = cadd(acc, x[k]); continue; }
        double a = -2.0 * M_PI * e / r;
        acc = cadd(acc, cmul(x[k], Cx{Expr((T)std::cos(a)), Expr((T)std::sin(a))}));
      }
      y[c] = acc;
    }
    return y;
  }

  /* Bluestein: X_k = w_k conj(FFT_M(conj(FFT_M(a) B / M)))_k with a_j = x_j w_j (j < n, else 0),
   * w_j = e^(-pi i j^2 / n), and B the transform of the filter conj(w) laid out circularly */
  void bluestein(Func &out, Var ri, Var i) {
    int n = n_, M = 1;
    while (M < 2 * n - 1) M *= 2;
    std::vector<std::complex<double>> w(n), b(M, 0.0);
    for (int j = 0; j < n; j++) {
      long e = ((long)j * j) % (2L * n);   // j^2 mod 2n: the chirp's angle stays exact
      w[j] = std::polar(1.0, -M_PI * (double)e / (double)n);
    }
    for (int j = 0; j < n; j++) {
      b[j] = std::conj(w[j]);
      if (j) b[M - j] = std::conj(w[j]);
    }
    fft_double(b);
    Buffer<T> wr(n), wi(n), Br(M), Bi(M);
    for (int j = 0; j < n; j++) { wr(j) = (T)w[j].real(); wi(j) = (T)w[j].imag(); }
    for (int j = 0; j < M; j++) { Br(j) = (T)(b[j].real() / M); Bi(j) = (T)(b[j].imag() / M); }
    ImageParam wr_ = table(wr), wi_ = table(wi), Br_ = table(Br), Bi_ = table(Bi);
    std::vector<int> rad = radices(M);
    Source a = [=](Expr, Expr P) {
      Expr Pc = min(P, n - 1);
      Cx v = cmul(Cx{in_(0, Pc), in_(1, Pc)}, Cx{wr_(Pc), wi_(Pc)});
      return Cx{select(P < n, v.re, Expr(T(0))), select(P < n, v.im, Expr(T(0)))};
    };
    Func A = transform(M, rad, a, "a");
    Source c = [=](Expr, Expr P) { return conj(cmul(Cx{A(P, 0)[0], A(P, 0)[1]}, Cx{Br_(P), Bi_(P)})); };
    Func D = transform(M, rad, c, "d");
    Cx X = cmul(Cx{wr_(i), wi_(i)}, conj(Cx{D(i, 0)[0], D(i, 0)[1]}));
    out(ri, i) = mux(ri, {X.re, X.im});
    method_ = "Bluestein, 2 x M=" + std::to_string(M);
  }

  /* plan-time only: an in-place radix-2 FFT in double for Bluestein's filter (M a power of two) */
  static void fft_double(std::vector<std::complex<double>> &a) {
    size_t N = a.size();
    for (size_t i = 1, j = 0; i < N; i++) {
      size_t bit = N >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) std::swap(a[i], a[j]);
    }
    for (size_t len = 2; len <= N; len <<= 1) {
      for (size_t i = 0; i < N; i += len)
        for (size_t k = 0; k < len / 2; k++) {
          std::complex<double> t = std::polar(1.0, -2.0 * M_PI * (double)k / (double)len) * a[i + k + len / 2];
          a[i + k + len / 2] = a[i + k] - t;
          a[i + k] += t;
        }
    }
  }

  int n_;
  bool parallel_;
  int V_ = 8;
  Target target_;
  ImageParam in_;
  Internal::JITModule module_;
  Internal::JITModule::argv_wrapper entry_ = nullptr;
  std::string method_;
  /* plan-time tables (twiddles, chirps) are pipeline inputs: Buffers named in a definition
   * would be compiled into the code as constants, megabytes of them at large n */
  struct Table {
    ImageParam param;
    Buffer<T> data;
  };
  std::vector<Table> tables_;
  ImageParam table(const Buffer<T> &b) {
    ImageParam p(type_of<T>(), b.dimensions(), "table" + std::to_string(tables_.size()));
    tables_.push_back({p, b});
    return p;
  }
};

}  // namespace fftchoice
