#include "hl_thread_exit.h"

#include <pthread.h>
#include <stddef.h>

static pthread_key_t key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Thread_local hl_thread_exit *hooks;   /* this thread's, most recent first */

/* The key's destructor. The list is detached first: a hook whose state is used again by a later
 * hook re-registers it, which sets the key once more, and POSIX calls destructors again (up to
 * PTHREAD_DESTRUCTOR_ITERATIONS rounds) for keys set during the previous round. */
static void run_hooks(void *unused) {
  (void)unused;
  hl_thread_exit *h = hooks;
  hooks = NULL;
  while (h) {
    hl_thread_exit *next = h->next;
    h->registered = 0;
    h->next = NULL;
    h->fn(h->obj);
    h = next;
  }
}

static void make_key(void) { pthread_key_create(&key, run_hooks); }

void hl_thread_exit_register(hl_thread_exit *hook, void (*fn)(void *), void *obj) {
  pthread_once(&key_once, make_key);
  hook->fn = fn;
  hook->obj = obj;
  hook->next = hooks;
  hook->registered = 1;
  hooks = hook;
  pthread_setspecific(key, hook);   /* any non-NULL value: the destructor reads `hooks` */
}
