/* Ctrl-C inside long engine work. LuaJIT stops running Lua code on SIGINT (its handler sets a hook
 * that raises at the next Lua instruction), but a pipeline runs in C and never returns to Lua
 * until it ends. The engine's handler records the signal and passes it on to the handler it
 * replaced; the engine checks the record between a compiled loop's steps and between a parallel
 * loop's tasks (hl_pool.c), and once more when a pipeline ends: the call fails with
 * "halua: interrupted" and the session (the REPL, a pcall) goes on. While a pipeline runs, the
 * signal is the engine's alone (LuaJIT's hook would otherwise fire again as the error unwinds,
 * inside the REPL's own error handler). */
#ifndef HL_INTERRUPT_H
#define HL_INTERRUPT_H
#include <stdint.h>

/* Installs the handler over the current SIGINT handler, once, and only where Lua code is being
 * interrupted already (a handler is installed, as luajit's is around a script and halua's REPL's
 * around each evaluation): a host that leaves SIGINT at its default keeps it. */
void hl_interrupt_install(void);
/* Engine work that Ctrl-C is to stop starts and ends (they nest: a compiled loop's body runs
 * inside its pipeline). When the first of the process starts, an earlier signal is forgotten (it
 * was Lua's to act on); signals while such work goes on are the engine's. A pipeline run enters
 * and leaves through hl_run_enter and hl_run_leave, which do the same. */
void hl_interrupt_enter(void);
void hl_interrupt_leave(void);
/* Whether SIGINT arrived since the last clear. */
int hl_interrupted(void);

/* The record of the pipeline run going on in this thread, which the layers above keep their
 * per-run state in: compiled loops their results for the run (runtime/hl_loop.c), extern stages
 * whether one of them failed (backend/extern). Runs nest (a compiled loop's body runs inside its
 * loop's stage), so entering saves the run it interrupts and leaving puts it back. One record
 * in one thread-local: a run's bracket costs two accesses to it, where each layer's own had cost
 * six (a thread-local of a shared library is a call to __tls_get_addr). */
typedef struct {
  uint64_t id;         /* the run's number, unique in the process; 0 outside any run */
  int stage_failed;    /* an extern stage of the run failed (and said why: hl_error) */
  int kept;            /* the runtime keeps results for the run, to free when it ends */
} hl_run;
/* Starts a run (a new id, nothing failed or kept), as hl_interrupt_enter does for Ctrl-C; the
 * run it nests in is saved in *outer. */
void hl_run_enter(hl_run *outer);
/* Ends the current run and makes *outer current again; returns the run that ended. */
hl_run hl_run_leave(const hl_run *outer);
/* the current run's record (its id is 0 outside any run) */
hl_run *hl_run_current(void);
#endif
