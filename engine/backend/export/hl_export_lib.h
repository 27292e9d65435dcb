/* Internal to the backend: the library hl.export writes (engine/runtime/hl_export.h). */
#ifndef HL_EXPORT_LIB_H
#define HL_EXPORT_LIB_H
extern "C" {
#include "hl_ir.h"
#include "hl_array.h"
}

/* See hl_kernel_export (hl_backend.h); call with the compiler lock held. 0, or -1 with hl_error. */
int hl_export_library(const hl_graph *g, int ncaptures, const hl_array *captures, const char *dir, const char *name);
#endif
