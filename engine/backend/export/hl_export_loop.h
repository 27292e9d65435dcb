/* Compiled loops in the libraries hl.export writes: one table entry per loop (its body and
 * condition compiled into the library as functions of their own), read by the loop driver that
 * libhalua_export.a links in (hl_export_loops.cpp). The fields are written once, here: the
 * generated entry point declares the same struct from HL_EXPORT_LOOP_FIELDS_TEXT.
 *
 * A descriptor list (inputs, results, caps) is, per array: Halide type code, bits, rank, then the
 * shape in numpy's order. A body's (or condition's) arguments are [i (fori, int32 0-d)] carries
 * [x rows (scan)], then its captures: capture c is loop input src[c], or, where src[c] < 0, the
 * library's constant data[c]. */
#ifndef HL_EXPORT_LOOP_H
#define HL_EXPORT_LOOP_H

#define HL_EXPORT_LOOP_FIELDS                                                               \
  int id, kind; /* the loop's number in its LOOP nodes; 0 fori, 1 while, 2 scan */         \
  long long lo, hi; /* fori: steps lo..hi; scan: hi steps */                                \
  int ncarry, nxs, nys, ninputs, nresults;                                                  \
  int (*body)(void **);                                                                     \
  int (*cond)(void **);                                                                     \
  const int *inputs, *results;                                                              \
  int body_ncaps;                                                                           \
  const int *body_src, *body_caps;                                                          \
  const unsigned char *const *body_data;                                                    \
  int cond_ncaps;                                                                           \
  const int *cond_src, *cond_caps;                                                          \
  const unsigned char *const *cond_data;

#define HL_EXPORT_STR_(...) #__VA_ARGS__
#define HL_EXPORT_STR(...) HL_EXPORT_STR_(__VA_ARGS__)
/* the struct's definition as text, for the generated C */
#define HL_EXPORT_LOOP_FIELDS_TEXT HL_EXPORT_STR(HL_EXPORT_LOOP_FIELDS)

typedef struct hl_export_loop {
  HL_EXPORT_LOOP_FIELDS
} hl_export_loop;

enum { HL_EXPORT_FORI = 0, HL_EXPORT_WHILE = 1, HL_EXPORT_SCAN = 2 };
#endif
