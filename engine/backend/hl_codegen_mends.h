/* Mends for faults in Halide 14's code generator, applied as custom lowering passes (they run
 * after Halide's last simplification, on the statement its code generator reads). */
#ifndef HL_CODEGEN_MENDS_H
#define HL_CODEGEN_MENDS_H
#include <Halide.h>

void hl_add_codegen_mends(Halide::Pipeline &p);
#endif
