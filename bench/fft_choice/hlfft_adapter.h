/* Candidate (d): halua's own C FFT (engine/host/hl_fft.c) through its entry point hl_fft_into,
 * linked from a built halua_core.so (bench/fft_choice/run finds it). Each call plans and
 * transforms, as an eager hl.fft call does, so its time includes planning (like NumPy's). */
#pragma once
extern "C" {
#include "hl_array.h"
#include "hl_error.h"
#include "hl_fft.h"
}
#include <cstring>
#include <stdexcept>
#include <string>

template <typename T>
class HaluaFFT {
 public:
  explicit HaluaFFT(int n) : n_(n) {
    int64_t shape[2] = {n, 2};
    hl_dtype t = sizeof(T) == 4 ? HL_FLOAT32 : HL_FLOAT64;
    if (hl_array_alloc(&x_, t, 2, shape) || hl_array_alloc(&y_, t, 2, shape))
      throw std::runtime_error("hl_fft: cannot allocate");
  }
  ~HaluaFFT() {
    hl_array_release(&x_);
    hl_array_release(&y_);
  }
  /* the input is copied in once (load); run() is the transform alone */
  void load(const T *x) { memcpy(hl_array_data(&x_), x, sizeof(T) * 2 * (size_t)n_); }
  void run() {
    if (hl_fft_into(&x_, 0, 0, &y_, 0, 0)) throw std::runtime_error(std::string("hl_fft_into failed"));
  }
  void result(T *y) const { memcpy(y, hl_array_data(&y_), sizeof(T) * 2 * (size_t)n_); }

 private:
  int n_;
  hl_array x_{}, y_{};
};
