#include "hl_runtime.h"
#include "hl_backend.h"
#include "hl_eval.h"
#include "hl_loop.h"
#include <pthread.h>

static int loop_info(int id, hl_loop_info *out) {
  const hl_loop *l = hl_loop_get(id);
  if (!l) return -1;
  int is_while = l->kind == HL_LOOP_WHILE;
  *out = (hl_loop_info){
      .kind = l->kind,
      .device = l->body.g.device,
      .lo = l->lo,
      .hi = l->hi,
      .ncarry = l->ncarry,
      .nxs = l->nxs,
      .nys = l->nys,
      .ninputs = l->ninputs,
      .nresults = l->nresults,
      .input_types = l->input_types,
      .result_types = l->result_types,
      .body = &l->body.g,
      .cond = is_while ? &l->cond.g : NULL,
      .body_ncaptures = l->body.ncaptures,
      .cond_ncaptures = is_while ? l->cond.ncaptures : 0,
      .body_captures = l->body.captures,
      .cond_captures = is_while ? l->cond.captures : NULL,
      .body_src = l->body_src,
      .cond_src = is_while ? l->cond_src : NULL,
      .nsym = l->nsym,
      .input_forms = l->input_forms,
      .result_forms = l->result_forms,
  };
  return 0;
}

static const hl_runtime_hooks hooks = {
    .release_kept = hl_loop_release_kept,
    .loop_info = loop_info,
    .loop_id = hl_program_loop_id,
    .loop_result = hl_loop_result,
    .matmul_into = hl_matmul_into,
};

static void start(void) { hl_backend_set_hooks(&hooks); }

void hl_runtime_start(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, start);
}
