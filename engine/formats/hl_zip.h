/* Zip archives, as far as .npz files need them: writing stored (uncompressed) members exactly as
 * Python's zipfile does for numpy.savez (a zip64 extra field in every local header, the
 * 1980-01-01 timestamp, 0600 permissions), and reading stored or deflated members with their
 * CRC-32 checked, zip64 included. */
#ifndef HL_ZIP_H
#define HL_ZIP_H
#include "hl_stream.h"
#include <stdint.h>
#include <stdio.h>

/* ---- writing (hl_zip_write.c) ---- */

typedef struct hl_zip_written hl_zip_written;
typedef struct {
  hl_replace_file out;    /* the archive is written beside path and replaces it when closed */
  FILE *f;                /* out's */
  const char *path;
  char what[1024];        /* "<op>: <path>", for errors */
  uint64_t pos;           /* bytes written so far */
  int n, cap;
  hl_zip_written *members;
} hl_zip_writer;

/* Start writing path (a file there is replaced only by hl_zip_writer_close's success); errors
 * name `op`. */
int hl_zip_writer_open(hl_zip_writer *w, const char *op, const char *path);
/* A stored member made of nparts pieces, in order. */
int hl_zip_writer_add(hl_zip_writer *w, const char *name, int nparts, const void *const *parts, const size_t *lens);
/* Write the central directory and close; on failure the file is removed. Frees w either way. */
int hl_zip_writer_close(hl_zip_writer *w);
/* Close and remove the file, after an error elsewhere. */
void hl_zip_writer_abort(hl_zip_writer *w);

/* ---- reading (hl_zip_read.c) ---- */

typedef struct {
  char *name;
  int method;              /* 0 stored, 8 deflated */
  int flags;
  uint32_t crc;
  uint64_t csize, usize;   /* compressed, uncompressed */
  uint64_t local_offset;
} hl_zip_member;

typedef struct {
  FILE *f;
  const char *path;
  char what[1024];         /* "<op>: <path>" */
  uint64_t file_size;
  int n;
  hl_zip_member *members;
} hl_zip_reader;

/* Open path and read its central directory. */
int hl_zip_reader_open(hl_zip_reader *r, const char *op, const char *path);
void hl_zip_reader_close(hl_zip_reader *r);

/* One member's contents as a source (inflated when deflated). Its errors name `what`. */
typedef struct hl_zip_stream hl_zip_stream;
int hl_zip_stream_open(hl_zip_reader *r, int member, const char *what, hl_zip_stream **out);
/* Read what is left, then check the size and the CRC-32. */
int hl_zip_stream_finish(hl_zip_stream *s);
hl_source *hl_zip_stream_source(hl_zip_stream *s);
void hl_zip_stream_close(hl_zip_stream *s);
#endif
