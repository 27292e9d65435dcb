/* Byte streams that the file formats read from and write to: a file, or (hl_zip.h) a member of
 * a zip archive. Errors are recorded with hl_error, their message naming the stream's `what`. */
#ifndef HL_STREAM_H
#define HL_STREAM_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct hl_source hl_source;
struct hl_source {
  /* Read up to n bytes into dst: the count read (fewer than n only at the end of the stream),
   * or -1 after hl_error. */
  int64_t (*read)(hl_source *s, void *dst, size_t n);
  /* Bytes left to read, or -1 when the stream cannot tell: lets a reader refuse a size that a
   * corrupt header claims before allocating it. */
  int64_t (*remaining)(hl_source *s);
};

typedef struct hl_sink hl_sink;
struct hl_sink {
  int (*write)(hl_sink *s, const void *src, size_t n);   /* 0, or -1 after hl_error */
};

static inline int64_t hl_source_read(hl_source *s, void *dst, size_t n) { return s->read(s, dst, n); }
static inline int hl_sink_write(hl_sink *s, const void *src, size_t n) { return s->write(s, src, n); }

/* A stdio file as a source or a sink; `what` (e.g. "load: /tmp/x.npy") prefixes its errors and
 * must outlive it. */
typedef struct {
  hl_source base;
  FILE *f;
  const char *what;
} hl_file_source;
typedef struct {
  hl_sink base;
  FILE *f;
  const char *what;
} hl_file_sink;
void hl_file_source_init(hl_file_source *s, FILE *f, const char *what);
void hl_file_sink_init(hl_file_sink *s, FILE *f, const char *what);

/* fopen for reading that also refuses directories; -1 after hl_error("<op>: cannot open <path>: ...") */
int hl_open_read(const char *op, const char *path, FILE **out);

/* A file written whole or not at all. The bytes go to a temporary file beside `path` (in its
 * directory, so that the rename is atomic); hl_replace_commit flushes it to the disk (fsync) and
 * renames it over path, and hl_replace_abort removes it. Until the commit, and whenever anything
 * fails, a file already at path is left exactly as it was: a crash, a full disk or a write error
 * never costs the previous checkpoint. The temporary file is path.tmp-PID-N, locked (flock) while
 * it is written; a process killed part way leaves it behind, and the next successful commit to
 * the same path removes those whose process has ended (their lock is free and PID gone). */
typedef struct {
  FILE *f;
  char tmp[4200];
  const char *path;
} hl_replace_file;
/* -1 after hl_error("<op>: cannot open <path>: ...") */
int hl_replace_open(hl_replace_file *r, const char *op, const char *path);
/* 0, or -1 after hl_error("<what>: write error: ...") with path untouched */
int hl_replace_commit(hl_replace_file *r, const char *what);
void hl_replace_abort(hl_replace_file *r);
#endif
