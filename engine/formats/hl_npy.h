/* NumPy's .npy format: writes version 1.0 exactly as numpy.save does (same header text, same
 * padding, so the files are byte-identical); reads versions 1.0, 2.0 and 3.0, little- or
 * big-endian, C or Fortran order, into a new contiguous host array.
 * `what` names the stream in error messages ("load: /tmp/x.npy", "loadz: a.npz: member b.npy"). */
#ifndef HL_NPY_H
#define HL_NPY_H
#include "hl_array.h"
#include "hl_stream.h"

/* The header numpy.save writes for a C-order array: magic, version, length and the dictionary
 * padded with spaces to a multiple of 64 bytes, ending in '\n'. buf needs HL_NPY_HEADER_MAX
 * bytes; returns the header's length. */
#define HL_NPY_HEADER_MAX 512
size_t hl_npy_header(hl_dtype dtype, int ndim, const int64_t *shape, char *buf);

/* The header's '<f4' style descriptor of a dtype, in this machine's byte order. */
const char *hl_npy_descr(hl_dtype dtype);

/* Whether `a` can be written as it is: contiguous on the host (the caller makes it so:
 * hl_host_contiguous in the runtime) and of a dtype NumPy has; else an error under `op`. */
int hl_npy_check_writable(const char *op, const hl_array *a);

/* Write `a` (host, contiguous: see above) as a .npy stream. */
int hl_npy_write(hl_sink *s, const hl_array *a);
/* Read one .npy stream into a new array; on failure nothing is allocated. Bytes after the
 * array's data are left unread, as NumPy leaves them. */
int hl_npy_read(hl_source *s, const char *what, hl_array *out);

/* Whole files: hl.save and hl.load. */
int hl_npy_save(const char *path, const hl_array *a);   /* a: as for hl_npy_write */
int hl_npy_load(const char *path, hl_array *out);
#endif
