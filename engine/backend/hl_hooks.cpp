#include "hl_hooks.h"
#include <atomic>

static std::atomic<const hl_runtime_hooks *> hooks{nullptr};

extern "C" void hl_backend_set_hooks(const hl_runtime_hooks *h) { hooks = h; }
extern "C" const hl_runtime_hooks *hl_backend_hooks(void) { return hooks; }
