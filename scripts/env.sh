# Source this to put halua's Lua modules and engine on the Lua paths.
halua_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export LUA_PATH="$halua_root/lua/?.lua;$halua_root/lua/?/init.lua;$halua_root/tests/lua/?.lua;${LUA_PATH:-;}"
export LUA_CPATH="$halua_root/build/?.so;${LUA_CPATH:-;}"
