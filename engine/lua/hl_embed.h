/* What the embedding API's two files share (hl_embed.c, hl_embed_array.c): the thread's error
 * message and protected jobs, which run a worker under lua_pcall so that no Lua error reaches the
 * host. */
#ifndef HL_EMBED_H
#define HL_EMBED_H
#include "halua.h"
#include "hl_array.h"
#include "hl_error.h"

typedef struct hl_embed_job hl_embed_job;
/* A worker: its arguments are on the stack; it returns its number of results, or raises. */
typedef int (*hl_embed_fn)(lua_State *L, hl_embed_job *j);
struct hl_embed_job {
  hl_embed_fn fn;
  int code;           /* the status to report if the worker raises (HALUA_ERUN unless it says) */
  const char *name;
  const char *text;
  int index;          /* a stack index, for messages */
  hl_array array;
};

/* Records "halua: <formatted>" as this thread's message; returns code. */
int hl_embed_fail(int code, const char *fmt, ...) HL_PRINTF(2, 3);
/* Runs j->fn protected with the nargs values on top of the stack as its arguments (they are
 * consumed) and leaves nresults of its results; on failure records the message, leaves nothing
 * and returns the status. `what` names the call in messages. */
int hl_embed_run(lua_State *L, hl_embed_job *j, int nargs, int nresults, const char *what);
/* Raises from a worker with `code` as the status the host sees. */
int hl_embed_raise(lua_State *L, hl_embed_job *j, int code, const char *fmt, ...);

int hl_embed_dtype(halua_dtype t);              /* the engine's dtype, -1 for none */
halua_dtype hl_embed_public_dtype(hl_dtype t);
#endif
