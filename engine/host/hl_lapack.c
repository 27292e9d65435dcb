/* LAPACK, opened at its first use (hl_lapack.h). */
#include "hl_lapack.h"
#include "hl_error.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hl_lapack_routines routines;
static char failure[512];   /* why it could not be opened, or "" */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void open_lapack(void) {
  void *h = NULL;
  const char *names[] = {"liblapack.so.3", "liblapack.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !h; i++) h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(failure, sizeof failure, "LAPACK could not be loaded (liblapack.so.3: %s)", e ? e : "not found");
    return;
  }
  struct {
    const char *name;
    void **slot;
  } table[] = {
      {"sgesv_", (void **)&routines.sgesv},   {"dgesv_", (void **)&routines.dgesv},   {"strtrs_", (void **)&routines.strtrs},
      {"dtrtrs_", (void **)&routines.dtrtrs}, {"spotrf_", (void **)&routines.spotrf}, {"dpotrf_", (void **)&routines.dpotrf},
      {"sgeqrf_", (void **)&routines.sgeqrf}, {"dgeqrf_", (void **)&routines.dgeqrf}, {"sorgqr_", (void **)&routines.sorgqr},
      {"dorgqr_", (void **)&routines.dorgqr}, {"sgesdd_", (void **)&routines.sgesdd}, {"dgesdd_", (void **)&routines.dgesdd},
      {"ssyevd_", (void **)&routines.ssyevd}, {"dsyevd_", (void **)&routines.dsyevd}, {"sgetrf_", (void **)&routines.sgetrf},
      {"dgetrf_", (void **)&routines.dgetrf},
  };
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
    *table[i].slot = dlsym(h, table[i].name);
    if (!*table[i].slot) {
      snprintf(failure, sizeof failure, "the LAPACK loaded (liblapack.so.3) has no %s", table[i].name);
      return;   /* (the library stays loaded: unloading one whose threads may have started is unsafe) */
    }
  }
  /* OpenBLAS: one thread per call (hl_lapack.h says why) */
  void (*set_threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
  if (set_threads && !getenv("OPENBLAS_NUM_THREADS")) set_threads(1);
}

const hl_lapack_routines *hl_lapack(const char *op) {
  pthread_once(&once, open_lapack);
  if (failure[0]) {
    hl_error("%s: %s", op, failure);
    return NULL;
  }
  return &routines;
}
