/* core.loop_record: a compiled loop (engine/runtime/hl_loop.h) recorded into the enclosing jit trace.
 *
 *   core.loop_record{kind = "fori" | "while" | "scan", trace = enclosing trace,
 *                    body = body trace, body_out = {tracers}, cond = trace, cond_out = tracer,
 *                    lo = n, hi = n, ncarry = n, inputs = {carries..., scanned arrays...},
 *                    name = "fori_loop"} -> one tracer per result (carries, then stacked ys)
 *
 * The body's arguments are [i (fori)] carries [rows of the scanned arrays (scan)]; its results
 * the new carries [and the step's outputs (scan)]. */
#include "hl_error.h"
#include "hl_loop.h"
#include "hl_lua_loop.h"
#include "hl_lua_value.h"
#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int field_int(lua_State *L, const char *name) {
  lua_getfield(L, 1, name);
  int64_t v = (int64_t)lua_tonumber(L, -1);
  lua_pop(L, 1);
  return (int)v;
}

/* the arrays of list field `name` (kept referenced by the spec table) */
static int field_arrays(lua_State *L, const char *name, const hl_array **out, int max) {
  lua_getfield(L, 1, name);
  int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
  if (n > max) n = max + 1;
  for (int k = 0; k < n && k < max; k++) {
    lua_rawgeti(L, -1, k + 1);
    out[k] = hl_lua_to_array(L, -1);
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return n;
}

/* each abstract capture of p becomes a loop input (shared when two captures are the same value) */
static int map_captures(const hl_program *p, int **src, const hl_array **inputs, int *ninputs, const char *name) {
  *src = calloc((size_t)(p->ncaptures ? p->ncaptures : 1), sizeof(int));
  if (!*src) return hl_error("out of memory");
  for (int c = 0; c < p->ncaptures; c++) {
    const hl_array *a = &p->captures[c];
    (*src)[c] = -1;
    if (!a->graph) continue;
    int k = 0;
    while (k < *ninputs && !(inputs[k]->graph == a->graph && inputs[k]->node == a->node)) k++;
    if (k == *ninputs) {
      if (*ninputs == HL_MAX_LOOP_INPUTS)
        return hl_error("%s: the loop uses more than %d arrays (carries, scanned arrays and values from outside "
                        "its body together)", name, HL_MAX_LOOP_INPUTS);
      inputs[(*ninputs)++] = a;
    }
    (*src)[c] = k;
  }
  return 0;
}

/* a program runs with at most 64 arrays: said when the loop is traced, not when it runs */
static int check_arrays(const hl_program *p, const char *name) {
  int n = p->nargs + p->ncaptures;
  if (n > 64)
    return hl_error("%s: the loop's body uses %d arrays (its arguments and the values it uses from outside), "
                    "more than 64", name, n);
  return 0;
}

static int l_loop_record(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_getfield(L, 1, "name");
  const char *name = luaL_optstring(L, -1, "loop");
  lua_pop(L, 1);
  lua_getfield(L, 1, "kind");
  const char *kind = luaL_checkstring(L, -1);
  lua_pop(L, 1);
  lua_getfield(L, 1, "trace");
  int outer_idx = lua_gettop(L);
  hl_trace *outer = hl_lua_check_trace(L, outer_idx);
  lua_getfield(L, 1, "body");
  hl_trace *body = hl_lua_check_trace(L, -1);
  lua_getfield(L, 1, "cond");
  hl_trace *cond = lua_isnil(L, -1) ? NULL : hl_lua_check_trace(L, -1);

  hl_loop *l = hl_loop_new();
  if (!l) return hl_lua_raise(L);
  snprintf(l->name, sizeof l->name, "%s", name);
  l->kind = !strcmp(kind, "fori") ? HL_LOOP_FORI : !strcmp(kind, "while") ? HL_LOOP_WHILE : HL_LOOP_SCAN;
  l->lo = field_int(L, "lo");
  l->hi = field_int(L, "hi");
  l->ncarry = field_int(L, "ncarry");
  const hl_array *inputs[HL_MAX_LOOP_INPUTS + 1], *outs[64];
  int ninputs = field_arrays(L, "inputs", inputs, HL_MAX_LOOP_INPUTS);
  int nout = field_arrays(L, "body_out", outs, 63);
  if (ninputs > HL_MAX_LOOP_INPUTS || nout > 63) {
    hl_loop_discard(l);
    return hl_lua_raisef(L, "halua: %s: the loop carries or scans more than %d arrays", name, HL_MAX_LOOP_INPUTS);
  }
  l->nxs = ninputs - l->ncarry;
  l->nys = nout - l->ncarry;
  l->nresults = nout;
  if (body->g.device != outer->g.device || (cond && cond->g.device != outer->g.device)) {
    hl_error("%s: internal: the loop's body is traced for another device than its pipeline", name);
    goto fail;
  }
  /* (the programs are compiled when the loop first runs: hl_loop.h) */
  if (hl_program_prepare(body, nout, outs, &l->body) || check_arrays(&l->body, name) ||
      map_captures(&l->body, &l->body_src, inputs, &ninputs, name))
    goto fail;
  if (cond) {
    const hl_array *c[1];
    if (field_arrays(L, "cond_out", c, 1) != 1 || hl_program_prepare(cond, 1, c, &l->cond) ||
        check_arrays(&l->cond, name) || map_captures(&l->cond, &l->cond_src, inputs, &ninputs, name))
      goto fail;
  }
  l->ninputs = ninputs;
  l->input_types = calloc((size_t)ninputs + 1, sizeof(hl_type));
  l->result_types = calloc((size_t)nout + 1, sizeof(hl_type));
  if (!l->input_types || !l->result_types) {
    hl_error("out of memory");
    goto fail;
  }
  for (int k = 0; k < ninputs; k++) {
    l->input_types[k].dtype = inputs[k]->dtype;
    l->input_types[k].ndim = inputs[k]->ndim;
    memcpy(l->input_types[k].shape, inputs[k]->shape, sizeof inputs[k]->shape);
  }
  for (int k = 0; k < nout; k++) {
    hl_type *t = &l->result_types[k];
    *t = l->body.g.nodes[l->body.g.outputs[k]].type;
    if (k >= l->ncarry) {   /* a step's output, stacked along a new first axis */
      if (t->ndim == HL_MAX_DIMS) {
        hl_error("%s: the stacked outputs would have more than %d axes", name, HL_MAX_DIMS);
        goto fail;
      }
      memmove(t->shape + 1, t->shape, sizeof(int64_t) * (size_t)t->ndim);
      t->shape[0] = l->hi;
      t->ndim++;
    }
  }
  hl_type types[64];
  memcpy(types, l->result_types, sizeof(hl_type) * (size_t)nout);
  int id = hl_loop_register(l);
  if (id < 0) return hl_lua_raise(L);
  for (int k = 0; k < nout; k++) {
    hl_attrs at;
    memset(&at, 0, sizeof at);
    at.i[0] = id;
    at.i[1] = k;
    at.dtype = types[k].dtype;
    at.nshape = types[k].ndim;
    memcpy(at.shape, types[k].shape, sizeof at.shape);
    hl_array r;
    if (hl_trace_apply(outer, HL_P_LOOP, ninputs, inputs, &at, &r)) return hl_lua_raise(L);
    hl_lua_push_tracer(L, &r, outer_idx);
  }
  return nout;
fail:
  hl_loop_discard(l);
  return hl_lua_raise(L);
}

/* trace_device(trace) -> "cpu" or "cuda": where its pipeline runs (graph device 0 is the host) */
static int l_trace_device(lua_State *L) {
  lua_pushstring(L, hl_lua_check_trace(L, 1)->g.device == 0 ? "cpu" : "cuda");
  return 1;
}

/* trace_floor(trace or nil): see hl_trace_set_floor */
static int l_trace_floor(lua_State *L) {
  hl_trace_set_floor(lua_isnoneornil(L, 1) ? NULL : hl_lua_check_trace(L, 1));
  return 0;
}

void hl_lua_register_loop(lua_State *L, int core_idx) {
  lua_pushcfunction(L, l_trace_floor);
  lua_setfield(L, core_idx, "trace_floor");
  lua_pushcfunction(L, l_loop_record);
  lua_setfield(L, core_idx, "loop_record");
  lua_pushcfunction(L, l_trace_device);
  lua_setfield(L, core_idx, "trace_device");
}
