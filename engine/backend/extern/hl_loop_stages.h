/* The extern stages of compiled loops take N input buffers, N = 1 .. HL_MAX_LOOP_INPUTS (24): C
 * functions, one per N, that the engine (engine/backend/extern/hl_extern_loop.cpp) and the
 * libraries hl.export writes (export/hl_export_loops.cpp) both define from this one table.
 * HL_LOOP_STAGES(STAGE) expands STAGE(N, P(B a0, .., B aN-1), a0, .., aN-1) for each N, with
 * B and P defined by the includer (B the buffer type, P(...) its arguments as they are). */
#ifndef HL_LOOP_STAGES_H
#define HL_LOOP_STAGES_H

#define HL_LOOP_STAGES(STAGE) \
  STAGE(1, P(B a0), a0) \
  STAGE(2, P(B a0, B a1), a0, a1) \
  STAGE(3, P(B a0, B a1, B a2), a0, a1, a2) \
  STAGE(4, P(B a0, B a1, B a2, B a3), a0, a1, a2, a3) \
  STAGE(5, P(B a0, B a1, B a2, B a3, B a4), a0, a1, a2, a3, a4) \
  STAGE(6, P(B a0, B a1, B a2, B a3, B a4, B a5), a0, a1, a2, a3, a4, a5) \
  STAGE(7, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6), a0, a1, a2, a3, a4, a5, a6) \
  STAGE(8, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7), a0, a1, a2, a3, a4, a5, a6, a7) \
  STAGE(9, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8), a0, a1, a2, a3, a4, a5, a6, a7, a8) \
  STAGE(10, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
  STAGE(11, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
  STAGE(12, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
  STAGE(13, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12) \
  STAGE(14, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13) \
  STAGE(15, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) \
  STAGE(16, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15) \
  STAGE(17, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16) \
  STAGE(18, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17) \
  STAGE(19, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18) \
  STAGE(20, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18, B a19), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19) \
  STAGE(21, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18, B a19, B a20), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20) \
  STAGE(22, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18, B a19, B a20, B a21), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21) \
  STAGE(23, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18, B a19, B a20, B a21, B a22), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22) \
  STAGE(24, P(B a0, B a1, B a2, B a3, B a4, B a5, B a6, B a7, B a8, B a9, B a10, B a11, B a12, B a13, B a14, B a15, B a16, B a17, B a18, B a19, B a20, B a21, B a22, B a23), a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22, a23)

#endif
