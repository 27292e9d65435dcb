#include "hl_npz.h"
#include "hl_error.h"
#include "hl_npy.h"
#include "hl_zip.h"
#include <stdlib.h>
#include <string.h>

int hl_npz_save(const char *path, int n, const char *const *names, const hl_array *const *arrays) {
  /* every array checked first: an array that cannot be saved leaves no file behind */
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) rc = hl_npy_check_writable("savez", arrays[i]);
  hl_zip_writer w;
  if (!rc) rc = hl_zip_writer_open(&w, "savez", path);
  for (int i = 0; i < n && !rc; i++) {
    size_t len = strlen(names[i]);
    char *member = malloc(len + 5);
    if (!member) {
      rc = hl_error("savez: out of memory");
      hl_zip_writer_abort(&w);
      break;
    }
    memcpy(member, names[i], len);
    memcpy(member + len, ".npy", 5);
    char hdr[HL_NPY_HEADER_MAX];
    const hl_array *a = arrays[i];
    size_t hlen = hl_npy_header(a->dtype, a->ndim, a->shape, hdr);
    size_t nbytes = (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype);
    const void *parts[2] = {hdr, nbytes ? hl_array_data(a) : hdr};
    size_t lens[2] = {hlen, nbytes};
    rc = hl_zip_writer_add(&w, member, 2, parts, lens);
    free(member);
    if (rc) hl_zip_writer_abort(&w);
  }
  if (!rc) rc = hl_zip_writer_close(&w);
  return rc;
}

void hl_npz_entries_free(hl_npz_entry *entries, int n) {
  if (!entries) return;
  for (int i = 0; i < n; i++) {
    free(entries[i].name);
    hl_array_release(&entries[i].array);
  }
  free(entries);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !memcmp(s + n - k, suffix, k);
}

/* One member's array. When the .npy reader fails, the rest of the member is still read: a CRC
 * mismatch or broken compressed data explains the failure better than what the bad bytes caused. */
static int read_member(hl_zip_reader *r, int i, const char *what, hl_array *out) {
  hl_zip_stream *s;
  if (hl_zip_stream_open(r, i, what, &s)) return -1;
  int rc = hl_npy_read(hl_zip_stream_source(s), what, out);
  if (rc) {
    char first[1024];
    snprintf(first, sizeof first, "%s", hl_error_message());
    if (hl_zip_stream_finish(s) == 0) hl_error("%s", first + (strncmp(first, "halua: ", 7) ? 0 : 7));
  } else if (hl_zip_stream_finish(s)) {
    hl_array_release(out);
    rc = -1;
  }
  hl_zip_stream_close(s);
  return rc;
}

int hl_npz_load(const char *path, hl_npz_entry **entries, int *count) {
  hl_zip_reader r;
  if (hl_zip_reader_open(&r, "loadz", path)) return -1;
  hl_npz_entry *e = calloc(r.n ? (size_t)r.n : 1, sizeof *e);
  if (!e) {
    hl_zip_reader_close(&r);
    return hl_error("loadz: out of memory");
  }
  int n = 0, rc = 0;
  for (int i = 0; i < r.n && !rc; i++) {
    const char *name = r.members[i].name;
    char what[1024];
    if (snprintf(what, sizeof what, "%s: member %s", r.what, name) >= (int)sizeof what) what[sizeof what - 1] = 0;
    if (!ends_with(name, ".npy")) {
      rc = hl_error("%s: not a .npy member (an .npz file holds only name.npy members)", what);
      break;
    }
    size_t len = strlen(name) - 4;
    for (int k = 0; k < n && !rc; k++)
      if (strlen(e[k].name) == len && !memcmp(e[k].name, name, len)) rc = hl_error("%s: the archive holds it twice", what);
    if (rc) break;
    if (!(e[n].name = malloc(len + 1))) {
      rc = hl_error("loadz: out of memory");
      break;
    }
    memcpy(e[n].name, name, len);
    e[n].name[len] = 0;
    if (read_member(&r, i, what, &e[n].array)) {
      free(e[n].name);
      e[n].name = NULL;
      rc = -1;
      break;
    }
    n++;
  }
  hl_zip_reader_close(&r);
  if (rc) {
    hl_npz_entries_free(e, n);
    return -1;
  }
  *entries = e;
  *count = n;
  return 0;
}
