-- halua's Lua modules are loaded from LuaJIT bytecode kept beside the engine library
-- (engine/lua/hl_lua_modules.c, lua/halua/init.lua's loader): parsed once, loaded after that,
-- parsed again when the file changes or its bytecode is damaged. Each test writes a module of its
-- own (halua.bytecode_probe_<random>) into a temporary directory on LUA_PATH and requires it in
-- child processes, so that no other test's modules are touched.
local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"
local files = require "support.files"

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local function sh(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end
local function slurp(path)
  local ok, s = pcall(files.read_bytes, path)
  return ok and s or nil
end

local core_path = assert(package.searchpath("halua_core", package.cpath), "halua_core is not on LUA_CPATH")
local bytecode_dir = core_path:match("^(.*)/[^/]+$") .. "/lua-bytecode"

local made = {}
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(sh("mkdir -p -m 0700 " .. q(p .. "/halua")), "cannot make " .. p)
  made[#made + 1] = p
  return p
end

-- a probe module in a directory of its own: its name, its file and its blob's path
local function probe(source)
  local dir = tmpdir()
  local name = ("bytecode_probe_%d_%d"):format(os.time() % 100000, math.random(1, 1e9))
  local file = dir .. "/halua/" .. name .. ".lua"
  files.write_bytes(file, source)
  made[#made + 1] = bytecode_dir .. "/halua." .. name .. ".ljbc"
  return {dir = dir, name = "halua." .. name, file = file, blob = bytecode_dir .. "/halua." .. name .. ".ljbc"}
end

-- runs `script` (which sees the probe's name as ...) in a child luajit with the probe's directory
-- first on LUA_PATH; returns its output (stdout and stderr) and whether it exited with 0
local function run(p, script)
  local file = p.dir .. "/script.lua"
  files.write_bytes(file, script)
  local path = p.dir .. "/?.lua;" .. (os.getenv("LUA_PATH") or ";")
  local cmd = ("cd %s && LUA_PATH=%s luajit %s %s 2>&1; echo \"exit $?\""):format(q(root), q(path), q(file), q(p.name))
  local h = assert(io.popen(cmd))
  local out = h:read("*a")
  h:close()
  local body, code = out:match("^(.*)exit (%d+)\n$")
  return body, code == "0"
end

local REQUIRE = [[local hl = require "halua"; local m = require((...)); io.write(m.value(), "\n")]]

local function stat(path)
  local h = assert(io.popen("stat -c '%i %Y %s' " .. q(path) .. " 2>/dev/null"))
  local s = h:read("*l")
  h:close()
  return s
end

describe("halua's modules as bytecode", function()
  after_each(function()
    for _, p in ipairs(made) do sh("rm -rf " .. q(p)) end
    made = {}
  end)

  it("halua's own modules are kept beside the engine library, the directory private to its user", function()
    local out, ok = run(probe("return {value = function() return 1 end}"), REQUIRE)
    assert(ok, out)
    local h = assert(io.popen("stat -c %a " .. q(bytecode_dir)))
    assert.are.equal("700", h:read("*l"))
    h:close()
    for _, m in ipairs {"jit", "ad", "tree", "util", "control", "vmap"} do
      assert(slurp(bytecode_dir .. "/halua." .. m .. ".ljbc"), "no bytecode of halua." .. m .. " in " .. bytecode_dir)
    end
  end)

  it("a module is parsed once, its bytecode written, and later processes load it unchanged", function()
    local p = probe("local M = {}\nfunction M.value() return 6 * 7 end\nreturn M\n")
    assert.is_nil(slurp(p.blob))
    local out, ok = run(p, REQUIRE)
    assert(ok, out)
    assert.are.equal("42\n", out)
    local bytes = assert(slurp(p.blob), "no bytecode written at " .. p.blob)
    assert.are.equal("\27LJ", bytes:sub(1, 3), "LuaJIT bytecode")
    assert.truthy(bytes:find(p.file, 1, true), "the key names the module's file")
    local before = stat(p.blob)
    sh("touch -m -d @946684800 " .. q(p.blob))
    before = stat(p.blob)
    for _ = 1, 2 do
      out, ok = run(p, REQUIRE)
      assert(ok, out)
      assert.are.equal("42\n", out)
      assert.are.equal(before, stat(p.blob), "a process that loads the bytecode does not write it again")
    end
  end)

  it("an edited module is parsed again and its bytecode replaced", function()
    local p = probe("return {value = function() return 1 end}\n")
    local out, ok = run(p, REQUIRE)
    assert(ok, out)
    assert.are.equal("1\n", out)
    local first = slurp(p.blob)
    -- the same length, other contents (a key of the length alone would miss it)
    files.write_bytes(p.file, "return {value = function() return 2 end}\n")
    out, ok = run(p, REQUIRE)
    assert(ok, out)
    assert.are.equal("2\n", out)
    assert.are_not.equal(first, slurp(p.blob))
    out, ok = run(p, REQUIRE)
    assert.are.equal("2\n", out)
  end)

  it("damaged bytecode is never run: the module is parsed again and its bytecode rewritten", function()
    local p = probe("return {value = function() return 3 end}\n")
    assert(select(2, run(p, REQUIRE)))
    local good = assert(slurp(p.blob))
    local damages = {
      truncated = good:sub(1, 20),
      ["a byte changed in the code"] = good:sub(1, 10) .. string.char((good:byte(11) + 1) % 256) .. good:sub(12),
      ["a byte changed in the trailer"] = good:sub(1, -6) .. string.char((good:byte(-5) + 1) % 256) .. good:sub(-4),
      empty = "",
      ["another program's bytecode"] = string.dump(function() return {value = function() return 99 end} end),
    }
    for what, bytes in pairs(damages) do
      files.write_bytes(p.blob, bytes)
      local out, ok = run(p, REQUIRE)
      assert(ok, what .. ": " .. out)
      assert.are.equal("3\n", out, what)
      assert.are.equal(good, slurp(p.blob), what .. ": the bytecode is written again")
    end
  end)

  it("positions in errors and tracebacks name the module's file and line, as from the source", function()
    local p = probe("local M = {}\n\n\nfunction M.value()\n  error('probe failed here')\nend\nreturn M\n")
    local script = [[local hl = require "halua"; local m = require((...));
      local ok, err = pcall(m.value); io.write(err, "\n")
      local info = debug.getinfo(m.value, "S"); io.write(info.source, " ", info.linedefined, "\n")
      info = debug.getinfo(hl.tree.map, "S"); io.write(info.source, "\n")]]
    for _ = 1, 2 do   -- parsed, then from the bytecode
      local out, ok = run(p, script)
      assert(ok, out)
      assert.truthy(out:find(p.file .. ":5: probe failed here", 1, true), out)
      assert.truthy(out:find("@" .. p.file .. " 4", 1, true), out)
      assert.truthy(out:find("@" .. package.searchpath("halua.tree", package.path) .. "\n", 1, true), out)
    end
  end)

  it("a module with a syntax error fails to load with require's own message, and leaves no bytecode", function()
    local p = probe("return {value = function() return 1 end\n")
    local out, ok = run(p, REQUIRE)
    assert.is_false(ok)
    assert.truthy(out:find("error loading module '" .. p.name .. "' from file '" .. p.file .. "':", 1, true), out)
    assert.truthy(out:find(p.file .. ":2: '}' expected", 1, true), out)
    assert.is_nil(slurp(p.blob))
  end)

  it("a module that is not there is reported as require reports it", function()
    local p = probe("return {}")
    local out, ok = run(p, [[require "halua"; require "halua.no_such_module_here"]])
    assert.is_false(ok)
    assert.truthy(out:find("module 'halua.no_such_module_here' not found", 1, true), out)
  end)
end)
