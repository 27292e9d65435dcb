/* ir_key_test: the IR's canonical bytes (the cache key, engine/core/hl_ir.c) per primitive of
 * hl_prims.def. For every primitive, a node's key must hold exactly the attributes its layout
 * names: changing one of them gives another key (another kernel), changing anything outside the
 * layout gives the same key (no needless compile); the key is deterministic, and the primitive,
 * dtype and shape are in it. Exits 1 with a line per failure. */
#include "hl_ir.h"
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                    \
  do {                                      \
    if (!(cond)) {                          \
      fprintf(stderr, "ir_key_test: ");     \
      fprintf(stderr, __VA_ARGS__);         \
      fprintf(stderr, "\n");                \
      failures++;                           \
    }                                       \
  } while (0)

/* a graph of enough [2,3,4] parameters for prim, then one node of prim */
static int build(hl_graph *g, int prim, const hl_attrs *attrs) {
  hl_graph_init(g);
  int64_t shape[3] = {2, 3, 4};
  int arity = hl_prims[prim].arity;
  int nin = arity < 0 ? 2 : arity, ins[4];
  for (int k = 0; k < nin; k++) {
    /* (where's condition is bool; threefry's words are integers) */
    hl_dtype t = nin == 4 ? HL_INT32 : nin == 3 && k == 0 ? HL_BOOL : HL_FLOAT32;
    ins[k] = hl_graph_add_param(g, t, 3, shape);
  }
  /* a node of the right arity whose inference holds (the key does not look at inference), then
   * made into prim */
  static const int carrier[5] = {HL_P_IOTA, HL_P_NEG, HL_P_ADD, HL_P_SELECT, HL_P_THREEFRY};
  hl_attrs none;
  memset(&none, 0, sizeof none);
  none.dtype = HL_FLOAT32;
  none.nshape = 3;
  memcpy(none.shape, shape, sizeof shape);
  int id = hl_graph_add(g, carrier[nin], nin, ins, &none);
  if (id < 0) return -1;
  g->nodes[id].prim = prim;
  g->nodes[id].attrs = *attrs;
  return hl_graph_set_outputs(g, 1, &id);
}

static int same_key(const hl_graph *a, const hl_graph *b, int canonical) {
  hl_key ka = {0}, kb = {0};
  if (canonical) {
    hl_graph_canonical_key(a, &ka);
    hl_graph_canonical_key(b, &kb);
  } else {
    hl_graph_key(a, &ka);
    hl_graph_key(b, &kb);
  }
  int same = ka.len == kb.len && memcmp(ka.bytes, kb.bytes, ka.len) == 0;
  hl_key_free(&ka);
  hl_key_free(&kb);
  return same;
}

static void pattern(hl_attrs *a) {
  memset(a, 0, sizeof *a);
  for (int j = 0; j < 2 * HL_MAX_DIMS; j++) a->i[j] = j % 3;
  a->f = 0.5;
  a->dtype = HL_FLOAT32;
}

int main(void) {
  /* the layouts' sizes, as hl_prims.def describes them */
  CHECK(hl_attr_count(HL_P_PARAM, 3) == 2, "PARAM holds an index and a stride class");
  CHECK(hl_attr_count(HL_P_SUM, 3) == 1, "a reduction holds one axis mask");
  CHECK(hl_attr_count(HL_P_TRANSPOSE, 3) == 3, "a transpose holds one axis per dimension");
  CHECK(hl_attr_count(HL_P_SLICE, 3) == 2 * HL_MAX_DIMS, "a slice holds starts and steps");
  CHECK(hl_attr_count(HL_P_LOOP, 3) == 2, "a loop result holds the loop and the result");
  CHECK(hl_attr_count(HL_P_SCATTER_ADD, 3) == 3 && hl_attr_count(HL_P_SCATTER, 3) == 3,
        "scatter_add and scatter hold an axis, an extent and a combine mode");
  CHECK(hl_attr_count(HL_P_ADD, 3) == 0 && hl_attr_count(HL_P_CONST, 3) == 0, "add and const hold no integers");

  for (int p = 0; p < HL_NPRIMS; p++) {
    const char *name = hl_prims[p].name;
    hl_attrs base;
    pattern(&base);
    hl_graph g0, g1;
    if (build(&g0, p, &base) || build(&g1, p, &base)) {
      CHECK(0, "%s: building its graph failed", name);
      continue;
    }
    CHECK(same_key(&g0, &g1, 0) && same_key(&g0, &g1, 1), "%s: two equal graphs give different keys", name);
    int count = hl_attr_count(p, 3);
    for (int j = 0; j < 2 * HL_MAX_DIMS; j++) {
      g1.nodes[g1.nnodes - 1].attrs.i[j] += 7;
      int same = same_key(&g0, &g1, 0), same_canonical = same_key(&g0, &g1, 1);
      if (j < count)
        CHECK(!same && !same_canonical, "%s: attribute i[%d] is in its layout but not in the key", name, j);
      else
        CHECK(same && same_canonical, "%s: attribute i[%d] is outside its layout but changes the key", name, j);
      g1.nodes[g1.nnodes - 1].attrs.i[j] -= 7;
    }
    g1.nodes[g1.nnodes - 1].attrs.f = 1.5;
    int value = hl_prims[p].attrs == HL_A_VALUE;
    CHECK(same_key(&g0, &g1, 0) == !value, "%s: the constant value %s the key", name, value ? "is not in" : "wrongly changes");
    g1.nodes[g1.nnodes - 1].attrs.f = base.f;
    /* the primitive, the dtype and the shape are in the key */
    g1.nodes[g1.nnodes - 1].prim = p == HL_P_ADD ? HL_P_SUB : HL_P_ADD;
    CHECK(!same_key(&g0, &g1, 0), "%s: another primitive gives the same key", name);
    g1.nodes[g1.nnodes - 1].prim = p;
    g1.nodes[g1.nnodes - 1].type.dtype = HL_FLOAT64;
    CHECK(!same_key(&g0, &g1, 0), "%s: another dtype gives the same key", name);
    g1.nodes[g1.nnodes - 1].type.dtype = g0.nodes[g0.nnodes - 1].type.dtype;
    g1.nodes[g1.nnodes - 1].type.shape[0] += 1;
    CHECK(!same_key(&g0, &g1, 0), "%s: another shape gives the same key", name);
    hl_graph_free(&g0);
    hl_graph_free(&g1);
  }
  if (failures) return 1;
  printf("ir_key_test: the key of each of %d primitives holds exactly its attributes\n", (int)HL_NPRIMS);
  return 0;
}
