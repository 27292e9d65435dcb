/* Cutting a program into pipelines (hl_partition.h). */
#include "hl_partition.h"
#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include "hl_device.h"
#include "hl_symbolic.h"
extern "C" {
#include "hl_error.h"
}

hl_plan::~hl_plan() { clear(); }

std::vector<int> hl_plan::distinct() const {
  std::vector<int> d;
  for (size_t q = 0; q < same_as.size(); q++)
    if (same_as[q] == (int)q) d.push_back((int)q);
  return d;
}

/* a part's compile cost in rough units of an elementwise stage, measured on the MLP train step's
 * parts (2026-11-28: 3 products and 11 other stages 178 ms, 1 product and 16 others 83 ms, none
 * and 14 others 45 ms) */
static int compile_cost(const hl_graph &g) {
  int cost = 1;
  for (int i = 0; i < g.nnodes; i++) {
    switch (hl_prims[g.nodes[i].prim].kind) {
      case HL_K_MATMUL: cost += 8; break;
      case HL_K_REDUCE: cost += 2; break;
      case HL_K_SOURCE:
      case HL_K_VIEW: break;   /* (values in their readers: no stage of their own) */
      default: cost += 1; break;
    }
  }
  return cost;
}

std::vector<int> hl_plan::distinct_costliest_first() const {
  std::vector<int> d = distinct();
  std::vector<int> cost(parts.size(), 0);
  for (int q : d) cost[q] = compile_cost(parts[q].g);
  std::stable_sort(d.begin(), d.end(), [&](int a, int b) { return cost[a] > cost[b]; });
  return d;
}

void hl_plan::clear() {
  for (hl_part &p : parts) hl_graph_free(&p.g);
  parts.clear();
  between.clear();
  between_extents.clear();
  born.clear();
  dies.clear();
  same_as.clear();
  constants.clear();
}

namespace {

void check(int rc) {
  if (rc < 0) throw std::runtime_error(hl_error_message());
}

/* Nodes every part can have for nothing: parameters (read from their slots), constants and
 * indices (values in their consumers), and views of those (index maps over them). */
std::vector<char> free_nodes(const hl_graph *g) {
  std::vector<char> f(g->nnodes, 0);
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    hl_prim_kind kind = hl_prims[n.prim].kind;
    f[i] = kind == HL_K_SOURCE || (kind == HL_K_VIEW && f[hl_node_inputs(g, &n)[0]]);
  }
  return f;
}

/* Constants a repeated program may take from buffers instead of holding them (hl_plan::constants):
 * finite float32 or float64 scalars that only sums, differences, products, maxima and minima use
 * (through broadcasts and reshapes), the operations where a value from memory compiles as the
 * constant does. An unrolled loop's rounds that differ only in such a constant are then one
 * program. (Constants not finite in their dtype, divisors and exponents keep the handling
 * hl_lower.cpp gives them; a folded constant may also round differently in its last bit.) */
std::vector<char> liftable(const hl_graph *g) {
  int n = g->nnodes;
  std::vector<std::vector<int>> users(n);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) users[hl_node_inputs(g, &g->nodes[i])[k]].push_back(i);
  std::vector<char> output(n, 0), ok(n, 0);
  for (int k = 0; k < g->noutputs; k++) output[g->outputs[k]] = 1;
  /* (users come after their inputs: a view's answer is known before its source asks) */
  for (int i = n - 1; i >= 0; i--) {
    const hl_node &nd = g->nodes[i];
    bool view = nd.prim == HL_P_BROADCAST || nd.prim == HL_P_RESHAPE;
    /* (a polymorphic program's constant that is a size computes at each call: hl_lower.cpp; 0
     * and 1 stay, whose identities Halide's simplifier applies: x * 0 folded is 0 even for NaN) */
    double f = nd.attrs.f;
    bool scalar = nd.prim == HL_P_CONST && nd.type.ndim == 0 && (nd.type.dtype == HL_FLOAT32 || nd.type.dtype == HL_FLOAT64) &&
                  hl_finite_in(nd.type.dtype, f) && f != 0 && f != 1 && f != -1 &&
                  !(g->sym && hl_sym_find(g->sym, i, HL_SYM_VALUE, 0));
    if ((!view && !scalar) || output[i] || users[i].empty()) continue;
    bool all = true;
    for (int u : users[i]) {
      int pu = g->nodes[u].prim;
      all = all && (ok[u] || pu == HL_P_ADD || pu == HL_P_SUB || pu == HL_P_MUL || pu == HL_P_MAXIMUM || pu == HL_P_MINIMUM);
    }
    ok[i] = all;
  }
  for (int i = 0; i < n; i++) ok[i] = ok[i] && g->nodes[i].prim == HL_P_CONST;
  return ok;
}

/* Builds one part's sub-graph: `local` maps the whole program's nodes to the part's. */
struct PartBuilder {
  const hl_graph *g;
  const std::vector<char> &is_free, *lift;
  const std::vector<int> &part_of, &slot_of;
  hl_part &part;
  int q;
  std::vector<int> local;

  /* node i as the part sees it: its own node, a copy of a free one, or a parameter for a value
   * another part (or the caller) has put in a slot, a lifted constant's among them */
  int get(int i) {
    if (local[i] >= 0) return local[i];
    const hl_node &n = g->nodes[i];
    int id;
    if (n.prim == HL_P_PARAM || (!is_free[i] && part_of[i] != q) || (lift && (*lift)[i])) {
      int slot = n.prim == HL_P_PARAM ? (int)n.attrs.i[0] : slot_of[i];
      if (slot < 0) throw std::runtime_error("halua: internal: a value crosses pipelines without a buffer");
      id = hl_graph_add_param(&part.g, n.type.dtype, n.type.ndim, n.type.shape);
      check(id);
      part.slots.push_back(slot);
    } else {
      int ins[64];
      for (int k = 0; k < n.nin; k++) ins[k] = get(hl_node_inputs(g, &n)[k]);
      id = hl_graph_add(&part.g, n.prim, n.nin, ins, &n.attrs);
      check(id);
    }
    return local[i] = id;
  }
};

/* ---- where a program repeats itself ---- */

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* a node by what it is, not by which: its primitive, type and attributes (a parameter's number
 * does not count, so layer k's weight and layer k + 1's look alike) */
uint64_t node_content(const hl_graph *g, int i) {
  const hl_node &n = g->nodes[i];
  uint64_t h = mix((uint64_t)n.prim, (uint64_t)n.type.dtype);
  for (int a = 0; a < n.type.ndim; a++) h = mix(h, (uint64_t)n.type.shape[a]);
  if (n.prim != HL_P_PARAM) {
    int na = hl_attr_count(n.prim, n.type.ndim);
    for (int k = 0; k < na; k++) h = mix(h, (uint64_t)n.attrs.i[k]);
    uint64_t f;
    memcpy(&f, &n.attrs.f, sizeof f);
    h = mix(h, f);
  }
  return h;
}

/* a free node (a parameter, constant, index, or a view of those) with what it is made of; a
 * lifted constant by its type (it is a parameter of the part) */
uint64_t free_hash(const hl_graph *g, int i, const std::vector<char> *lift) {
  const hl_node &n = g->nodes[i];
  if (lift && (*lift)[i]) return mix(HL_P_PARAM, (uint64_t)n.type.dtype);
  uint64_t h = node_content(g, i);
  for (int k = 0; k < n.nin; k++) h = mix(h, free_hash(g, hl_node_inputs(g, &n)[k], lift));
  return h;
}

/* Where the parts end, into part_of (the part of each node that is not free); the number of
 * parts. Content-defined, as in deduplicating backups: each node gets a hash of itself and of its
 * inputs (a node before it in the part order by its distance, a free one by free_hash), mixed with
 * the two nodes before it; a node whose hash is the least within kAnchorReach places either side
 * (ties included) is an anchor, and a part ends at the first anchor once it has min_size nodes, or
 * at kPartMax.
 * A program that repeats itself (an unrolled loop's rounds, a deep network's layers and their
 * gradients) then repeats its cuts, and so its parts: identical parts are compiled once
 * (hl_plan::same_as). */
int cut_points(const hl_graph *g, const std::vector<char> &is_free, const std::vector<char> *lift, std::vector<int> &part_of,
               int min_size) {
  std::vector<int> seq, place(g->nnodes, -1);
  for (int i = 0; i < g->nnodes; i++)
    if (!is_free[i]) {
      place[i] = (int)seq.size();
      seq.push_back(i);
    }
  int m = (int)seq.size();
  std::vector<uint64_t> own(m), h(m);
  for (int s = 0; s < m; s++) {
    const hl_node &n = g->nodes[seq[s]];
    uint64_t v = node_content(g, seq[s]);
    for (int k = 0; k < n.nin; k++) {
      int u = hl_node_inputs(g, &n)[k];
      /* (an input from afar by its type alone: the backward pass reads the forward one's values
       * from ever farther back, layer after layer) */
      int far = !is_free[u] && s - place[u] > kAnchorReach;
      v = mix(v, is_free[u] ? free_hash(g, u, lift) : far ? mix(~0ull, node_content(g, u)) : (uint64_t)(s - place[u]));
    }
    own[s] = v;
    h[s] = mix(mix(v, s > 0 ? own[s - 1] : 0), s > 1 ? own[s - 2] : 0);
  }
  auto anchor = [&](int s) {
    for (int t = std::max(0, s - kAnchorReach); t <= std::min(m - 1, s + kAnchorReach); t++)
      if (h[t] < h[s]) return false;   /* (ties are all anchors: a repeated stretch repeats its least hash) */
    return true;
  };
  int part = 0, size = 0;
  for (int s = 0; s < m; s++) {
    part_of[seq[s]] = part;
    size++;
    if (s < m - 1 && ((size >= min_size && anchor(s)) || size == kPartMax)) {
      part++;
      size = 0;
    }
  }
  return part + 1;
}

/* The plan of g's parts (part_of: each node's that is not free, nparts of them): the buffers
 * between them, each part's program and slots, and which parts share one program. */
void build_parts(const hl_graph *g, const std::vector<char> &is_free, const std::vector<char> *lift,
                 const std::vector<int> &param_node, const std::vector<int> &part_of, int nparts, hl_plan &plan) {
  /* where each value lives once made: the first output that is it, else a buffer between parts
   * when a later part reads it */
  plan.nparams = g->nparams;
  plan.noutputs = g->noutputs;
  std::vector<int> slot_of(g->nnodes, -1), last_reader(g->nnodes, -1);
  for (int k = g->noutputs - 1; k >= 0; k--)
    if (!is_free[g->outputs[k]]) slot_of[g->outputs[k]] = g->nparams + k;
  /* a free node read by a later part is copied there: its own inputs are what that part reads */
  std::vector<int> reader(g->nnodes, -1);   /* the part each node is (copied) into, for this walk */
  for (int i = 0; i < g->nnodes; i++) {
    if (is_free[i]) continue;
    const hl_node &n = g->nodes[i];
    std::vector<int> todo(hl_node_inputs(g, &n), hl_node_inputs(g, &n) + n.nin);
    while (!todo.empty()) {
      int s = todo.back();
      todo.pop_back();
      if (is_free[s]) {
        if (reader[s] == part_of[i]) continue;
        reader[s] = part_of[i];
        const hl_node &sn = g->nodes[s];
        todo.insert(todo.end(), hl_node_inputs(g, &sn), hl_node_inputs(g, &sn) + sn.nin);
      } else if (part_of[s] != part_of[i]) {
        last_reader[s] = std::max(last_reader[s], part_of[i]);
      }
    }
  }
  for (int i = 0; i < g->nnodes; i++) {
    if (last_reader[i] < 0 || slot_of[i] >= 0) continue;
    slot_of[i] = g->nparams + g->noutputs + (int)plan.between.size();
    plan.between.push_back(g->nodes[i].type);
    plan.born.push_back(part_of[i]);
    plan.dies.push_back(last_reader[i]);
    std::vector<hl_between_extent> ext(g->nodes[i].type.ndim);
    for (int a = 0; g->sym && a < g->nodes[i].type.ndim; a++)
      if (const hl_sym_slot *sl = hl_sym_find(g->sym, i, HL_SYM_SHAPE, a)) {
        ext[a].symbolic = true;
        ext[a].form = *sl;
      }
    plan.between_extents.push_back(ext);
  }
  /* lifted constants: a slot each after the buffers between parts */
  for (int i = 0; lift && i < g->nnodes; i++)
    if ((*lift)[i]) {
      slot_of[i] = g->nparams + g->noutputs + (int)plan.between.size() + (int)plan.constants.size();
      hl_plan::constant c{g->nodes[i].type.dtype, {}};
      if (c.dtype == HL_FLOAT64) c.value.f64 = g->nodes[i].attrs.f;
      else c.value.f32 = (float)g->nodes[i].attrs.f;   /* (as the lowering rounds a constant) */
      plan.constants.push_back(c);
    }
  if (g->sym) {
    plan.nsym = g->sym->nsym;
    for (int j = 0; j < plan.nsym; j++) {
      plan.sym_param[j] = g->sym->param[j];
      plan.sym_axis[j] = g->sym->axis[j];
    }
  }

  plan.parts.resize(nparts);
  for (hl_part &p : plan.parts) hl_graph_init(&p.g);
  for (int q = 0; q < nparts; q++) {
    hl_part &p = plan.parts[q];
    p.g.device = g->device;
    PartBuilder b{g, is_free, lift, part_of, slot_of, p, q, std::vector<int>(g->nnodes, -1)};
    /* (a polymorphic program's part reads its symbols from the parameters they come from) */
    for (int j = 0; g->sym && j < g->sym->nsym; j++) b.get(param_node[g->sym->param[j]]);
    std::vector<int> outs, out_slots;
    for (int i = 0; i < g->nnodes; i++) {
      if (part_of[i] != q) continue;
      b.get(i);
      if (last_reader[i] >= 0 && slot_of[i] >= g->nparams + g->noutputs) {
        outs.push_back(b.local[i]);
        out_slots.push_back(slot_of[i]);
      }
    }
    /* the caller's outputs: each where its node is made; free ones (a parameter returned as it
     * is, a constant) in the last part */
    for (int k = 0; k < g->noutputs; k++) {
      int i = g->outputs[k];
      if (is_free[i] ? q != nparts - 1 : part_of[i] != q) continue;
      outs.push_back(b.get(i));
      out_slots.push_back(g->nparams + k);
    }
    check(hl_graph_set_outputs(&p.g, (int)outs.size(), outs.data()));
    p.slots.insert(p.slots.end(), out_slots.begin(), out_slots.end());
    if (g->sym) {   /* the part's share of the table: its nodes' forms, its own parameter numbers */
      std::vector<int> param_map(g->nparams, -1);
      for (int pn = 0; pn < g->nparams; pn++)
        if (param_node[pn] >= 0 && b.local[param_node[pn]] >= 0) param_map[pn] = (int)p.g.nodes[b.local[param_node[pn]]].attrs.i[0];
      if (!(p.g.sym = hl_sym_remap(g->sym, p.g.nnodes, b.local.data(), param_map.data(), 0))) check(-1);
    }
  }
  /* a part of which nothing is used (nodes no output reads) is no pipeline: dropped */
  std::vector<int> renumber(nparts, -1);
  int kept = 0;
  for (int q = 0; q < nparts; q++) {
    if (plan.parts[q].g.noutputs == 0) {
      hl_graph_free(&plan.parts[q].g);
      continue;
    }
    renumber[q] = kept;
    if (kept != q) std::swap(plan.parts[kept], plan.parts[q]);
    kept++;
  }
  plan.parts.resize(kept);
  for (size_t s = 0; s < plan.born.size(); s++) {
    plan.born[s] = renumber[plan.born[s]];
    plan.dies[s] = renumber[plan.dies[s]];
  }
  /* parts with one program (their key: the same nodes in the same order, the same parameter
   * types, constants and forms) share one compiled function */
  std::vector<hl_key> keys(kept);
  plan.same_as.assign(kept, 0);
  for (int q = 0; q < kept; q++) {
    keys[q] = hl_key{};
    hl_graph_key(&plan.parts[q].g, &keys[q]);
    plan.same_as[q] = q;
    for (int r = 0; r < q && plan.same_as[q] == q; r++)
      if (plan.same_as[r] == r && keys[r].hash == keys[q].hash && keys[r].len == keys[q].len &&
          !memcmp(keys[r].bytes, keys[q].bytes, keys[q].len))
        plan.same_as[q] = r;
  }
  for (hl_key &k : keys) hl_key_free(&k);
}

}  // namespace

bool hl_plan_make(const hl_graph *g0, hl_plan &plan) {
  if (g0->dynamic || g0->device != HL_DEVICE_CPU || g0->schedule) return false;
  std::vector<char> is_free = free_nodes(g0);
  int total = 0;
  for (int i = 0; i < g0->nnodes; i++) total += !is_free[i];
  if (total <= kPartNodes) return false;   /* (the same count in any order: one pipeline either way) */

  hl_graph c;
  std::vector<int> pos(g0->nnodes);
  check(hl_graph_canonical(g0, &c, pos.data()));
  struct Owner {
    hl_graph *g;
    ~Owner() { hl_graph_free(g); }
  } owner{&c};
  std::vector<int> param_node(g0->nparams, -1);
  if (g0->sym && !(c.sym = hl_sym_remap(g0->sym, c.nnodes, pos.data(), nullptr, 1))) check(-1);
  const hl_graph *g = &c;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM && g->nodes[i].attrs.i[0] >= 0 && g->nodes[i].attrs.i[0] < g->nparams)
      param_node[g->nodes[i].attrs.i[0]] = i;
  for (int j = 0; g->sym && j < g->sym->nsym; j++)   /* (every symbol is read from a parameter of the program) */
    if (g->sym->param[j] < 0 || g->sym->param[j] >= g->nparams || param_node[g->sym->param[j]] < 0) return false;
  is_free = free_nodes(g);

  /* First cut where the program repeats itself, in parts as small as kRepeatMin nodes, each
   * distinct one compiled once: kept when their nodes are at most kRepeatShare of the program's (a
   * deep network, an unrolled loop). Else parts of equal size, kPartNodes at most: small parts
   * would only cost buffers between them. Both in canonical order (each node after its inputs). */
  std::vector<int> part_of(g->nnodes, -1);
  std::vector<char> lift = liftable(g);
  int nparts = cut_points(g, is_free, &lift, part_of, kRepeatMin);
  build_parts(g, is_free, &lift, param_node, part_of, nparts, plan);
  int compiled = 0;   /* the nodes of the distinct parts */
  for (int q : plan.distinct()) {
    std::vector<char> f = free_nodes(&plan.parts[q].g);
    compiled += (int)std::count(f.begin(), f.end(), 0);
  }
  if (compiled > total * kRepeatShare) {
    plan.clear();
    nparts = (total + kPartNodes - 1) / kPartNodes;
    int size = (total + nparts - 1) / nparts;
    for (int i = 0, seen = 0; i < g->nnodes; i++)
      if (!is_free[i]) part_of[i] = seen++ / size;
    build_parts(g, is_free, nullptr, param_node, part_of, nparts, plan);
  }
  return true;
}
