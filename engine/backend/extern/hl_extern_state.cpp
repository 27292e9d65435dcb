/* The engine's record of extern stage failures (hl_extern_view.h), per thread and per pipeline run. */
#include "hl_extern_view.h"
extern "C" {
#include "hl_error.h"
}

/* whether an extern stage of this thread's current pipeline run failed (hl_stage_failed) */
static thread_local bool stage_failed;

bool hl_stage_run_failed() { return stage_failed; }

int hl_stage_failed(int status, const char *what) {
  if (!stage_failed && what) hl_error("%s", what);
  stage_failed = true;
  return status;
}

bool hl_stage_run_begin() {
  bool outer = stage_failed;
  stage_failed = false;
  return outer;
}

bool hl_stage_run_end(bool outer) {
  bool failed = stage_failed;
  stage_failed = outer;
  return failed;
}
