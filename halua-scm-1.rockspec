-- LuaRocks: `luarocks make` in a checkout builds halua with CMake and installs the Lua modules
-- (halua/*.lua) and the engine module (halua_core.so) into the rocks tree, plus libhalua, halua.h
-- and halua.pc under the rock's prefix for C hosts. Needs LuaJIT (halua uses its FFI and 5.1 API),
-- Halide 14 (Debian: libhalide14-0-dev), zlib, LAPACK (liblapack-dev; CMake's find_package finds
-- it, as LuaRocks' library search misses multiarch directories on some systems), CMake and
-- pkg-config.
rockspec_format = "3.0"
package = "halua"
version = "scm-1"
source = {
  -- the project's repository; `luarocks make` in a checkout does not fetch it
  url = "git+https://example.com/halua.git",
}
description = {
  license = "MIT",
  summary = "A Lua-scriptable numerical engine: NumPy-style arrays, jit through Halide, autodiff",
  detailed = [[
Scripts running on LuaJIT build array programs with a NumPy-like API; pure functions are traced
once per input signature, compiled through Halide into fused, vectorised CPU (or CUDA) code and
cached. Includes a C API (halua.h, libhalua) for embedding in host applications.
]],
}
dependencies = {
  "lua >= 5.1, < 5.2",   -- LuaJIT reports itself as Lua 5.1
}
external_dependencies = {
  HALIDE = { header = "halide14/Halide.h" },
  ZLIB = { header = "zlib.h" },
}
build = {
  type = "cmake",
  variables = {
    CMAKE_BUILD_TYPE = "Release",
    CMAKE_INSTALL_PREFIX = "$(PREFIX)",
    -- where LuaRocks wants this rock's Lua modules and C modules (absolute paths)
    HALUA_INSTALL_LMOD = "$(LUADIR)",
    HALUA_INSTALL_CMOD = "$(LIBDIR)",
  },
}
