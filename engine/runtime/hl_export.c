#include "hl_export.h"
#include "hl_backend.h"
#include "hl_device.h"
#include "hl_error.h"
#include <stdlib.h>
#include <string.h>

static int is_identifier(const char *s) {
  if (!s || !((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_')) return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
  return 1;
}

int hl_export_trace(hl_trace *t, int nout, const hl_array *const *outputs, const char *dir, const char *name) {
  if (!is_identifier(name) || strlen(name) > 200)
    return hl_error("export: the name must be a C identifier (letters, digits and _, not starting with a digit), got '%s'", name);
  if (nout < 1 || nout > 128) return hl_error("export: a library has 1 to 128 outputs, not %d", nout);
  int ids[128];
  for (int k = 0; k < nout; k++) {
    if (outputs[k]->graph != &t->g) return hl_error("export: output %d is not a value of this trace", k + 1);
    ids[k] = outputs[k]->node;
  }
  hl_graph g;
  if (hl_graph_set_outputs(&t->g, nout, ids) || hl_graph_prune(&t->g, &g)) return -1;
  int rc = -1, ncap = 0;
  hl_array *caps = calloc((size_t)t->ncaptures + 1, sizeof *caps);
  if (!caps) {
    hl_error("out of memory");
    goto done;
  }
  /* the captures become the library's constant data: contiguous, on the host */
  for (; ncap < t->ncaptures; ncap++) {
    hl_array host;
    if (hl_to_device(&t->captures[ncap], HL_DEVICE_CPU, &host)) goto done;
    int c = hl_contiguous(&host, &caps[ncap]);
    hl_array_release(&host);
    if (c) goto done;
  }
  rc = hl_kernel_export(&g, t->ncaptures, caps, dir, name);
done:
  for (int k = 0; k < ncap; k++) hl_array_release(&caps[k]);
  free(caps);
  hl_graph_free(&g);
  return rc;
}
