#include "hl_extern_jit.h"
#include "hl_extern_dist.h"
#include "hl_extern_linalg.h"
#include "hl_extern_sort.h"
#include "hl_extern_fft.h"
#include "hl_extern_transpose.h"
#include <mutex>

using namespace Halide;

Internal::JITModule hl_sort_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] {
    m.add_extern_for_export("hl_stage_sort", ExternCFunction(&hl_stage_sort));
    m.add_extern_for_export("hl_stage_fft", ExternCFunction(&hl_stage_fft));
    m.add_extern_for_export("hl_stage_fft_real", ExternCFunction(&hl_stage_fft_real));
    m.add_extern_for_export("hl_stage_fft_real_inverse", ExternCFunction(&hl_stage_fft_real_inverse));
  });
  return m;
}

Internal::JITModule hl_linalg_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] {
    m.add_extern_for_export("hl_stage_linalg_solve", ExternCFunction(&hl_stage_linalg_solve));
    m.add_extern_for_export("hl_stage_linalg_cholesky", ExternCFunction(&hl_stage_linalg_cholesky));
    m.add_extern_for_export("hl_stage_linalg_decomp", ExternCFunction(&hl_stage_linalg_decomp));
    m.add_extern_for_export("hl_stage_linalg_solve_triangular", ExternCFunction(&hl_stage_linalg_solve_triangular));
  });
  return m;
}

Internal::JITModule hl_transpose_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_stage_cpu_transpose", ExternCFunction(&hl_stage_cpu_transpose)); });
  return m;
}

Internal::JITModule hl_dist_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_stage_dist", ExternCFunction(&hl_stage_dist)); });
  return m;
}
