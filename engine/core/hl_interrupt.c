#define _POSIX_C_SOURCE 200809L
#include "hl_interrupt.h"
#include "hl_tls.h"
#include <signal.h>
#include <stddef.h>

/* set by the handler, read and cleared by any thread: lock-free atomics (signal-safe) */
static int pending;
static int runs;                    /* outermost pipeline runs going on, on every thread */
static uint64_t next_ids = 1;       /* the first id of the next block of run ids a thread takes */
enum { RUN_IDS = 1 << 16 };
/* this thread's: its run's record, how deep the work Ctrl-C stops is nested, and the rest of
 * its block of run ids (a thread takes ids a block at a time: one counter for the process, added
 * to by every run, had been a locked instruction per eager op) */
typedef struct {
  hl_run run;
  int depth;
  uint64_t next_id, end_id;
} thread_runs;
static _Thread_local thread_runs mine;
static struct sigaction replaced;   /* the handler ours passes the signal on to */

static void on_sigint(int sig) {
  __atomic_store_n(&pending, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&runs, __ATOMIC_RELAXED) > 0) return;   /* the engine's to act on */
  if (!(replaced.sa_flags & SA_SIGINFO) && replaced.sa_handler != SIG_DFL && replaced.sa_handler != SIG_IGN)
    replaced.sa_handler(sig);
}

void hl_interrupt_install(void) {
  static int done;
  if (done) return;
  struct sigaction current;
  if (sigaction(SIGINT, NULL, &current) || current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN ||
      (current.sa_flags & SA_SIGINFO))
    return;
  done = 1;
  replaced = current;
  struct sigaction ours = current;
  ours.sa_handler = on_sigint;
  ours.sa_flags &= ~SA_RESETHAND;   /* (LuaJIT's own handler resets itself: ours calls it each time) */
  sigaction(SIGINT, &ours, NULL);
}

static void enter(int *depth) {
  if ((*depth)++ == 0 && __atomic_fetch_add(&runs, 1, __ATOMIC_RELAXED) == 0) __atomic_store_n(&pending, 0, __ATOMIC_RELAXED);
}

static void leave(int *depth) {
  if (--*depth == 0) __atomic_fetch_sub(&runs, 1, __ATOMIC_RELAXED);
}

void hl_interrupt_enter(void) { enter(&mine.depth); }
void hl_interrupt_leave(void) { leave(&mine.depth); }

void hl_run_enter(hl_run *outer) {
  thread_runs *m = &mine;
  HL_TLS_KEEP(m);
  *outer = m->run;
  if (m->next_id == m->end_id) {
    m->next_id = __atomic_fetch_add(&next_ids, RUN_IDS, __ATOMIC_RELAXED);
    m->end_id = m->next_id + RUN_IDS;
  }
  m->run = (hl_run){.id = m->next_id++};
  enter(&m->depth);
}

hl_run hl_run_leave(const hl_run *outer) {
  thread_runs *m = &mine;
  HL_TLS_KEEP(m);
  hl_run ended = m->run;
  m->run = *outer;
  leave(&m->depth);
  return ended;
}

hl_run *hl_run_current(void) { return &mine.run; }

int hl_interrupted(void) { return __atomic_load_n(&pending, __ATOMIC_RELAXED) != 0; }
