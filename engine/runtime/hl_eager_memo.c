#include "hl_eager_memo.h"
#include "hl_backend.h"
#include "hl_cache.h"
#include "hl_thread_exit.h"
#include "hl_tls.h"
#include <string.h>

enum { NSLOTS = 64 };   /* direct-mapped by the signature's hash */

typedef struct {
  hl_eager_sig sig;
  struct hl_kernel *kernel;   /* one reference, the slot's; NULL when empty */
} slot;
_Static_assert(sizeof(hl_eager_sig) % sizeof(uint64_t) == 0, "a signature hashes as whole words");

enum { NLANES = 64 };
typedef struct {
  hl_eager_lane_key key;
  hl_dtype dtype;
  struct hl_kernel *kernel;   /* one reference, the lane's; NULL when empty */
} lane;

typedef struct {
  slot slots[NSLOTS];
  lane lanes[NLANES];
  unsigned long generation;   /* the cache's (hl_cache_generation) when the slots were filled */
  long hits;                  /* lookups answered here and not yet added to the cache's hits */
} memo;

/* The cache counts a memo's hits a batch at a time: one locked add per hit had been one per
 * eager op. */
enum { HITS_STEP = 256 };
static void add_hits(memo *m) {
  hl_cache_count_hits(m->hits);
  m->hits = 0;
}
static void count_hit(memo *m) {
  if (++m->hits == HITS_STEP) add_hits(m);
}

static _Thread_local memo mine;

/* A thread's memo lets its kernels go when the thread ends (hosts may run ops on many threads). */
static _Thread_local hl_thread_exit memo_exit;
static void forget(memo *m) {
  for (int s = 0; s < NSLOTS; s++) {
    hl_kernel_release(m->slots[s].kernel);
    m->slots[s].kernel = NULL;
  }
  for (int s = 0; s < NLANES; s++) {
    hl_kernel_release(m->lanes[s].kernel);
    m->lanes[s].kernel = NULL;
  }
}
static void forget_at_exit(void *p) {
  forget(p);
  add_hits(p);
}

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

/* (the lookups below take the thread's memo once and pass it on: hl_tls.h) */
static slot *slot_of(memo *m, const hl_eager_sig *sig) {
  uint64_t h = 0;
  for (size_t k = 0; k < sizeof *sig; k += sizeof(uint64_t)) {
    uint64_t w;
    memcpy(&w, (const char *)sig + k, sizeof w);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
  }
  return &m->slots[(h >> 40) % NSLOTS];
}

/* An entry left the cache (evicted, cleared): its kernel is to be freed, so the memo lets go of
 * all it holds rather than keep it alive. 1 when it did. */
static int stale(memo *m) {
  unsigned long gen = hl_cache_generation();
  if (gen == m->generation) return 0;
  forget(m);
  m->generation = gen;
  return 1;
}

struct hl_kernel *hl_eager_memo_find(const hl_eager_sig *sig) {
  memo *m = &mine;
  HL_TLS_KEEP(m);
  if (stale(m)) return NULL;
  slot *s = slot_of(m, sig);
  if (!s->kernel || memcmp(&s->sig, sig, sizeof *sig) != 0) return NULL;
  hl_kernel_note_use(s->kernel);
  hl_kernel_retain(s->kernel);
  count_hit(m);
  return s->kernel;
}

void hl_eager_memo_put(const hl_eager_sig *sig, struct hl_kernel *k) {
  hl_thread_exit_add(&memo_exit, forget_at_exit, &mine);
  slot *s = slot_of(&mine, sig);
  hl_kernel_retain(k);
  hl_kernel_release(s->kernel);
  memcpy(&s->sig, sig, sizeof *sig);
  s->kernel = k;
}

void hl_eager_memo_forget(void) {
  forget(&mine);
  mine.hits = 0;   /* (the cache was cleared, its counts with it) */
}

void hl_eager_memo_count_hits(void) { add_hits(&mine); }

static lane *lane_of(memo *m, const hl_eager_lane_key *key) {
  unsigned h = (unsigned)key->prim * 31u + (unsigned)key->nin * 7u + key->broadcast * 131u;
  for (int k = 0; k < key->nin; k++) h = h * 17u + (unsigned)key->dtype[k];
  return &m->lanes[h % NLANES];
}

static int same_key(const hl_eager_lane_key *a, const hl_eager_lane_key *b) {
  if (a->prim != b->prim || a->nin != b->nin || a->broadcast != b->broadcast) return 0;
  for (int k = 0; k < a->nin; k++)
    if (a->dtype[k] != b->dtype[k]) return 0;
  return 1;
}

struct hl_kernel *hl_eager_lane_find(const hl_eager_lane_key *key, hl_dtype *dtype) {
  memo *m = &mine;
  HL_TLS_KEEP(m);
  if (stale(m)) return NULL;
  lane *l = lane_of(m, key);
  if (!l->kernel || !same_key(&l->key, key)) return NULL;
  hl_kernel_note_use(l->kernel);
  count_hit(m);
  *dtype = l->dtype;
  return l->kernel;
}

void hl_eager_lane_put(const hl_eager_lane_key *key, struct hl_kernel *k, hl_dtype dtype) {
  hl_thread_exit_add(&memo_exit, forget_at_exit, &mine);
  lane *l = lane_of(&mine, key);
  hl_kernel_retain(k);
  hl_kernel_release(l->kernel);
  l->key = *key;
  l->dtype = dtype;
  l->kernel = k;
}
