/* .npy: the header is the text of a Python dict, {'descr': '<f4', 'fortran_order': False,
 * 'shape': (3, 4), }, after a magic string, a version and the header's length; the raw elements
 * follow. The writer reproduces numpy.lib.format's text byte for byte; the reader parses the
 * subset of Python literals such headers use. */
#include "hl_npy.h"
#include "hl_error.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const unsigned char MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
enum { ALIGN = 64, GROWTH_DIGITS = 21, MAX_HEADER = 1 << 20 };

static int host_little_endian(void) {
  const uint16_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 1;
}

const char *hl_npy_descr(hl_dtype t) {
  int le = host_little_endian();
  switch (t) {
  case HL_BOOL: return "|b1";
  case HL_UINT8: return "|u1";
  case HL_INT8: return "|i1";
  case HL_FLOAT16: return le ? "<f2" : ">f2";
  case HL_INT32: return le ? "<i4" : ">i4";
  case HL_INT64: return le ? "<i8" : ">i8";
  case HL_FLOAT32: return le ? "<f4" : ">f4";
  case HL_FLOAT64: return le ? "<f8" : ">f8";
  case HL_COMPLEX64: return le ? "<c8" : ">c8";
  case HL_COMPLEX128: return le ? "<c16" : ">c16";
  default: return "?";
  }
}

/* ---- writing ---- */

size_t hl_npy_header(hl_dtype dtype, int ndim, const int64_t *shape, char *buf) {
  /* numpy.lib.format._write_array_header: the dict's repr with sorted keys, spaces leaving room
   * for the first extent to grow to 21 digits, then padding so that the data starts on a
   * 64-byte boundary (a whole 64 more when it already would). */
  char dict[HL_NPY_HEADER_MAX];
  size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", hl_npy_descr(dtype));
  for (int i = 0; i < ndim; i++) n += (size_t)snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)shape[i]);
  n += (size_t)snprintf(dict + n, sizeof dict - n, "%s), }", ndim == 1 ? "," : "");
  if (ndim > 0)
    for (int k = snprintf(NULL, 0, "%lld", (long long)shape[0]); k < GROWTH_DIGITS; k++) dict[n++] = ' ';
  size_t hlen = n + 1;   /* with the final '\n' */
  size_t pad = ALIGN - (sizeof MAGIC + 4 + hlen) % ALIGN;
  size_t len = hlen + pad;
  memcpy(buf, MAGIC, sizeof MAGIC);
  buf[6] = 1;
  buf[7] = 0;
  buf[8] = (char)(len & 0xff);
  buf[9] = (char)(len >> 8);
  memcpy(buf + 10, dict, n);
  memset(buf + 10 + n, ' ', pad);
  buf[10 + n + pad] = '\n';
  return 10 + len;
}

int hl_npy_check_writable(const char *op, const hl_array *a) {
  /* NumPy has no bfloat16: ml_dtypes' arrays save as raw 2-byte voids, which np.load returns
   * as opaque bytes. No file is better than one NumPy misreads. */
  if (a->dtype == HL_BFLOAT16)
    return hl_error("%s: NumPy has no bfloat16 dtype, so a .npy file cannot hold one; save x:astype(\"float32\") "
                    "(exact: every bfloat16 is a float32) and astype(\"bfloat16\") after loading", op);
  if (!a->storage || hl_array_device(a) != 0 || (hl_shape_size(a->ndim, a->shape) != 0 && !hl_array_is_contiguous(a)))
    return hl_error("%s: internal: the array to write is not contiguous on the host", op);
  return 0;
}

int hl_npy_write(hl_sink *s, const hl_array *a) {
  char hdr[HL_NPY_HEADER_MAX];
  size_t n = hl_npy_header(a->dtype, a->ndim, a->shape, hdr);
  if (hl_sink_write(s, hdr, n)) return -1;
  size_t nbytes = (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype);
  return nbytes ? hl_sink_write(s, hl_array_data(a), nbytes) : 0;
}

int hl_npy_save(const char *path, const hl_array *a) {
  if (hl_npy_check_writable("save", a)) return -1;
  hl_replace_file out;
  if (hl_replace_open(&out, "save", path)) return -1;
  char what[1024];
  snprintf(what, sizeof what, "save: %s", path);
  hl_file_sink sink;
  hl_file_sink_init(&sink, out.f, what);
  if (hl_npy_write(&sink.base, a)) {
    hl_replace_abort(&out);   /* the previous file, if any, stays */
    return -1;
  }
  return hl_replace_commit(&out, what);
}

/* ---- reading the header ---- */

typedef struct {
  const char *p, *end;
  const char *what;
} parser;

typedef struct {
  const char *descr;   /* the descr's text: a string's contents, or the raw text of anything else */
  size_t descr_len;
  int descr_is_string;
  int fortran_order;
  int ndim;            /* may exceed HL_MAX_DIMS: only the first extents are kept */
  int64_t shape[HL_MAX_DIMS];
} header;

static void skip_ws(parser *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static int at(parser *h, char c) { return h->p < h->end && *h->p == c; }

/* a quoted string (no escapes: headers hold none); at(h, quote) on entry */
static int parse_string(parser *h, const char **s, size_t *len) {
  char q = *h->p++;
  const char *start = h->p;
  while (h->p < h->end && *h->p != q && *h->p != '\n') {
    if (*h->p == '\\') return hl_error("%s: bad header: unsupported string literal (an escape)", h->what);
    h->p++;
  }
  if (h->p >= h->end || *h->p != q) return hl_error("%s: bad header: unterminated string", h->what);
  *s = start;
  *len = (size_t)(h->p - start);
  h->p++;
  return 0;
}

/* the extent of any value (a structured dtype's list, say): up to a ',' or '}' outside brackets */
static void skip_value(parser *h) {
  int depth = 0;
  while (h->p < h->end) {
    char c = *h->p;
    if (c == '\'' || c == '"') {
      for (h->p++; h->p < h->end && *h->p != c; h->p++) {}
      if (h->p < h->end) h->p++;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') depth++;
    else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0) return;
      depth--;
    } else if (c == ',' && depth == 0) return;
    h->p++;
  }
}

static int word(parser *h, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n)) return 0;
  const char *after = h->p + n;
  if (after < h->end && (*after == '_' || (*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                         (*after >= '0' && *after <= '9')))
    return 0;
  h->p = after;
  return 1;
}

static int parse_extent(parser *h, int64_t *v) {
  if (at(h, '-')) return hl_error("%s: bad header: negative extent in shape", h->what);
  if (!(h->p < h->end && *h->p >= '0' && *h->p <= '9')) return hl_error("%s: bad header: shape is not a tuple of integers", h->what);
  int64_t x = 0;
  while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
    int d = *h->p++ - '0';
    if (x > (INT64_MAX - d) / 10) return hl_error("%s: bad header: shape extent too large", h->what);
    x = x * 10 + d;
  }
  if (at(h, 'L') || at(h, 'l')) h->p++;   /* Python 2's long literals, in files it wrote */
  *v = x;
  return 0;
}

static int parse_shape(parser *h, header *hd) {
  if (!at(h, '(')) return hl_error("%s: bad header: shape is not a tuple of integers", h->what);
  h->p++;
  hd->ndim = 0;
  for (;;) {
    skip_ws(h);
    if (at(h, ')')) break;
    int64_t v = 0;
    if (parse_extent(h, &v)) return -1;
    if (hd->ndim < HL_MAX_DIMS) hd->shape[hd->ndim] = v;
    hd->ndim++;
    skip_ws(h);
    if (at(h, ',')) h->p++;
    else if (!at(h, ')')) return hl_error("%s: bad header: shape is not a tuple of integers", h->what);
  }
  h->p++;
  return 0;
}

static int parse_dict(parser *h, header *hd) {
  enum { DESCR = 1, FORTRAN = 2, SHAPE = 4 };
  int seen = 0;
  skip_ws(h);
  if (!at(h, '{')) return hl_error("%s: bad header: not a Python dict", h->what);
  h->p++;
  for (;;) {
    skip_ws(h);
    if (at(h, '}')) {
      h->p++;
      break;
    }
    if (!at(h, '\'') && !at(h, '"')) return hl_error("%s: bad header: expected a quoted key", h->what);
    const char *key = NULL;
    size_t klen = 0;
    if (parse_string(h, &key, &klen)) return -1;
    int which = klen == 5 && !memcmp(key, "descr", 5)           ? DESCR
                : klen == 13 && !memcmp(key, "fortran_order", 13) ? FORTRAN
                : klen == 5 && !memcmp(key, "shape", 5)           ? SHAPE
                                                                  : 0;
    if (!which) return hl_error("%s: bad header: unexpected key '%.*s'", h->what, (int)(klen > 40 ? 40 : klen), key);
    if (seen & which) return hl_error("%s: bad header: key '%.*s' repeated", h->what, (int)klen, key);
    seen |= which;
    skip_ws(h);
    if (!at(h, ':')) return hl_error("%s: bad header: expected ':' after '%.*s'", h->what, (int)klen, key);
    h->p++;
    skip_ws(h);
    if (which == DESCR) {
      if (at(h, '\'') || at(h, '"')) {
        if (parse_string(h, &hd->descr, &hd->descr_len)) return -1;
        hd->descr_is_string = 1;
      } else {
        const char *start = h->p;
        skip_value(h);
        hd->descr = start;
        hd->descr_len = (size_t)(h->p - start);
        while (hd->descr_len && (start[hd->descr_len - 1] == ' ' || start[hd->descr_len - 1] == '\n')) hd->descr_len--;
        if (!hd->descr_len) return hl_error("%s: bad header: 'descr' has no value", h->what);
      }
    } else if (which == FORTRAN) {
      if (word(h, "True")) hd->fortran_order = 1;
      else if (word(h, "False")) hd->fortran_order = 0;
      else return hl_error("%s: bad header: fortran_order is not True or False", h->what);
    } else if (parse_shape(h, hd)) {
      return -1;
    }
    skip_ws(h);
    if (at(h, ',')) h->p++;
    else if (!at(h, '}')) return hl_error("%s: bad header: expected ',' or '}' after the value of '%.*s'", h->what, (int)klen, key);
  }
  skip_ws(h);
  if (h->p != h->end) return hl_error("%s: bad header: text after the dict", h->what);
  if (!(seen & DESCR)) return hl_error("%s: bad header: no 'descr' key", h->what);
  if (!(seen & FORTRAN)) return hl_error("%s: bad header: no 'fortran_order' key", h->what);
  if (!(seen & SHAPE)) return hl_error("%s: bad header: no 'shape' key", h->what);
  return 0;
}

/* '<f4' and the like: a byte order ('<', '>', '=' native, '|' not applicable) and a type code */
static int decode_descr(const header *hd, const char *what, hl_dtype *dtype, int *swap) {
  static const struct { const char *code; hl_dtype dtype; } codes[] = {
      {"f4", HL_FLOAT32}, {"f8", HL_FLOAT64}, {"i4", HL_INT32}, {"i8", HL_INT64}, {"u1", HL_UINT8}, {"i1", HL_INT8}, {"f2", HL_FLOAT16}, {"b1", HL_BOOL},
      {"c8", HL_COMPLEX64}, {"c16", HL_COMPLEX128},
  };
  const char *d = hd->descr;
  size_t n = hd->descr_len;
  char order = '=';
  if (hd->descr_is_string && (n == 3 || n == 4) && d[0] && strchr("<>=|", d[0])) {
    order = d[0];
    d++;
    n--;
  }
  if (hd->descr_is_string && (n == 2 || n == 3))
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++)
      if (strlen(codes[k].code) == n && !memcmp(d, codes[k].code, n)) {
        size_t size = hl_dtype_size(codes[k].dtype);
        if (order == '|' && size > 1) break;   /* '|' is for single bytes only */
        *dtype = codes[k].dtype;
        *swap = size > 1 && (order == '<' || order == '>') && (order == '<') != host_little_endian();
        return 0;
      }
  size_t shown = hd->descr_len > 60 ? 60 : hd->descr_len;
  return hl_error("%s: unsupported dtype %s%.*s%s%s (halua reads float32 float64 float16 int32 int64 int8 uint8 bool complex64 complex128: '<f4' '<f8' '<f2' '<i4' '<i8' '|i1' '|u1' '|b1' '<c8' '<c16')",
                  what, hd->descr_is_string ? "'" : "", (int)shown, hd->descr, shown < hd->descr_len ? "..." : "",
                  hd->descr_is_string ? "'" : "");
}

/* ---- reading the data ---- */

static void byteswap(void *data, int64_t n, size_t size) {
  if (size == 2) {
    uint16_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap16(p[i]);
  } else if (size == 4) {
    uint32_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap32(p[i]);
  } else if (size == 8) {
    uint64_t *p = data;
    for (int64_t i = 0; i < n; i++) p[i] = __builtin_bswap64(p[i]);
  }
}

/* dst (C order) from src holding the same array in Fortran order (first axis fastest) */
static void fortran_to_c(const char *src, char *dst, int ndim, const int64_t *shape, size_t es) {
  int64_t fstride[HL_MAX_DIMS], idx[HL_MAX_DIMS] = {0};
  int64_t s = 1;
  for (int k = 0; k < ndim; k++) {
    fstride[k] = s;
    s *= shape[k];
  }
  int64_t n = s, off = 0;
  for (int64_t e = 0; e < n; e++) {
    memcpy(dst + e * (int64_t)es, src + off * (int64_t)es, es);
    for (int k = ndim - 1; k >= 0; k--) {
      if (++idx[k] < shape[k]) {
        off += fstride[k];
        break;
      }
      off -= fstride[k] * (shape[k] - 1);
      idx[k] = 0;
    }
  }
}

/* hl_error's message without its "halua: " prefix, to wrap in `what` */
static const char *bare_message(void) {
  const char *m = hl_error_message();
  return strncmp(m, "halua: ", 7) ? m : m + 7;
}

static int read_data(hl_source *s, const char *what, const header *hd, hl_dtype dtype, int swap, hl_array *out) {
  size_t es = hl_dtype_size(dtype);
  int64_t count = 1;
  for (int k = 0; k < hd->ndim; k++) {
    if (hd->shape[k] && count > INT64_MAX / 16 / hd->shape[k])
      return hl_error("%s: bad header: shape %s is too large", what, hl_shape_str(hd->ndim, (const long long *)hd->shape).s);
    count *= hd->shape[k];
  }
  int64_t nbytes = count * (int64_t)es;
  int64_t left = s->remaining ? s->remaining(s) : -1;
  if (left >= 0 && left < nbytes) return hl_error("%s: truncated data (expected %lld bytes, got %lld)", what, (long long)nbytes, (long long)left);
  if (hl_array_alloc(out, dtype, hd->ndim, hd->shape)) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", bare_message());
    return hl_error("%s: %s", what, msg);
  }
  int fortran = hd->fortran_order && hd->ndim > 1;
  char *tmp = NULL;
  if (fortran && nbytes && !(tmp = malloc((size_t)nbytes))) {
    hl_array_release(out);
    return hl_error("%s: out of memory reading %lld bytes", what, (long long)nbytes);
  }
  char *dst = tmp ? tmp : hl_array_data(out);
  int64_t got = nbytes ? hl_source_read(s, dst, (size_t)nbytes) : 0;
  if (got != nbytes) {
    if (got >= 0) hl_error("%s: truncated data (expected %lld bytes, got %lld)", what, (long long)nbytes, (long long)got);
    free(tmp);
    hl_array_release(out);
    return -1;
  }
  if (swap) {
    if (hl_dtype_is_complex(dtype)) byteswap(dst, count * 2, es / 2);   /* each part on its own */
    else byteswap(dst, count, es);
  }
  if (dtype == HL_BOOL)
    for (int64_t i = 0; i < count; i++) dst[i] = dst[i] != 0;
  if (tmp) {
    fortran_to_c(tmp, hl_array_data(out), hd->ndim, hd->shape, es);
    free(tmp);
  }
  return 0;
}

int hl_npy_read(hl_source *s, const char *what, hl_array *out) {
  unsigned char pre[12];
  int64_t got = hl_source_read(s, pre, 8);
  if (got < 0) return -1;
  if (got == 0) return hl_error("%s: empty file (not a .npy file)", what);
  if (got >= 4 && pre[0] == 'P' && pre[1] == 'K' && pre[2] < 8 && pre[3] < 8)
    return hl_error("%s: this is a zip archive (a .npz file: read it with hl.loadz)", what);
  if (memcmp(pre, MAGIC, (size_t)got < sizeof MAGIC ? (size_t)got : sizeof MAGIC))
    return hl_error("%s: bad magic (not a .npy file)", what);
  if (got < 8) return hl_error("%s: truncated header (the file ends after %lld bytes)", what, (long long)got);
  int major = pre[6], minor = pre[7];
  if (major < 1 || major > 3 || minor != 0) return hl_error("%s: unsupported .npy format version %d.%d", what, major, minor);
  size_t lensize = major == 1 ? 2 : 4;
  got = hl_source_read(s, pre + 8, lensize);
  if (got < 0) return -1;
  if ((size_t)got < lensize) return hl_error("%s: truncated header (the file ends after %lld bytes)", what, (long long)(8 + got));
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (lensize == 4) hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  if (hlen > MAX_HEADER) return hl_error("%s: bad header: its length %zu is implausible", what, hlen);
  int64_t left = s->remaining ? s->remaining(s) : -1;
  if (left >= 0 && (size_t)left < hlen)
    return hl_error("%s: truncated header (expected %zu bytes, got %lld)", what, hlen, (long long)left);
  char *text = malloc(hlen ? hlen : 1);
  if (!text) return hl_error("%s: out of memory", what);
  got = hlen ? hl_source_read(s, text, hlen) : 0;
  if (got < 0 || (size_t)got < hlen) {
    if (got >= 0) hl_error("%s: truncated header (expected %zu bytes, got %lld)", what, hlen, (long long)got);
    free(text);
    return -1;
  }
  parser p = {text, text + hlen, what};
  header hd;
  memset(&hd, 0, sizeof hd);
  int rc = parse_dict(&p, &hd);
  hl_dtype dtype = HL_FLOAT32;
  int swap = 0;
  if (!rc) rc = decode_descr(&hd, what, &dtype, &swap);
  if (!rc && hd.ndim > HL_MAX_DIMS)
    rc = hl_error("%s: the array has %d dimensions; halua arrays have at most %d", what, hd.ndim, HL_MAX_DIMS);
  if (!rc) rc = read_data(s, what, &hd, dtype, swap, out);
  free(text);
  return rc;
}

int hl_npy_load(const char *path, hl_array *out) {
  FILE *f;
  if (hl_open_read("load", path, &f)) return -1;
  char what[1024];
  snprintf(what, sizeof what, "load: %s", path);
  hl_file_source src;
  hl_file_source_init(&src, f, what);
  int rc = hl_npy_read(&src.base, what, out);
  fclose(f);
  return rc;
}
