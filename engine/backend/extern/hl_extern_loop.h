/* Compiled loops as extern stages of jit pipelines (engine/runtime/hl_loop.h has the driver,
 * reached through the runtime's hooks: hl_backend.h). */
#ifndef HL_LOOP_EXTERN_H
#define HL_LOOP_EXTERN_H
#include <Halide.h>
extern "C" {
#include "hl_hooks.h"
}

/* A JIT module exporting hl_stage_loop_1 .. hl_stage_loop_<HL_MAX_LOOP_INPUTS>, and the same
 * hl_stage_loop_sym_N of polymorphic programs, to the pipelines. */
Halide::Internal::JITModule hl_loop_exports();
#endif
