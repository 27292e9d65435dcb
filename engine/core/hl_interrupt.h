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

/* Installs the handler over the current SIGINT handler, once, and only where Lua code is being
 * interrupted already (a handler is installed, as luajit's is around a script and halua's REPL's
 * around each evaluation): a host that leaves SIGINT at its default keeps it. */
void hl_interrupt_install(void);
/* A pipeline run starts and ends (they nest: a compiled loop's body runs inside its pipeline).
 * When the first run of the process starts, an earlier signal is forgotten (it was Lua's to act
 * on); signals while runs go on are theirs. */
void hl_interrupt_enter(void);
void hl_interrupt_leave(void);
/* Whether SIGINT arrived since the last clear. */
int hl_interrupted(void);
#endif
