/* .npy / .npz files (placeholder registration until the file formats land). */
#include "hl_lua.h"

void hl_lua_register_io(lua_State *L, int core_idx) {
  (void)L;
  (void)core_idx;
}
