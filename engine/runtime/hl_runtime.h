/* The runtime's start: it gives the backend the hooks it calls up through (hl_backend.h's
 * hl_runtime_hooks: pipeline runs, compiled loops, the CPU matmul stage). */
#ifndef HL_RUNTIME_H
#define HL_RUNTIME_H

/* Once per process, before the first pipeline runs (the Lua module's open calls it; idempotent
 * and thread-safe). */
void hl_runtime_start(void);
#endif
