#!/bin/sh
# Installs the build into a temporary prefix, builds the C host samples against it with nothing
# but pkg-config, and runs them; then checks that plain luajit finds the installed modules on
# the prefix's share/lua/5.1 and lib/lua/5.1 (the directories LuaJIT searches under /usr/local).
#   embed_install_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
prefix=$(mktemp -d /tmp/halua-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
# lib/ or lib/<multiarch>/, as GNUInstallDirs chose for the configured prefix
pc=$(find "$prefix" -name halua.pc)
core=$(find "$prefix" -name halua_core.so)
export PKG_CONFIG_PATH="$(dirname "$pc")"
flags=$(pkg-config --cflags --libs halua)
libdir=$(pkg-config --variable=libdir halua)
for sample in predict threads; do
  cc -std=c11 -Wall -Wextra -Werror -O2 "$src/samples/embed/$sample.c" -o "$prefix/$sample" $flags -lm -pthread \
    -Wl,-rpath,"$libdir"
done
# no HALUA_LUA_DIR: libhalua finds the modules relative to where it is installed
unset HALUA_LUA_DIR LUA_PATH LUA_CPATH
cd "$src/samples/embed"
"$prefix/predict" model.lua | tail -n 1
"$prefix/threads" model.lua | tail -n 1
# the Lua module, as LuaJIT finds it in a prefix like /usr/local
LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua" LUA_CPATH="$(dirname "$core")/?.so" \
  luajit -e 'local hl = require "halua"; assert(hl.ones(3):sum():item() == 3); print("luajit: require \"halua\" ok")'
# hl.export from the installed tree (libhalua_export.a in its libdir), and a C program linking the result
OUT="$prefix/export" LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua" LUA_CPATH="$(dirname "$core")/?.so" \
  luajit -e 'local hl = require "halua"; hl.export(function(x) return x * 2 + 1 end, {hl.ones(3)}, os.getenv("OUT"), "twice")'
cat > "$prefix/export/main.c" <<'CEOF'
#include <stdio.h>
#include "twice.h"
int main(void) {
  float x[3] = {1, 2, 3}, y[3];
  const void *in[TWICE_NUM_INPUTS] = {x};
  void *out[TWICE_NUM_OUTPUTS] = {y};
  if (twice(in, out) || y[0] != 3 || y[1] != 5 || y[2] != 7) return 1;
  puts("hl.export from the installed tree ok");
  return 0;
}
CEOF
cc "$prefix/export/main.c" -I "$prefix/export" "$prefix/export/libtwice.a" -lm -lpthread -ldl -o "$prefix/export/main"
"$prefix/export/main"
# hl.dist from the installed tree: the installed launcher (bin/halua) under mpirun, 2 ranks
if command -v mpirun >/dev/null && [ -f "$(dirname "$core")/halua_dist.so" ]; then
  printf 'local hl = require "halua"\nlocal s = hl.dist.psum(hl.ones(2)):sum():item()\nassert(s == 2 * hl.dist.size())\nhl.dist.print("installed bin/halua under mpirun: " .. hl.dist.size() .. " ranks ok")\n' > "$prefix/dist.lua"
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 \
    LUA_PATH="$prefix/share/lua/5.1/?.lua;$prefix/share/lua/5.1/?/init.lua" LUA_CPATH="$(dirname "$core")/?.so" \
    mpirun -np 2 "$prefix/bin/halua" "$prefix/dist.lua"
fi
