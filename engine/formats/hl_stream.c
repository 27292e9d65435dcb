#include "hl_stream.h"
#include "hl_error.h"
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static int64_t file_read(hl_source *s, void *dst, size_t n) {
  hl_file_source *fs = (hl_file_source *)s;
  size_t got = fread(dst, 1, n, fs->f);
  if (got < n && ferror(fs->f)) return hl_error("%s: read error: %s", fs->what, strerror(errno));
  return (int64_t)got;
}

static int64_t file_remaining(hl_source *s) {
  hl_file_source *fs = (hl_file_source *)s;
  struct stat st;
  off_t pos = ftello(fs->f);
  if (pos < 0 || fstat(fileno(fs->f), &st) || !S_ISREG(st.st_mode)) return -1;
  return st.st_size > pos ? (int64_t)st.st_size - pos : 0;
}

static int file_write(hl_sink *s, const void *src, size_t n) {
  hl_file_sink *fs = (hl_file_sink *)s;
  if (n && fwrite(src, 1, n, fs->f) != n) return hl_error("%s: write error: %s", fs->what, strerror(errno));
  return 0;
}

void hl_file_source_init(hl_file_source *s, FILE *f, const char *what) {
  s->base.read = file_read;
  s->base.remaining = file_remaining;
  s->f = f;
  s->what = what;
}

void hl_file_sink_init(hl_file_sink *s, FILE *f, const char *what) {
  s->base.write = file_write;
  s->f = f;
  s->what = what;
}

int hl_open_read(const char *op, const char *path, FILE **out) {
  FILE *f = fopen(path, "rb");
  if (!f) return hl_error("%s: cannot open %s: %s", op, path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
    fclose(f);
    return hl_error("%s: cannot open %s: %s", op, path, strerror(EISDIR));
  }
  *out = f;
  return 0;
}
