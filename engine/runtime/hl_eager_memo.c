#include "hl_eager_memo.h"
#include "hl_backend.h"
#include "hl_cache.h"
#include "hl_thread_exit.h"
#include <string.h>

enum { NSLOTS = 64 };   /* direct-mapped by the signature's hash */

typedef struct {
  hl_eager_sig sig;
  struct hl_kernel *kernel;   /* one reference, the slot's; NULL when empty */
  unsigned uses;
} slot;
_Static_assert(sizeof(hl_eager_sig) % sizeof(uint64_t) == 0, "a signature hashes as whole words");

typedef struct {
  slot slots[NSLOTS];
  unsigned long generation;   /* the cache's (hl_cache_generation) when the slots were filled */
} memo;

static _Thread_local memo mine;

/* A thread's memo lets its kernels go when the thread ends (hosts may run ops on many threads). */
static _Thread_local hl_thread_exit memo_exit;
static void forget(memo *m) {
  for (int s = 0; s < NSLOTS; s++) {
    hl_kernel_release(m->slots[s].kernel);
    m->slots[s].kernel = NULL;
  }
}
static void forget_at_exit(void *m) { forget(m); }

int hl_eager_sig_make(hl_eager_sig *sig, int prim, int nin, const hl_array *const *in, const int *stride,
                      const hl_attrs *attrs, const hl_array *out) {
  if (nin > HL_MEMO_MAX_IN) return -1;
  memset(sig, 0, sizeof *sig);   /* padding too: signatures are compared as bytes */
  sig->prim = prim;
  sig->nin = nin;
  sig->device = hl_array_device(out);
  sig->dtype = out->dtype;
  sig->ndim = out->ndim;
  for (int k = 0; k < nin; k++) {
    sig->in[k][0] = in[k]->dtype;
    sig->in[k][1] = in[k]->ndim;
    sig->in[k][2] = stride[k];
  }
  if (attrs) {
    memcpy(sig->i, attrs->i, sizeof(int64_t) * (size_t)hl_attr_count(prim, out->ndim));
    if (hl_prims[prim].attrs == HL_A_VALUE) sig->f = attrs->f;
  }
  return 0;
}

static slot *slot_of(const hl_eager_sig *sig) {
  uint64_t h = 0;
  for (size_t k = 0; k < sizeof *sig; k += sizeof(uint64_t)) {
    uint64_t w;
    memcpy(&w, (const char *)sig + k, sizeof w);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  }
  return &mine.slots[(h >> 40) % NSLOTS];
}

struct hl_kernel *hl_eager_memo_find(const hl_eager_sig *sig) {
  /* an entry left the cache (evicted, cleared): its kernel is to be freed, so the memo lets
   * go of all it holds rather than keep it alive */
  unsigned long gen = hl_cache_generation();
  if (gen != mine.generation) {
    forget(&mine);
    mine.generation = gen;
    return NULL;
  }
  slot *s = slot_of(sig);
  if (!s->kernel || memcmp(&s->sig, sig, sizeof *sig) != 0) return NULL;
  if (++s->uses % 64 == 0) return NULL;   /* the cache's lookup keeps it recent (hl_eager_memo.h) */
  hl_kernel_retain(s->kernel);
  hl_cache_count_hit();
  return s->kernel;
}

void hl_eager_memo_put(const hl_eager_sig *sig, struct hl_kernel *k) {
  hl_thread_exit_add(&memo_exit, forget_at_exit, &mine);
  slot *s = slot_of(sig);
  hl_kernel_retain(k);
  hl_kernel_release(s->kernel);
  memcpy(&s->sig, sig, sizeof *sig);
  s->kernel = k;
}

void hl_eager_memo_forget(void) { forget(&mine); }
