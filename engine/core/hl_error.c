#include "hl_error.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char error_message[1024];
static hl_error_hook error_hook;

int hl_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(error_message, sizeof error_message, "halua: ");
  vsnprintf(error_message + n, sizeof error_message - (size_t)n, fmt, ap);
  va_end(ap);
  if (error_hook) error_hook(error_message);
  return -1;
}

const char *hl_error_message(void) { return error_message[0] ? error_message : "halua: unknown error"; }
void hl_error_clear(void) { error_message[0] = 0; }
void hl_error_set_hook(hl_error_hook hook) { error_hook = hook; }

struct hl_shape_fmt hl_shape_str(int ndim, const long long *shape) {
  struct hl_shape_fmt f;
  size_t n = 0;
  f.s[n++] = '[';
  for (int i = 0; i < ndim && n < sizeof f.s - 24; i++)
    n += (size_t)snprintf(f.s + n, sizeof f.s - n, i ? ",%lld" : "%lld", shape[i]);
  f.s[n++] = ']';
  f.s[n] = 0;
  return f;
}
