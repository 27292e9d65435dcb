#define _POSIX_C_SOURCE 200809L
#include "hl_notice.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct hl_notice {
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t done_cond;   /* signalled by hl_notice_end */
  int done, printed, after_ms;
  struct timespec start;
  char what[200];
};

static double seconds_since(const struct timespec *t0) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - t0->tv_sec) + 1e-9 * (double)(now.tv_nsec - t0->tv_nsec);
}

static void *watch(void *arg) {
  hl_notice *n = arg;
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += n->after_ms / 1000;
  deadline.tv_nsec += (long)(n->after_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&n->lock);
  while (!n->done) {
    if (pthread_cond_timedwait(&n->done_cond, &n->lock, &deadline) != 0) break;   /* timed out */
  }
  if (!n->done) {
    fprintf(stderr, "halua: %s...\n", n->what);
    fflush(stderr);
    n->printed = 1;
  }
  pthread_mutex_unlock(&n->lock);
  return NULL;
}

static int quiet(void) {
  const char *q = getenv("HALUA_QUIET");
  return q && *q && strcmp(q, "0") != 0;
}

hl_notice *hl_notice_begin(int after_ms, const char *what) {
  if (quiet()) return NULL;
  hl_notice *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->after_ms = after_ms;
  snprintf(n->what, sizeof n->what, "%s", what ? what : "working");
  clock_gettime(CLOCK_MONOTONIC, &n->start);
  pthread_mutex_init(&n->lock, NULL);
  pthread_cond_init(&n->done_cond, NULL);
  if (pthread_create(&n->thread, NULL, watch, n) != 0) {
    pthread_cond_destroy(&n->done_cond);
    pthread_mutex_destroy(&n->lock);
    free(n);
    return NULL;
  }
  return n;
}

void hl_notice_end(hl_notice *n) {
  if (!n) return;
  pthread_mutex_lock(&n->lock);
  n->done = 1;
  pthread_cond_signal(&n->done_cond);
  pthread_mutex_unlock(&n->lock);
  pthread_join(n->thread, NULL);
  if (n->printed) {
    fprintf(stderr, "halua: %s: done in %.1f s\n", n->what, seconds_since(&n->start));
    fflush(stderr);
  }
  pthread_cond_destroy(&n->done_cond);
  pthread_mutex_destroy(&n->lock);
  free(n);
}

int hl_log_compiles(void) {
  static int v = -1;
  int seen = __atomic_load_n(&v, __ATOMIC_RELAXED);
  if (seen < 0) {
    const char *s = getenv("HALUA_LOG_COMPILES");
    seen = s && *s && strcmp(s, "0") != 0;
    __atomic_store_n(&v, seen, __ATOMIC_RELAXED);
  }
  return seen;
}
