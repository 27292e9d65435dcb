/* The host extern stages that need nothing but their own inputs (sort, LAPACK, transposes),
 * exported to JIT-compiled pipelines. The stages themselves (hl_extern_sort.cpp,
 * hl_extern_linalg.cpp, hl_extern_transpose.cpp) use only Halide's runtime header, so that
 * hl.export can link them into standalone libraries (libhalua_export.a). */
#ifndef HL_EXTERN_JIT_H
#define HL_EXTERN_JIT_H
#include <Halide.h>

Halide::Internal::JITModule hl_sort_exports();
Halide::Internal::JITModule hl_linalg_exports();
Halide::Internal::JITModule hl_transpose_exports();
/* hl.dist's collectives (hl_extern_dist.cpp): JIT pipelines only, hl.export refuses them */
Halide::Internal::JITModule hl_dist_exports();
#endif
