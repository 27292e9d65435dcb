/* Zip reading for .npz: the end of central directory record (zip64's too), the central
 * directory, and one member at a time as a stream, inflated with zlib when deflated
 * (numpy.savez_compressed), its CRC-32 and size checked at the end. */
#include <zlib.h>
#include "hl_error.h"
#include "hl_zip.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

enum { EOCD_SIZE = 22, EOCD64_SIZE = 56, LOCATOR_SIZE = 20, CENTRAL_SIZE = 46, LOCAL_SIZE = 30, MAX_COMMENT = 0xffff };
enum { STORED = 0, DEFLATED = 8, ENCRYPTED = 1 };

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* read exactly n bytes at offset; -1 after hl_error naming `what` */
static int read_at(hl_zip_reader *r, const char *what, uint64_t off, void *dst, size_t n, const char *part) {
  if (off > r->file_size || n > r->file_size - off)
    return hl_error("%s: corrupt archive: the %s lies outside the file", what, part);
  if (fseeko(r->f, (off_t)off, SEEK_SET) || fread(dst, 1, n, r->f) != n)
    return hl_error("%s: read error: %s", what, ferror(r->f) ? strerror(errno) : "the file ends early");
  return 0;
}

static void free_members(hl_zip_reader *r) {
  for (int i = 0; i < r->n; i++) free(r->members[i].name);
  free(r->members);
  r->members = NULL;
  r->n = 0;
}

void hl_zip_reader_close(hl_zip_reader *r) {
  free_members(r);
  if (r->f) fclose(r->f);
  r->f = NULL;
}

/* the end of central directory record: the last one whose comment reaches the end of the file */
static int find_end(hl_zip_reader *r, uint64_t *eocd, unsigned char rec[EOCD_SIZE]) {
  uint64_t tail = r->file_size < EOCD_SIZE + MAX_COMMENT ? r->file_size : EOCD_SIZE + MAX_COMMENT;
  unsigned char *buf = malloc(tail ? tail : 1);
  if (!buf) return hl_error("%s: out of memory", r->what);
  if (read_at(r, r->what, r->file_size - tail, buf, (size_t)tail, "end record")) {
    free(buf);
    return -1;
  }
  for (int64_t i = (int64_t)tail - EOCD_SIZE; i >= 0; i--) {
    if (rd32(buf + i) == 0x06054b50 && (uint64_t)i + EOCD_SIZE + rd16(buf + i + 20) <= tail) {
      memcpy(rec, buf + i, EOCD_SIZE);
      *eocd = r->file_size - tail + (uint64_t)i;
      free(buf);
      return 0;
    }
  }
  static const unsigned char npy[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  int is_npy = tail >= 6 && r->file_size == tail && !memcmp(buf, npy, 6);
  free(buf);
  if (r->file_size == 0) return hl_error("%s: empty file (not a .npz archive)", r->what);
  if (!is_npy) {   /* a large .npy: its start is not in the tail */
    unsigned char head[6];
    is_npy = r->file_size >= 6 && !read_at(r, r->what, 0, head, 6, "start") && !memcmp(head, npy, 6);
  }
  if (is_npy) return hl_error("%s: this is a .npy file, not a .npz archive (read it with hl.load)", r->what);
  return hl_error("%s: not a zip archive (no end of central directory record; truncated or not a .npz file)", r->what);
}

/* the zip64 extra field of a central directory entry: 64-bit values for the fields saturated at 0xffffffff */
static int zip64_extra(hl_zip_reader *r, const unsigned char *x, size_t n, hl_zip_member *m, int need_u, int need_c, int need_off) {
  while (n >= 4) {
    unsigned tag = rd16(x), len = rd16(x + 2);
    if (len > n - 4) break;
    if (tag == 1) {
      const unsigned char *v = x + 4;
      size_t want = 8 * (size_t)(need_u + need_c + need_off);
      if (len < want) break;
      if (need_u) m->usize = rd64(v), v += 8;
      if (need_c) m->csize = rd64(v), v += 8;
      if (need_off) m->local_offset = rd64(v);
      return 0;
    }
    x += 4 + len;
    n -= 4 + len;
  }
  if (!(need_u || need_c || need_off)) return 0;
  return hl_error("%s: corrupt archive: member %s lacks its zip64 sizes", r->what, m->name);
}

static int read_directory(hl_zip_reader *r, uint64_t offset, uint64_t size, uint64_t count) {
  if (count > size / CENTRAL_SIZE) return hl_error("%s: corrupt archive: %llu members cannot fit a %llu-byte central directory", r->what, (unsigned long long)count, (unsigned long long)size);
  unsigned char *cd = malloc(size ? size : 1);
  r->members = calloc(count ? count : 1, sizeof *r->members);
  if (!cd || !r->members) {
    free(cd);
    return hl_error("%s: out of memory", r->what);
  }
  if (read_at(r, r->what, offset, cd, (size_t)size, "central directory")) {
    free(cd);
    return -1;
  }
  size_t pos = 0;
  int rc = 0;
  for (uint64_t i = 0; i < count && !rc; i++) {
    const unsigned char *e = cd + pos;
    if (size - pos < CENTRAL_SIZE || rd32(e) != 0x02014b50) {
      rc = hl_error("%s: corrupt archive: bad central directory entry %llu", r->what, (unsigned long long)i + 1);
      break;
    }
    size_t nlen = rd16(e + 28), xlen = rd16(e + 30), clen = rd16(e + 32);
    if (size - pos - CENTRAL_SIZE < nlen + xlen + clen) {
      rc = hl_error("%s: corrupt archive: central directory entry %llu overruns it", r->what, (unsigned long long)i + 1);
      break;
    }
    hl_zip_member *m = &r->members[r->n];
    m->name = malloc(nlen + 1);
    if (!m->name) {
      rc = hl_error("%s: out of memory", r->what);
      break;
    }
    memcpy(m->name, e + CENTRAL_SIZE, nlen);
    m->name[nlen] = 0;
    r->n++;
    if (memchr(m->name, 0, nlen)) {
      rc = hl_error("%s: corrupt archive: a member name holds a NUL byte", r->what);
      break;
    }
    m->flags = rd16(e + 8);
    m->method = rd16(e + 10);
    m->crc = rd32(e + 16);
    m->csize = rd32(e + 20);
    m->usize = rd32(e + 24);
    m->local_offset = rd32(e + 42);
    rc = zip64_extra(r, e + CENTRAL_SIZE + nlen, xlen, m, m->usize == 0xffffffffu, m->csize == 0xffffffffu,
                     m->local_offset == 0xffffffffu);
    pos += CENTRAL_SIZE + nlen + xlen + clen;
  }
  free(cd);
  return rc;
}

int hl_zip_reader_open(hl_zip_reader *r, const char *op, const char *path) {
  memset(r, 0, sizeof *r);
  if (hl_open_read(op, path, &r->f)) return -1;
  r->path = path;
  snprintf(r->what, sizeof r->what, "%s: %s", op, path);
  struct stat st;
  if (fstat(fileno(r->f), &st) || !S_ISREG(st.st_mode)) {
    hl_zip_reader_close(r);
    return hl_error("%s: not a regular file", r->what);
  }
  r->file_size = (uint64_t)st.st_size;
  uint64_t eocd = 0;
  unsigned char e[EOCD_SIZE] = {0};
  if (find_end(r, &eocd, e)) {
    hl_zip_reader_close(r);
    return -1;
  }
  uint64_t count = rd16(e + 10), size = rd32(e + 12), offset = rd32(e + 16);
  int rc = 0;
  if (rd16(e + 4) || rd16(e + 6) || rd16(e + 8) != rd16(e + 10))
    rc = hl_error("%s: multi-disk zip archives are not supported", r->what);
  if (!rc && (count == 0xffff || size == 0xffffffffu || offset == 0xffffffffu) && eocd >= LOCATOR_SIZE) {
    unsigned char loc[LOCATOR_SIZE], z[EOCD64_SIZE];
    if (read_at(r, r->what, eocd - LOCATOR_SIZE, loc, LOCATOR_SIZE, "zip64 locator")) rc = -1;
    else if (rd32(loc) == 0x07064b50) {
      if (read_at(r, r->what, rd64(loc + 8), z, EOCD64_SIZE, "zip64 end record")) rc = -1;
      else if (rd32(z) != 0x06064b50) rc = hl_error("%s: corrupt archive: bad zip64 end record", r->what);
      else {
        count = rd64(z + 32);
        size = rd64(z + 40);
        offset = rd64(z + 48);
      }
    }
  }
  if (!rc && (count > INT32_MAX || offset > r->file_size || size > r->file_size - offset))
    rc = hl_error("%s: corrupt archive: the central directory lies outside the file", r->what);
  if (!rc) rc = read_directory(r, offset, size, count);
  if (rc) hl_zip_reader_close(r);
  return rc;
}

/* ---- member streams ---- */

enum { CHUNK = 1 << 16 };

struct hl_zip_stream {
  hl_source base;
  hl_zip_reader *r;
  const hl_zip_member *m;
  const char *what;
  uint64_t cleft;      /* compressed bytes not yet read from the file */
  uint64_t produced;   /* uncompressed bytes handed out */
  uint32_t crc;
  int inflating, ended;
  z_stream z;
  unsigned char in[CHUNK];
};

static int refill(hl_zip_stream *s) {
  size_t n = s->cleft < CHUNK ? (size_t)s->cleft : CHUNK;
  if (fread(s->in, 1, n, s->r->f) != n)
    return hl_error("%s: read error: %s", s->what, ferror(s->r->f) ? strerror(errno) : "the file ends early");
  s->cleft -= n;
  s->z.next_in = s->in;
  s->z.avail_in = (uInt)n;
  return 0;
}

static int64_t stream_read(hl_source *src, void *dst, size_t n) {
  hl_zip_stream *s = (hl_zip_stream *)src;
  uint64_t left = s->m->usize - s->produced;
  if (n > left) n = (size_t)left;
  if (n == 0) return 0;
  size_t got = 0;
  if (!s->inflating) {
    if (fread(dst, 1, n, s->r->f) != n)
      return hl_error("%s: read error: %s", s->what, ferror(s->r->f) ? strerror(errno) : "the file ends early");
    s->cleft -= n;
    got = n;
  } else {
    unsigned char *out = dst;
    while (got < n && !s->ended) {
      if (s->z.avail_in == 0 && s->cleft && refill(s)) return -1;
      size_t want = n - got < (size_t)1 << 30 ? n - got : (size_t)1 << 30;
      s->z.next_out = out + got;
      s->z.avail_out = (uInt)want;
      int zr = inflate(&s->z, Z_NO_FLUSH);
      got += want - s->z.avail_out;
      if (zr == Z_STREAM_END) s->ended = 1;
      else if (zr == Z_BUF_ERROR && s->z.avail_in == 0 && s->cleft == 0)
        return hl_error("%s: truncated compressed data", s->what);
      else if (zr != Z_OK && zr != Z_BUF_ERROR)
        return hl_error("%s: corrupt compressed data (zlib: %s)", s->what, s->z.msg ? s->z.msg : zError(zr));
    }
  }
  s->crc = (uint32_t)crc32_z(s->crc, (const Bytef *)dst, got);
  s->produced += got;
  return (int64_t)got;
}

static int64_t stream_remaining(hl_source *src) {
  hl_zip_stream *s = (hl_zip_stream *)src;
  return (int64_t)(s->m->usize - s->produced);
}

int hl_zip_stream_open(hl_zip_reader *r, int member, const char *what, hl_zip_stream **out) {
  const hl_zip_member *m = &r->members[member];
  if (m->flags & ENCRYPTED) return hl_error("%s: encrypted members are not supported", what);
  if (m->method != STORED && m->method != DEFLATED)
    return hl_error("%s: compression method %d is not supported (only stored and deflated members are read)", what, m->method);
  if (m->method == STORED && m->csize != m->usize)
    return hl_error("%s: corrupt archive: a stored member's sizes differ (%llu and %llu bytes)", what,
                    (unsigned long long)m->csize, (unsigned long long)m->usize);
  if (m->usize > INT64_MAX) return hl_error("%s: corrupt archive: implausible size", what);
  unsigned char h[LOCAL_SIZE];
  if (read_at(r, what, m->local_offset, h, LOCAL_SIZE, "local header")) return -1;
  if (rd32(h) != 0x04034b50) return hl_error("%s: corrupt archive: bad local header", what);
  /* the name in the member's own header must be the central directory's, as Python's zipfile
   * insists: an archive whose two disagree has been tampered with or damaged */
  size_t name_len = rd16(h + 26), want_len = strlen(m->name);
  char local_name[0x10000];
  if (read_at(r, what, m->local_offset + LOCAL_SIZE, local_name, name_len, "local header's name")) return -1;
  if (name_len != want_len || memcmp(local_name, m->name, name_len))
    return hl_error("%s: corrupt archive: the member's local header names it '%.*s', the central directory '%s'", what,
                    (int)(name_len > 200 ? 200 : name_len), local_name, m->name);
  uint64_t data = m->local_offset + LOCAL_SIZE + rd16(h + 26) + rd16(h + 28);
  if (data > r->file_size || m->csize > r->file_size - data)
    return hl_error("%s: truncated archive: the member's data (%llu bytes at offset %llu) runs past the end of the file (%llu bytes)",
                    what, (unsigned long long)m->csize, (unsigned long long)data, (unsigned long long)r->file_size);
  /* Deflate turns 2 bits into at most 258 bytes (1032 bytes for each compressed byte): a larger
   * recorded size is a damaged or crafted entry, and readers size their buffers by it (a few
   * hundred bytes must not ask for gigabytes). csize is within the file, so this cannot overflow. */
  if (m->method == DEFLATED && m->usize > 1032 * m->csize + 258)
    return hl_error("%s: corrupt archive: %llu deflated bytes cannot hold the recorded %llu bytes", what,
                    (unsigned long long)m->csize, (unsigned long long)m->usize);
  if (fseeko(r->f, (off_t)data, SEEK_SET)) return hl_error("%s: read error: %s", what, strerror(errno));
  hl_zip_stream *s = calloc(1, sizeof *s);
  if (!s) return hl_error("%s: out of memory", what);
  s->base.read = stream_read;
  s->base.remaining = stream_remaining;
  s->r = r;
  s->m = m;
  s->what = what;
  s->cleft = m->csize;
  s->crc = (uint32_t)crc32_z(0, Z_NULL, 0);
  if (m->method == DEFLATED) {
    if (inflateInit2(&s->z, -MAX_WBITS) != Z_OK) {   /* raw deflate, as zip stores it */
      free(s);
      return hl_error("%s: zlib could not start inflating", what);
    }
    s->inflating = 1;
  }
  *out = s;
  return 0;
}

hl_source *hl_zip_stream_source(hl_zip_stream *s) { return &s->base; }

int hl_zip_stream_finish(hl_zip_stream *s) {
  unsigned char scratch[4096];
  int64_t got;
  while ((got = stream_read(&s->base, scratch, sizeof scratch)) > 0) {}
  if (got < 0) return -1;
  if (s->inflating && !s->ended) {
    /* all usize bytes came out: the stream must end here, with no more output */
    unsigned char extra;
    s->z.next_out = &extra;
    s->z.avail_out = 1;
    for (;;) {
      if (s->z.avail_in == 0 && s->cleft && refill(s)) return -1;
      int zr = inflate(&s->z, Z_NO_FLUSH);
      if (zr == Z_STREAM_END && s->z.avail_out == 1) break;
      if (s->z.avail_out == 0) return hl_error("%s: corrupt archive: more data than its recorded size", s->what);
      if (zr == Z_BUF_ERROR && s->z.avail_in == 0 && s->cleft == 0) return hl_error("%s: truncated compressed data", s->what);
      if (zr != Z_OK && zr != Z_BUF_ERROR)
        return hl_error("%s: corrupt compressed data (zlib: %s)", s->what, s->z.msg ? s->z.msg : zError(zr));
    }
  }
  if (s->produced != s->m->usize)
    return hl_error("%s: corrupt archive: the data ends after %llu of its recorded %llu bytes", s->what,
                    (unsigned long long)s->produced, (unsigned long long)s->m->usize);
  if (s->crc != s->m->crc)
    return hl_error("%s: CRC-32 mismatch (recorded %08x, computed %08x): the data is corrupt", s->what, (unsigned)s->m->crc,
                    (unsigned)s->crc);
  return 0;
}

void hl_zip_stream_close(hl_zip_stream *s) {
  if (!s) return;
  if (s->inflating) inflateEnd(&s->z);
  free(s);
}
