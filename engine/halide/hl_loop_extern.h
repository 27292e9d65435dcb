/* Compiled loops as extern stages of jit pipelines (engine/core/hl_loop.h has the driver). */
#ifndef HL_LOOP_EXTERN_H
#define HL_LOOP_EXTERN_H
#include <Halide.h>
extern "C" {
#include "hl_loop.h"
}

/* A JIT module exporting halua_loop_1 .. halua_loop_<HL_MAX_LOOP_INPUTS> to the pipelines. */
Halide::Internal::JITModule hl_loop_exports();
#endif
