/* LAPACK, opened at its first use.
 *
 * The engine had linked liblapack.so.3, so every process loaded it (and BLAS, gfortran and
 * quadmath with it: about 3 ms of a new process's 27) whether or not it ever solved a system.
 * Where Debian's alternatives make liblapack.so.3 OpenBLAS, its thread server also started with
 * the process, and its threads, spinning while they wait for work, took the second core from the
 * engine's own parallel loops in the process's first part (an MLP training step at 18.5 ms
 * against 13.9). LAPACK is now opened (dlopen) by the first linalg call that needs it, and set to
 * one thread there: calls here run one matrix each on a thread of the engine's pool, which
 * spreads a batch over the cores instead (a 256x256 solve took 20 ms instead of 0.6 when both
 * pools ran), unless OPENBLAS_NUM_THREADS says otherwise.
 *
 * The routines are LAPACK's Fortran entry points: every argument by reference, and gfortran's
 * hidden length after each character argument, which we pass (implementations that do not read
 * it are unaffected). */
#ifndef HL_LAPACK_H
#define HL_LAPACK_H
#include <stddef.h>

typedef struct {
  void (*sgesv)(const int *n, const int *nrhs, float *a, const int *lda, int *ipiv, float *b, const int *ldb, int *info);
  void (*dgesv)(const int *n, const int *nrhs, double *a, const int *lda, int *ipiv, double *b, const int *ldb, int *info);
  void (*strtrs)(const char *uplo, const char *trans, const char *diag, const int *n, const int *nrhs, const float *a,
                 const int *lda, float *b, const int *ldb, int *info, size_t uplo_len, size_t trans_len, size_t diag_len);
  void (*dtrtrs)(const char *uplo, const char *trans, const char *diag, const int *n, const int *nrhs, const double *a,
                 const int *lda, double *b, const int *ldb, int *info, size_t uplo_len, size_t trans_len, size_t diag_len);
  void (*spotrf)(const char *uplo, const int *n, float *a, const int *lda, int *info, size_t uplo_len);
  void (*dpotrf)(const char *uplo, const int *n, double *a, const int *lda, int *info, size_t uplo_len);
  void (*sgeqrf)(const int *m, const int *n, float *a, const int *lda, float *tau, float *work, const int *lwork, int *info);
  void (*dgeqrf)(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork, int *info);
  void (*sorgqr)(const int *m, const int *n, const int *k, float *a, const int *lda, const float *tau, float *work,
                 const int *lwork, int *info);
  void (*dorgqr)(const int *m, const int *n, const int *k, double *a, const int *lda, const double *tau, double *work,
                 const int *lwork, int *info);
  void (*sgesdd)(const char *jobz, const int *m, const int *n, float *a, const int *lda, float *s, float *u, const int *ldu,
                 float *vt, const int *ldvt, float *work, const int *lwork, int *iwork, int *info, size_t jobz_len);
  void (*dgesdd)(const char *jobz, const int *m, const int *n, double *a, const int *lda, double *s, double *u,
                 const int *ldu, double *vt, const int *ldvt, double *work, const int *lwork, int *iwork, int *info,
                 size_t jobz_len);
  void (*ssyevd)(const char *jobz, const char *uplo, const int *n, float *a, const int *lda, float *w, float *work,
                 const int *lwork, int *iwork, const int *liwork, int *info, size_t jobz_len, size_t uplo_len);
  void (*dsyevd)(const char *jobz, const char *uplo, const int *n, double *a, const int *lda, double *w, double *work,
                 const int *lwork, int *iwork, const int *liwork, int *info, size_t jobz_len, size_t uplo_len);
  void (*sgetrf)(const int *m, const int *n, float *a, const int *lda, int *ipiv, int *info);
  void (*dgetrf)(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
} hl_lapack_routines;

/* LAPACK's routines, opened at the first call (liblapack.so.3, else liblapack.so); NULL, with an
 * hl_error naming op ("halua: OP: LAPACK could not be loaded: ..."), where it cannot be. The
 * same table every time after the first success; safe from any thread. */
const hl_lapack_routines *hl_lapack(const char *op);
#endif
