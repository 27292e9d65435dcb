/* Zip writing for .npz: stored members laid out as Python's zipfile lays out numpy.savez's (it
 * opens every member with force_zip64=True), so that the bytes are the same. The layout is that of
 * current Pythons (CPython's fix for gh-103861: 3.12, 3.13, and 3.11 from a bug-fix release on;
 * 3.11.7 has it, 3.11.2 not): a member opened with force_zip64 has 0xffffffff for its sizes in
 * the local header, the sizes only in the zip64 extra field, and version 4.5 in its local header
 * and directory entry. Before the fix the local header kept the sizes beside a zip64 field and
 * said version 2.0, which the issue calls an invalid zip file. */
#include <zlib.h>
#include "hl_error.h"
#include "hl_zip.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct hl_zip_written {
  char *name;
  uint32_t crc;
  uint64_t size;
  uint64_t offset;
};

/* zipfile's ZIP64_LIMIT: sizes and offsets above it move into a zip64 extra field */
static const uint64_t ZIP64_LIMIT = ((uint64_t)1 << 31) - 1;
enum {
  ZIP64_VERSION = 45,
  DOS_DATE = (0 << 9) | (1 << 5) | 1, DOS_TIME = 0,   /* zipfile.ZipInfo's default 1980-01-01 00:00:00 */
  UNIX = 3,
  UTF8_NAME = 0x800,
};
static const uint32_t EXTERNAL_ATTR = 0600u << 16;   /* -rw------- */

typedef struct {
  unsigned char b[128];
  size_t n;
} buf;

static void u16(buf *o, unsigned v) {
  o->b[o->n++] = (unsigned char)(v & 0xff);
  o->b[o->n++] = (unsigned char)((v >> 8) & 0xff);
}
static void u32(buf *o, uint32_t v) {
  for (int k = 0; k < 4; k++) o->b[o->n++] = (unsigned char)((v >> (8 * k)) & 0xff);
}
static void u64(buf *o, uint64_t v) {
  for (int k = 0; k < 8; k++) o->b[o->n++] = (unsigned char)((v >> (8 * k)) & 0xff);
}

static int put(hl_zip_writer *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->f) != n) return hl_error("%s: write error: %s", w->what, strerror(errno));
  w->pos += n;
  return 0;
}

static int name_flags(const char *name) {
  for (const unsigned char *p = (const unsigned char *)name; *p; p++)
    if (*p >= 0x80) return UTF8_NAME;
  return 0;
}

int hl_zip_writer_open(hl_zip_writer *w, const char *op, const char *path) {
  memset(w, 0, sizeof *w);
  if (hl_replace_open(&w->out, op, path)) return -1;
  w->f = w->out.f;
  w->path = path;
  snprintf(w->what, sizeof w->what, "%s: %s", op, path);
  return 0;
}

static void free_members(hl_zip_writer *w) {
  for (int i = 0; i < w->n; i++) free(w->members[i].name);
  free(w->members);
  w->members = NULL;
  w->n = w->cap = 0;
}

int hl_zip_writer_add(hl_zip_writer *w, const char *name, int nparts, const void *const *parts, const size_t *lens) {
  size_t name_len = strlen(name);
  if (name_len > 0xffff) return hl_error("%s: member name too long (%zu bytes)", w->what, name_len);
  if (w->n == w->cap) {
    int cap = w->cap ? w->cap * 2 : 8;
    hl_zip_written *m = realloc(w->members, (size_t)cap * sizeof *m);
    if (!m) return hl_error("%s: out of memory", w->what);
    w->members = m;
    w->cap = cap;
  }
  uint32_t crc = (uint32_t)crc32_z(0, Z_NULL, 0);
  uint64_t size = 0;
  for (int k = 0; k < nparts; k++) {
    crc = (uint32_t)crc32_z(crc, (const Bytef *)parts[k], lens[k]);
    size += lens[k];
  }
  char *copy = malloc(name_len + 1);
  if (!copy) return hl_error("%s: out of memory", w->what);
  memcpy(copy, name, name_len + 1);
  hl_zip_written *m = &w->members[w->n++];
  *m = (hl_zip_written){.name = copy, .crc = crc, .size = size, .offset = w->pos};

  /* zipfile.ZipInfo.FileHeader(zip64=True): the sizes saturated in the header, given in the extra field */
  buf h = {.n = 0};
  u32(&h, 0x04034b50);
  u16(&h, ZIP64_VERSION);
  u16(&h, (unsigned)name_flags(name));
  u16(&h, 0);   /* stored */
  u16(&h, DOS_TIME);
  u16(&h, DOS_DATE);
  u32(&h, crc);
  u32(&h, 0xffffffffu);
  u32(&h, 0xffffffffu);
  u16(&h, (unsigned)name_len);
  u16(&h, 20);
  buf x = {.n = 0};
  u16(&x, 1);   /* the zip64 extra field: uncompressed and compressed sizes */
  u16(&x, 16);
  u64(&x, size);
  u64(&x, size);
  if (put(w, h.b, h.n) || put(w, name, name_len) || put(w, x.b, x.n)) return -1;
  for (int k = 0; k < nparts; k++)
    if (put(w, parts[k], lens[k])) return -1;
  return 0;
}

static int write_directory(hl_zip_writer *w) {
  uint64_t start = w->pos;
  for (int i = 0; i < w->n; i++) {
    const hl_zip_written *m = &w->members[i];
    size_t name_len = strlen(m->name);
    buf x = {.n = 0};
    int big = m->size > ZIP64_LIMIT, far = m->offset > ZIP64_LIMIT;
    if (big || far) {
      u16(&x, 1);
      u16(&x, (unsigned)(8 * (2 * big + far)));
      if (big) {
        u64(&x, m->size);
        u64(&x, m->size);
      }
      if (far) u64(&x, m->offset);
    }
    unsigned version = ZIP64_VERSION;   /* every member was written with a zip64 local header */
    buf h = {.n = 0};
    u32(&h, 0x02014b50);
    h.b[h.n++] = (unsigned char)version;   /* made by: version, system */
    h.b[h.n++] = UNIX;
    h.b[h.n++] = (unsigned char)version;   /* needed to extract; a reserved byte */
    h.b[h.n++] = 0;
    u16(&h, (unsigned)name_flags(m->name));
    u16(&h, 0);
    u16(&h, DOS_TIME);
    u16(&h, DOS_DATE);
    u32(&h, m->crc);
    u32(&h, big ? 0xffffffffu : (uint32_t)m->size);
    u32(&h, big ? 0xffffffffu : (uint32_t)m->size);
    u16(&h, (unsigned)name_len);
    u16(&h, (unsigned)x.n);
    u16(&h, 0);   /* comment */
    u16(&h, 0);   /* disk */
    u16(&h, 0);   /* internal attributes */
    u32(&h, EXTERNAL_ATTR);
    u32(&h, far ? 0xffffffffu : (uint32_t)m->offset);
    if (put(w, h.b, h.n) || put(w, m->name, name_len) || put(w, x.b, x.n)) return -1;
  }
  uint64_t end = w->pos, count = (uint64_t)w->n, size = end - start;
  if (count > 0xffff || start > ZIP64_LIMIT || size > ZIP64_LIMIT) {
    buf z = {.n = 0};
    u32(&z, 0x06064b50);   /* zip64 end of central directory record */
    u64(&z, 44);
    u16(&z, ZIP64_VERSION);
    u16(&z, ZIP64_VERSION);
    u32(&z, 0);
    u32(&z, 0);
    u64(&z, count);
    u64(&z, count);
    u64(&z, size);
    u64(&z, start);
    u32(&z, 0x07064b50);   /* its locator */
    u32(&z, 0);
    u64(&z, end);
    u32(&z, 1);
    if (put(w, z.b, z.n)) return -1;
    if (count > 0xffff) count = 0xffff;
    if (size > 0xffffffffu) size = 0xffffffffu;
    if (start > 0xffffffffu) start = 0xffffffffu;
  }
  buf e = {.n = 0};
  u32(&e, 0x06054b50);
  u16(&e, 0);
  u16(&e, 0);
  u16(&e, (unsigned)count);
  u16(&e, (unsigned)count);
  u32(&e, (uint32_t)size);
  u32(&e, (uint32_t)start);
  u16(&e, 0);   /* comment */
  return put(w, e.b, e.n);
}

int hl_zip_writer_close(hl_zip_writer *w) {
  int rc = write_directory(w);
  if (rc) hl_replace_abort(&w->out);   /* the previous file, if any, stays */
  else rc = hl_replace_commit(&w->out, w->what);
  w->f = NULL;
  free_members(w);
  return rc;
}

void hl_zip_writer_abort(hl_zip_writer *w) {
  if (w->f) hl_replace_abort(&w->out);
  w->f = NULL;
  free_members(w);
}
