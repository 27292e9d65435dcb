/* The engine's record of extern stage failures (hl_extern_view.h): in the record of this thread's
 * pipeline run (hl_interrupt.h), which hl_kernel_run enters and leaves. */
#include "hl_extern_view.h"
extern "C" {
#include "hl_error.h"
#include "hl_interrupt.h"
}

bool hl_stage_run_failed() { return hl_run_current()->stage_failed; }

int hl_stage_failed(int status, const char *what) {
  hl_run *run = hl_run_current();
  if (!run->stage_failed && what) hl_error("%s", what);
  run->stage_failed = 1;
  return status;
}
