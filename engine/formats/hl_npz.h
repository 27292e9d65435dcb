/* NumPy's .npz files: a zip archive of .npy members, one per array, "name.npy" for `name`.
 * Written stored (uncompressed) as numpy.savez writes them, byte for byte; read stored or
 * deflated (numpy.savez_compressed). */
#ifndef HL_NPZ_H
#define HL_NPZ_H
#include "hl_array.h"

typedef struct {
  char *name;   /* the member's name without ".npy" */
  hl_array array;
} hl_npz_entry;

/* hl.savez: the arrays (contiguous on the host: hl_npy_check_writable) in this order, as
 * "<name>.npy" members. */
int hl_npz_save(const char *path, int n, const char *const *names, const hl_array *const *arrays);
/* hl.loadz: every member, in the archive's order; all or nothing. */
int hl_npz_load(const char *path, hl_npz_entry **entries, int *n);
void hl_npz_entries_free(hl_npz_entry *entries, int n);
#endif
