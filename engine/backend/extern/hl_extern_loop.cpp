/* The extern stages of compiled loops (see engine/runtime/hl_loop.h): hl_stage_loop_N takes the
 * program's number of the loop (its slot), the result index, N input buffers and the output
 * buffer; hl_stage_loop_sym_N, a loop of a polymorphic program, also the values of the program's
 * symbols (four, unused ones 0), of which its inputs' and results' extents are forms
 * (engine/runtime/hl_poly.h). */
#include "hl_extern_loop.h"
#include "hl_device.h"
#include "hl_extern_view.h"
#include "hl_loop_stages.h"
#include "hl_symbolic.h"
#include <mutex>

using namespace Halide;

namespace {

/* the stage of result k of the program's loop `slot` (its place among the loops the running
 * program names: hl_eval.h's hl_program_loop_id gives the loop) */
int loop_stage(int slot, int k, const int64_t *sym, int n, halide_buffer_t **in, halide_buffer_t *out) {
  const hl_runtime_hooks *hooks = hl_backend_hooks();
  hl_loop_info info, *l = &info;
  int id = hooks ? hooks->loop_id(slot) : -1;
  if (id < 0 || hooks->loop_info(id, &info) || n != l->ninputs)
    return hl_stage_failed(-1, "loop: internal: a loop stage with an unknown loop or inputs");
  bool query = out->is_bounds_query();
  for (int j = 0; j < n; j++) query = query || in[j]->is_bounds_query();
  if (query) {
    /* every input whole: the loop reads all of each */
    for (int j = 0; j < n; j++) {
      if (!in[j]->is_bounds_query()) continue;
      for (int d = 0; d < in[j]->dimensions; d++) {
        int a = in[j]->dimensions - 1 - d;
        int64_t e = l->input_types[j].shape[a];
        if (sym && l->nsym && hl_sym_size(&l->input_forms[j * HL_MAX_DIMS + a], l->nsym, sym, &e))
          return hl_stage_failed(-1, "loop: internal: an input's extent is no whole number at these sizes");
        in[j]->dim[d].min = 0;
        in[j]->dim[d].extent = (int32_t)e;
      }
    }
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  enum { MAXI = 64 };
  hl_storage st[MAXI + 1];
  hl_array a[MAXI + 1];
  const hl_array *ins[MAXI];
  if (n > MAXI) return hl_stage_failed(-1, "loop: internal: too many inputs");
  /* a loop of a CUDA pipeline is a CUDA stage: its body runs there, on buffers in device memory
   * (Halide leaves an input a host stage produced on the host; out is allocated there) */
  int device = l->device;
  if (device == HL_DEVICE_CUDA) {
    for (int j = 0; j < n; j++)
      if (in[j]->number_of_elements() > 0 && hl_buffer_to_device(in[j]))
        return hl_stage_failed(-1, "loop: copying an input of the loop to cuda failed");
    if (out->number_of_elements() > 0 && !out->device) return hl_stage_failed(-1, "loop: internal: no device memory for the result");
  }
  for (int j = 0; j < n; j++) {
    hl_view_of_buffer_on(device, in[j], &st[j], &a[j]);
    a[j].dtype = l->input_types[j].dtype;   /* a uint16 buffer may hold float16 or bfloat16 */
    ins[j] = &a[j];
  }
  hl_view_of_buffer_on(device, out, &st[n], &a[n]);
  a[n].dtype = l->result_types[k].dtype;
  int64_t mins[HL_MAX_DIMS];
  for (int d = 0; d < out->dimensions; d++) mins[out->dimensions - 1 - d] = out->dim[d].min;
  return hooks->loop_result(id, k, n, ins, sym, mins, &a[n]) ? hl_stage_failed(-1, nullptr) : 0;
}

static_assert(HL_MAX_SYMS == 4, "hl_stage_loop_sym_N takes four symbols");
static_assert(HL_MAX_LOOP_INPUTS == 24, "hl_loop_stages.h has a stage for 1 .. 24 inputs");

}  // namespace

/* hl_stage_loop_N(slot, k, N input buffers, the output buffer) and hl_stage_loop_sym_N(slot, k,
 * four symbols, the buffers): C functions, which pipelines loaded from the disk cache find by
 * name in the engine library (hl_aot.cpp) */
#define B halide_buffer_t *
#define P(...) __VA_ARGS__
#define STAGE(N, PARAMS, ...)                                                                   \
  extern "C" int hl_stage_loop_##N(int slot, int k, PARAMS, B out) {                            \
    B in[] = {__VA_ARGS__};                                                                     \
    return loop_stage(slot, k, nullptr, N, in, out);                                            \
  }                                                                                             \
  extern "C" int hl_stage_loop_sym_##N(int slot, int k, int s0, int s1, int s2, int s3, PARAMS, B out) { \
    B in[] = {__VA_ARGS__};                                                                     \
    const int64_t sym[HL_MAX_SYMS] = {s0, s1, s2, s3};                                          \
    return loop_stage(slot, k, sym, N, in, out);                                                \
  }
HL_LOOP_STAGES(STAGE)
#undef STAGE

Internal::JITModule hl_loop_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] {
#define STAGE(N, PARAMS, ...)                                                                   \
  m.add_extern_for_export("hl_stage_loop_" #N, ExternCFunction(&hl_stage_loop_##N));           \
  m.add_extern_for_export("hl_stage_loop_sym_" #N, ExternCFunction(&hl_stage_loop_sym_##N));
    HL_LOOP_STAGES(STAGE)
#undef STAGE
  });
  return m;
}
