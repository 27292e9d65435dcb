/* Work to do when a thread ends. Hosts may run halua on many short-lived threads, and several
 * parts of the engine keep per-thread state (the eager graph, the cache's key scratch, the eager
 * kernel memo, small-block lists): each would leak a little per thread unless freed at its exit.
 * One pthread key serves them all; each part registers a hook, a _Thread_local of its own,
 * the first time its thread uses the state. */
#ifndef HL_THREAD_EXIT_H
#define HL_THREAD_EXIT_H

typedef struct hl_thread_exit {
  void (*fn)(void *);
  void *obj;
  struct hl_thread_exit *next;
  int registered;
} hl_thread_exit;

/* Has fn(obj) run when the calling thread ends. hook must be a _Thread_local of the caller's;
 * registering a registered hook does nothing. A hook runs once and is then unregistered: state
 * used again by a later exit destructor registers again and is freed in the next round. */
void hl_thread_exit_register(hl_thread_exit *hook, void (*fn)(void *), void *obj);
/* the check inline: callers are on eager ops' hot path */
static inline void hl_thread_exit_add(hl_thread_exit *hook, void (*fn)(void *), void *obj) {
  if (!hook->registered) hl_thread_exit_register(hook, fn, obj);
}
#endif
