-- The persistent compile cache: compiled CPU pipelines written to a directory (their objects, loaded
-- without a linker) and loaded by later processes. Every test runs child processes (luajit, with this process's
-- LUA_PATH and LUA_CPATH) on a fresh temporary directory of its own, and checks what they print
-- (values, hl.cache_info()), what they log under HALUA_LOG_COMPILES=1, and the directory's files.
local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"

local HEX16 = ("%x"):rep(16)

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function sh(cmd)
  local r = os.execute(cmd)
  return r == 0 or r == true
end

local files = require "support.files"
local spit = files.write_bytes
-- a file's bytes, or nil when there is none
local function slurp(path)
  local ok, s = pcall(files.read_bytes, path)
  return ok and s or nil
end

local function file_size(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

local function popen_lines(cmd)
  local p = assert(io.popen(cmd))
  local t = {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end

-- directories and files made by the current test, removed after it
local made = {}
local function tmpdir()
  local p = os.tmpname()
  os.remove(p)
  assert(sh("mkdir -m 0700 " .. q(p)), "cannot make " .. p)
  made[#made + 1] = p
  return p
end
local function tmpfile()
  local p = os.tmpname()
  made[#made + 1] = p
  return p
end

local function mode_of(path) return popen_lines("stat -c %a " .. q(path))[1] end

-- the names in dir (sorted), split into entries (16 hex digits .o), runtimes and the rest
local function listing(dir)
  local all = popen_lines("ls -A " .. q(dir) .. " 2>/dev/null | LC_ALL=C sort")
  local r = {all = all, entries = {}, runtimes = {}, other = {}}
  for _, name in ipairs(all) do
    if name:match("^" .. HEX16 .. "%.o$") then r.entries[#r.entries + 1] = name
    elseif name:match("^runtime%-" .. HEX16 .. "%.o$") then r.runtimes[#r.runtimes + 1] = name
    else r.other[#r.other + 1] = name end
  end
  return r
end

local function entries_bytes(dir)
  local n = 0
  for _, name in ipairs(listing(dir).entries) do n = n + file_size(dir .. "/" .. name) end
  return n
end

-- every file below dir, recursively (relative names)
local function files_below(dir)
  return popen_lines("cd " .. q(dir) .. " && find . -mindepth 1 | LC_ALL=C sort")
end

-- What every child script starts with: halua, a serialiser, info(tag) recording hl.cache_info()'s
-- fields, program() (one jitted function and the eager ops it takes) and finish() printing the
-- recorded table as a Lua chunk after "RESULT ".
local HEADER = [==[
local hl = require "halua"
local function ser(v)
  if type(v) == "table" then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = "[" .. ser(k) .. "] = " .. ser(x) end
    return "{" .. table.concat(parts, ", ") .. "}"
  elseif type(v) == "number" then return string.format("%.17g", v)
  elseif type(v) == "string" then return string.format("%q", v)
  else return tostring(v) end
end
local result = {}
local function info(tag)
  local i, t = hl.cache_info(), {}
  for _, k in ipairs({"entries", "hits", "misses", "compile_ms", "disk_hits", "disk_misses",
                      "disk_bytes", "disk_load_ms", "disk_dir"}) do t[k] = i[k] end
  result[tag] = t
end
local function program()
  local x = hl.arange(6)
  local f = hl.jit(function(a) return hl.tanh(a * 2) + a:sum() end, {name = "disk_f"})
  return {f = f(x):totable(), e = hl.exp(x):totable()}
end
local function finish() io.write("RESULT return ", ser(result), "\n") end
]==]

-- the usual child: the program once, then its cache statistics
local PROGRAM = HEADER .. [==[
result.values = program()
info("info")
finish()
]==]

-- Starting a child. env: name -> value (false: unset). Every child logs its compiles, and runs
-- without the variables of the caller that would change what it does. as: a command the child
-- runs under (e.g. "runuser -u nobody --"), or nil.
local function child_command(script, env, as)
  local base = tmpfile()
  spit(base .. ".lua", script)
  local vars = {HALUA_LOG_COMPILES = "1", HALUA_QUIET = false, HALUA_DEVICE = false,
                HALUA_CACHE_MAX_MB = false, HALUA_CACHE_DIR = false, HALUA_PERF_MAP = false}
  for k, v in pairs(env or {}) do vars[k] = v end
  local unset, set = {}, {}   -- env takes its -u options before the assignments
  for k, v in pairs(vars) do
    if v == false then unset[#unset + 1] = "-u " .. k else set[#set + 1] = k .. "=" .. q(tostring(v)) end
  end
  local parts = {as or "", "env", table.concat(unset, " "), table.concat(set, " ")}
  local cmd = string.format("(cd %s && %s luajit %s > %s 2> %s; echo $? > %s)", q(root), table.concat(parts, " "),
    q(base .. ".lua"), q(base .. ".out"), q(base .. ".err"), q(base .. ".rc"))
  return cmd, base
end

local function collect(base)
  local r = {out = slurp(base .. ".out") or "", err = slurp(base .. ".err") or "",
             rc = tonumber((slurp(base .. ".rc") or ""):match("%d+"))}
  for _, ext in ipairs({".lua", ".out", ".err", ".rc"}) do os.remove(base .. ext) end
  local chunk = r.out:match("RESULT (.*)$")
  if chunk then
    local fn = loadstring(chunk)
    r.result = fn and fn()
  end
  r.text = "exit status " .. tostring(r.rc) .. "\n--- stdout:\n" .. r.out .. "--- stderr:\n" .. r.err
  return r
end

local function run(script, env, as)
  local cmd, base = child_command(script, env, as)
  sh(cmd)
  return collect(base)
end

-- several children started together; returns their results in order
local function run_together(list)
  local cmds, bases = {}, {}
  for i, c in ipairs(list) do cmds[i], bases[i] = child_command(c[1], c[2]) end
  sh(table.concat(cmds, " & ") .. " & wait")
  local rs = {}
  for i, b in ipairs(bases) do rs[i] = collect(b) end
  return rs
end

local function succeeded(r)
  assert(r.rc == 0, "the child failed:\n" .. r.text)
  assert(type(r.result) == "table", "the child printed no result:\n" .. r.text)
  return r.result
end

-- the lines of a child's stderr that start with prefix
local function lines(r, prefix)
  local t = {}
  for l in (r.err .. "\n"):gmatch("(.-)\n") do
    if l:sub(1, #prefix) == prefix then t[#t + 1] = l end
  end
  return t
end

local DAMAGED = "halua: disk cache: removed a damaged entry"
local WARNING = "halua: warning:"

-- program()'s values, against Lua's
local function check_values(v, text)
  assert(type(v) == "table" and type(v.f) == "table" and type(v.e) == "table", "no values:\n" .. (text or ""))
  assert.are.equal(6, #v.f, text)
  assert.are.equal(6, #v.e, text)
  for i = 0, 5 do
    local f, e = math.tanh(2 * i) + 15, math.exp(i)
    assert(math.abs(v.f[i + 1] - f) <= 1e-5, string.format("f[%d] = %s, expected %.7g\n%s", i + 1, tostring(v.f[i + 1]), f, text or ""))
    assert(math.abs(v.e[i + 1] - e) <= 1e-6 * e, string.format("exp[%d] = %s, expected %.7g\n%s", i + 1, tostring(v.e[i + 1]), e, text or ""))
  end
end

local function number(v) return type(v) == "number" end

-- a first run on dir: checks it compiled and wrote its entries; returns the result and the listing
local function first_run(dir, env)
  env = env or {}
  env.HALUA_CACHE_DIR = dir
  local r = run(PROGRAM, env)
  local res = succeeded(r)
  check_values(res.values, r.text)
  local ls = listing(dir)
  assert(#ls.entries >= 2, "expected entry files (the jitted function and eager kernels):\n" .. table.concat(ls.all, "\n") .. "\n" .. r.text)
  assert(res.info.disk_misses and res.info.disk_misses >= 1, r.text)
  return res, ls, r
end

-- a run on dir that must load everything from the disk, without damage
local function clean_hit(dir, n_entries)
  local r = run(PROGRAM, {HALUA_CACHE_DIR = dir})
  local res = succeeded(r)
  check_values(res.values, r.text)
  assert(number(res.info.disk_hits) and res.info.disk_hits >= 1, "no disk hits:\n" .. r.text)
  assert.are.equal(0, res.info.disk_misses, r.text)
  if n_entries then assert.are.equal(n_entries, res.info.disk_hits, r.text) end
  assert.are.same({}, lines(r, DAMAGED), r.text)
  assert.are.same({}, lines(r, "halua: compiled "), r.text)
  return res, r
end

-- rewrites every entry file of dir with edit(bytes) -> bytes; returns the paths
local function damage_entries(dir, edit)
  local paths = {}
  for _, name in ipairs(listing(dir).entries) do
    local path = dir .. "/" .. name
    spit(path, edit(assert(slurp(path))))
    paths[#paths + 1] = path
  end
  return paths
end

-- a run after damage: right values, one damaged-entry line per path in `damaged` naming it
local function damaged_run(dir, damaged)
  local r = run(PROGRAM, {HALUA_CACHE_DIR = dir})
  local res = succeeded(r)
  check_values(res.values, r.text)
  local found = lines(r, DAMAGED)
  assert.are.equal(#damaged, #found, "damaged-entry lines:\n" .. r.text)
  for _, path in ipairs(damaged) do
    local named = false
    for _, l in ipairs(found) do
      if l:find(path, 1, true) and l:match("^" .. DAMAGED .. " %(.+%)") then named = true end
    end
    assert(named, "no damaged-entry line '" .. DAMAGED .. " (reason) ...' naming " .. path .. ":\n" .. r.text)
  end
  assert(res.info.disk_misses >= #damaged, "damaged entries count as disk misses:\n" .. r.text)
  return res, r
end

describe("the disk cache", function()
  after_each(function()
    for _, p in ipairs(made) do sh("rm -rf " .. q(p)) end
    made = {}
  end)

  it("a second process loads what the first compiled: same values, disk hits, no compiles", function()
    local dir = tmpdir() .. "/cache"   -- halua makes it
    local res1, ls1, r1 = first_run(dir)
    assert.are.equal(dir, res1.info.disk_dir, r1.text)
    assert.are.equal(0, res1.info.disk_hits, r1.text)
    assert.are.equal(#ls1.entries, res1.info.disk_misses, "every pipeline missed and was written:\n" .. r1.text)
    assert.are.equal("700", mode_of(dir))
    assert.are.equal(1, #ls1.runtimes, "one shared runtime:\n" .. table.concat(ls1.all, "\n"))
    for _, name in ipairs(ls1.other) do
      assert(name:match("%.lock$") or name == "usage", "a file left in the cache directory: " .. name)
    end
    assert.are.equal(entries_bytes(dir), res1.info.disk_bytes, "disk_bytes: the entries' total, runtime excluded")
    assert.are.equal(entries_bytes(dir) .. "\n", slurp(dir .. "/usage"), "the file usage holds the entries' total")
    assert.are.equal(1, #lines(r1, "halua: compiled disk_f in "), r1.text)

    -- a hit touches its entry (the size limit removes the least recently used first)
    local old = 946684800   -- 2000-01-01
    for _, name in ipairs(ls1.entries) do assert(sh("touch -m -d @" .. old .. " " .. q(dir .. "/" .. name))) end
    local res2, r2 = clean_hit(dir, #ls1.entries)
    for _, name in ipairs(ls1.entries) do
      local mtime = tonumber(popen_lines("stat -c %Y " .. q(dir .. "/" .. name))[1])
      assert(mtime > old, name .. " was loaded but not touched")
    end
    assert.are.same(res1.values, res2.values)
    assert.are.equal(dir, res2.info.disk_dir, r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded disk_f from the disk cache in "), r2.text)
    assert.truthy(r2.err:match("halua: loaded disk_f from the disk cache in [%d.]+ ms"), r2.text)
    assert(number(res2.info.disk_load_ms) and res2.info.disk_load_ms > 0, r2.text)
    assert.are.equal(entries_bytes(dir), res2.info.disk_bytes, r2.text)
    assert.are.same(ls1.all, listing(dir).all, "a run that only loads writes nothing")
  end)

  it("one program traced in another order (a Lua loop over a table's keys) loads the same entry", function()
    -- the same two results, recorded in the opposite order: the key is the program's, not the trace's
    local script = HEADER .. [==[
local order = ...
local f = hl.jit(function(a)
  local r = {}
  for _, k in ipairs(order) do
    if k == "p" then r.p = hl.tanh(a * 3) else r.s = hl.sin(a) + 1 end
  end
  return r
end, {name = "ordered"})
local out = f(hl.arange(4) + 0.5)
result.values = {p = out.p:totable(), s = out.s:totable()}
info("info")
finish()
]==]
    local dir = tmpdir()
    local r1 = run((script:gsub("local order = %.%.%.", 'local order = {"p", "s"}')), {HALUA_CACHE_DIR = dir})
    local r2 = run((script:gsub("local order = %.%.%.", 'local order = {"s", "p"}')), {HALUA_CACHE_DIR = dir})
    local a, b = succeeded(r1), succeeded(r2)
    for i = 1, 4 do
      local x = i - 0.5
      assert(math.abs(a.values.p[i] - math.tanh(3 * x)) < 1e-6 and math.abs(b.values.p[i] - math.tanh(3 * x)) < 1e-6, r2.text)
      assert(math.abs(a.values.s[i] - (math.sin(x) + 1)) < 1e-6 and math.abs(b.values.s[i] - (math.sin(x) + 1)) < 1e-6, r2.text)
    end
    assert.are.same({}, lines(r2, "halua: compiled ordered"), r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded ordered from the disk cache"), r2.text)
  end)

  it("a program cut into several pipelines, traced in another order, loads the entry its parts were compiled into", function()
    -- 40 rounds each way: several pipelines (jit_spec), whose plan is made in the program's own order
    local script = HEADER .. [==[
local order = ...
local f = hl.jit(function(a)
  local r = {}
  for _, k in ipairs(order) do
    local v = a
    for i = 1, 40 do v = k == "p" and hl.tanh(v * 0.9 + i * 0.01) or hl.sin(v) * 0.5 + 0.25 end
    r[k] = v
  end
  return r
end, {name = "cut"})
local out = f(hl.arange(4) + 0.5)
result.values = {p = out.p:totable(), s = out.s:totable()}
result.pipelines = tonumber(f:lower(hl.arange(4) + 0.5):stmt():match("# pipeline 1 of (%d+)"))
finish()
]==]
    local dir = tmpdir()
    local r1 = run((script:gsub("local order = %.%.%.", 'local order = {"p", "s"}')), {HALUA_CACHE_DIR = dir})
    local r2 = run((script:gsub("local order = %.%.%.", 'local order = {"s", "p"}')), {HALUA_CACHE_DIR = dir})
    local a, b = succeeded(r1), succeeded(r2)
    assert(a.pipelines and a.pipelines >= 3 and b.pipelines == a.pipelines, r2.text)
    for i = 1, 4 do
      local p, s = i - 0.5, i - 0.5
      for k = 1, 40 do p, s = math.tanh(p * 0.9 + k * 0.01), math.sin(s) * 0.5 + 0.25 end
      assert(math.abs(a.values.p[i] - p) < 1e-5 and math.abs(b.values.p[i] - p) < 1e-5, r2.text)
      assert(math.abs(a.values.s[i] - s) < 1e-5 and math.abs(b.values.s[i] - s) < 1e-5, r2.text)
    end
    assert.are.equal(1, #lines(r1, "halua: compiled cut"), r1.text)
    assert.are.same({}, lines(r2, "halua: compiled cut"), r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded cut from the disk cache"), r2.text)
  end)

  it("a cut program's pipelines compiled by 2 processes at once: the values of one process's compile, an entry others load", function()
    local script = HEADER .. [==[
local f = hl.jit(function(a)
  local p, s = a, a
  for i = 1, 40 do p, s = hl.tanh(p * 0.9 + i * 0.01), hl.sin(s) * 0.5 + 0.25 end
  return {p = p, s = s}
end, {name = "cut"})
local out = f(hl.arange(4) + 0.5)
result.values = {p = out.p:totable(), s = out.s:totable()}
finish()
]==]
    local shared, alone = tmpdir(), tmpdir()
    local r1 = run(script, {HALUA_CACHE_DIR = shared, HALUA_COMPILE_JOBS = 2})
    local r2 = run(script, {HALUA_CACHE_DIR = alone, HALUA_COMPILE_JOBS = 1})
    local r3 = run(script, {HALUA_CACHE_DIR = shared, HALUA_COMPILE_JOBS = 1})
    local a, b, c = succeeded(r1), succeeded(r2), succeeded(r3)
    local l1 = lines(r1, "halua: compiled cut")
    assert.are.equal(1, #l1, r1.text)
    assert.truthy(l1[1]:find("pipelines compiled by 2 processes at once", 1, true), r1.text)
    local l2 = lines(r2, "halua: compiled cut")
    assert.are.equal(1, #l2, r2.text)
    assert.truthy(l2[1]:find("; lowering ", 1, true), r2.text)
    assert.are.same(b.values, a.values)   -- bit for bit
    assert.are.same(a.values, c.values)
    assert.are.equal(1, #lines(r3, "halua: loaded cut from the disk cache"), r3.text)
    for i = 1, 4 do
      local p, s = i - 0.5, i - 0.5
      for k = 1, 40 do p, s = math.tanh(p * 0.9 + k * 0.01), math.sin(s) * 0.5 + 0.25 end
      assert(math.abs(a.values.p[i] - p) < 1e-5 and math.abs(a.values.s[i] - s) < 1e-5, r1.text)
    end
    -- no object file of a worker is left beside the entries (usage: their total)
    assert.are.same({"usage"}, listing(shared).other, r1.text)
    -- a value that is not a count is said once and the default used
    local r4 = run(script, {HALUA_CACHE_DIR = tmpdir(), HALUA_COMPILE_JOBS = "many"})
    assert.are.same(a.values, succeeded(r4).values)
    assert.are.equal(1, #lines(r4, "halua: warning: HALUA_COMPILE_JOBS=many is not a whole number from 1 to 64; the default is used"), r4.text)
  end)

  -- a program that repeats itself, run JIT-compiled, compiled here, compiled by 2 processes and
  -- loaded: each run's result.err (against the same function run eagerly) small, and the log's
  -- count of distinct programs at most max_share of its pipelines; returns the runs' results
  local function repeated_program(script, name, max_share)
    local dir = tmpdir()
    local runs = {
      run(script, {HALUA_CACHE_DIR = "off"}),                              -- JIT-compiled
      run(script, {HALUA_CACHE_DIR = tmpdir(), HALUA_COMPILE_JOBS = 1}),   -- ahead of time, here
      run(script, {HALUA_CACHE_DIR = dir, HALUA_COMPILE_JOBS = 2}),        -- by 2 processes
      run(script, {HALUA_CACHE_DIR = dir}),                                -- loaded
    }
    local results = {}
    for k, r in ipairs(runs) do
      local res = succeeded(r)
      results[k] = res
      assert(res.err < 1e-5, "run " .. k .. ": the result differs from the eager one by " .. res.err .. "\n" .. r.text)
      assert(res.pipelines and res.pipelines >= 20, r.text)
      if k < 4 then
        local l = lines(r, "halua: compiled " .. name)
        assert.are.equal(1, #l, r.text)
        local distinct, parts = l[1]:match("; (%d+) distinct programs among its (%d+) pipelines, each compiled once;")
        assert(distinct and tonumber(parts) == res.pipelines and tonumber(distinct) <= max_share * tonumber(parts), r.text)
      else
        assert.are.equal(1, #lines(r, "halua: loaded " .. name .. " from the disk cache"), r.text)
      end
    end
    return results
  end

  it("a program that repeats itself compiles each distinct part once: a deep MLP's training step", function()
    -- a 16-layer 64-wide MLP's value_and_grad and SGD step against the same step run eagerly
    local script = HEADER .. [==[
local depth = 16
local P = {}
for i = 1, depth do
  P[i] = {w = (hl.sin(hl.arange(64 * 64) * (0.37 + i)) * 0.2):reshape({64, 64}), b = hl.cos(hl.arange(64) * i) * 0.1}
end
local x = (hl.sin(hl.arange(32 * 64)) * 2):reshape({32, 64})
local function loss(q, xb)
  local h = xb
  for i = 1, depth do h = hl.tanh(hl.matmul(h, q[i].w) + q[i].b) end
  return (h * h):mean()
end
local function step(q, xb)
  local l, g = hl.value_and_grad(loss)(q, xb)
  local r = {}
  for i = 1, depth do r[i] = {w = q[i].w - 0.01 * g[i].w, b = q[i].b - 0.01 * g[i].b} end
  return r, l
end
local f = hl.jit(step, {name = "deep"})
local r, l = f(P, x)
local er, el = step(P, x)
local err = math.abs(l:item() - el:item())
for i = 1, depth do
  err = math.max(err, hl.max(hl.abs(r[i].w - er[i].w)):item(), hl.max(hl.abs(r[i].b - er[i].b)):item())
end
result.err = err
result.loss = l:item()
result.pipelines = tonumber(f:lower(P, x):stmt():match("# pipeline 1 of (%d+)"))
finish()
]==]
    local res = repeated_program(script, "deep", 0.5)
    for k = 2, 4 do assert.are.equal(res[1].loss, res[k].loss) end
  end)

  it("a program that repeats itself compiles each distinct part once: an unrolled loop whose rounds differ in constants", function()
    -- 300 rounds of tanh(a * 1.0001 + i * 1e-6), and of maximum(b - i * 1e-3, -0.5) * 0.999:
    -- the rounds' constants are read from buffers, so the rounds are one program
    local script = HEADER .. [==[
local function rounds(a, b)
  for i = 1, 300 do
    a = hl.tanh(a * 1.0001 + i * 1e-6)
    b = hl.maximum(b - i * 1e-3, -0.5) * 0.999
  end
  return a, b
end
local f = hl.jit(rounds, {name = "unrolled"})
local x = hl.linspace(-1, 1, 37)
local a, b = f(x, x * 2)
local xs, err = x:totable(), 0
for k, v in ipairs(xs) do
  local p, s = v, 2 * v
  for i = 1, 300 do
    p = math.tanh(p * 1.0001 + i * 1e-6)
    s = math.max(s - i * 1e-3, -0.5) * 0.999
  end
  err = math.max(err, math.abs(a[k]:item() - p), math.abs(b[k]:item() - s))
end
result.err = err
result.pipelines = tonumber(f:lower(x, x * 2):stmt():match("# pipeline 1 of (%d+)"))
finish()
]==]
    repeated_program(script, "unrolled", 0.1)
  end)

  -- entries rewritten by edit(bytes): each is reported, removed and written again, then hit cleanly
  local function damaged_then_clean(edit)
    local dir = tmpdir()
    local _, ls = first_run(dir)
    local damaged = damage_entries(dir, edit)
    assert.are.equal(#ls.entries, #damaged)
    local res = damaged_run(dir, damaged)
    assert.are.equal(0, res.info.disk_hits)
    assert.are.equal(#ls.entries, #listing(dir).entries, "the damaged entries are written again")
    clean_hit(dir, #ls.entries)
  end

  it("a truncated entry is removed and recompiled, then hit cleanly", function()
    damaged_then_clean(function(s) return s:sub(1, math.floor(#s / 2)) end)
  end)

  it("an entry with bytes flipped in its middle is removed and recompiled, then hit cleanly", function()
    damaged_then_clean(function(s)
      local mid = math.floor(#s / 2)
      local flipped = s:sub(mid, mid + 15):gsub(".", function(c) return string.char(bit.bxor(c:byte(), 0xa5)) end)
      return s:sub(1, mid - 1) .. flipped .. s:sub(mid + 16)
    end)
  end)

  it("another pipeline's entry under this one's name (a foreign key) is removed and recompiled", function()
    local dir = tmpdir()
    local _, ls = first_run(dir)
    local from, to = dir .. "/" .. ls.entries[1], dir .. "/" .. ls.entries[2]
    spit(to, assert(slurp(from)))
    local res = damaged_run(dir, {to})
    assert.are.equal(#ls.entries - 1, res.info.disk_hits, "the other entries still load")
    clean_hit(dir, #ls.entries)
  end)

  it("a directory that cannot be made: one warning naming it, in-memory caching, right values", function()
    local file = tmpfile()
    spit(file, "not a directory\n")
    local dir = file .. "/sub"
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir})
    local res = succeeded(r)
    check_values(res.values, r.text)
    local w = lines(r, WARNING)
    assert.are.equal(1, #w, "one warning per process:\n" .. r.text)
    assert.truthy(w[1]:find(dir, 1, true), r.text)
    assert.is_nil(res.info.disk_dir, r.text)
    assert.are.equal(0, res.info.disk_hits, r.text)
    assert.are.same({}, lines(r, "halua: loaded "), r.text)
    assert.are.equal("not a directory\n", slurp(file))
  end)

  it("a directory this user cannot write: one warning naming it, in-memory caching, right values", function()
    -- root writes anywhere: there the child runs as nobody (skipped where that cannot be done)
    local as
    if popen_lines("id -u")[1] == "0" then
      if not sh("command -v runuser > /dev/null && runuser -u nobody -- test -r " .. q(root .. "lua/halua/init.lua") ..
                " && runuser -u nobody -- luajit -e '' 2> /dev/null") then
        pending("running as root without runuser or a nobody who can read the checkout and run luajit")
        return
      end
      as = "runuser -u nobody --"
    end
    local parent = tmpdir()
    assert(sh("chmod 755 " .. q(parent)))
    local dir = parent .. "/ro"
    assert(sh("mkdir -m 0500 " .. q(dir) .. (as and " && chown nobody " .. q(dir) or "")))
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir}, as)
    local res = succeeded(r)
    check_values(res.values, r.text)
    local w = lines(r, WARNING)
    assert.are.equal(1, #w, "one warning per process:\n" .. r.text)
    assert.truthy(w[1]:find(dir, 1, true), r.text)
    assert.is_nil(res.info.disk_dir, r.text)
    assert.are.equal(0, res.info.disk_hits, r.text)
    assert.are.same({}, files_below(dir))
  end)

  it("a directory others can write is refused: one warning naming it, nothing written there", function()
    for _, mode in ipairs({"777", "775"}) do
      local dir = tmpdir()
      assert(sh("chmod " .. mode .. " " .. q(dir)))
      local r = run(PROGRAM, {HALUA_CACHE_DIR = dir})
      local res = succeeded(r)
      check_values(res.values, r.text)
      local w = lines(r, WARNING)
      assert.are.equal(1, #w, "mode " .. mode .. ": one warning per process:\n" .. r.text)
      assert.truthy(w[1]:find(dir, 1, true), r.text)
      assert.is_nil(res.info.disk_dir, r.text)
      assert.are.same({}, files_below(dir), "mode " .. mode .. ": nothing may be written to " .. dir)
      assert.are.equal(mode, mode_of(dir), "the directory is left as it was")
    end
    -- only write bits for others count: a directory others can read is used
    local dir = tmpdir()
    assert(sh("chmod 755 " .. q(dir)))
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir})
    local res = succeeded(r)
    check_values(res.values, r.text)
    assert.are.same({}, lines(r, WARNING), r.text)
    assert.are.equal(dir, res.info.disk_dir, r.text)
    assert(#listing(dir).entries >= 2, r.text)
  end)

  it("two processes compiling the same pipelines at once both succeed; a third loads them", function()
    local dir = tmpdir()
    local rs = run_together({{PROGRAM, {HALUA_CACHE_DIR = dir}}, {PROGRAM, {HALUA_CACHE_DIR = dir}}})
    for _, r in ipairs(rs) do
      local res = succeeded(r)
      check_values(res.values, r.text)
      assert.are.same({}, lines(r, DAMAGED), r.text)
      assert.are.same({}, lines(r, WARNING), r.text)
    end
    local ls = listing(dir)
    assert(#ls.entries >= 2, table.concat(ls.all, "\n"))
    assert.are.equal(1, #ls.runtimes, table.concat(ls.all, "\n"))
    for _, name in ipairs(ls.other) do
      assert(name:match("%.lock$") or name == "usage", "a file left in the cache directory: " .. name)
    end
    -- two processes counted their stores into one total (an entry both stored counts twice, until
    -- a scan counts the files: the total may run high, never low)
    local total = tonumber((slurp(dir .. "/usage") or ""):match("^(%d+)\n$"))
    assert(total and total >= entries_bytes(dir), "usage: " .. tostring(slurp(dir .. "/usage")))
    clean_hit(dir, #ls.entries)
  end)

  it("HALUA_CACHE_MAX_MB bounds the entries: least recently used go first, the runtime stays", function()
    local dir = tmpdir()
    local limit = 0.06 * 2 ^ 20
    local n = 25
    local many = HEADER .. [==[
local x = hl.arange(6)
local only = os.getenv("ONLY")
result.values = {}
for c = 1, ]==] .. n .. [==[ do
  if not only or only:find("," .. c .. ",", 1, true) then
    local f = hl.jit(function(a) return hl.tanh(a * c) + c end, {name = "f" .. c})
    result.values[c] = f(x):totable()[6]
  end
end
info("info")
finish()
]==]
    local r = run(many, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "0.06"})
    local res = succeeded(r)
    for c = 1, n do
      local v, want = res.values[c], math.tanh(5 * c) + c
      assert(v and math.abs(v - want) <= 1e-4, "f" .. c .. " = " .. tostring(v) .. ", expected " .. want)
    end
    local ls = listing(dir)
    local total = entries_bytes(dir)
    assert(total <= limit, string.format("the entries take %d bytes, over %d", total, limit))
    assert(#ls.entries >= 1, "the entry just written fits and stays:\n" .. r.text)
    assert(number(res.info.disk_bytes) and res.info.disk_bytes <= limit, r.text)
    assert.are.equal(total, res.info.disk_bytes, r.text)
    assert.are.equal(1, #ls.runtimes, "the runtime is never evicted:\n" .. table.concat(ls.all, "\n"))
    assert(res.info.disk_misses >= n, r.text)
    assert(#ls.entries < n, "the limit must have evicted entries for this test to mean anything (" .. #ls.entries .. " kept)")

    -- the newest entry (f25) is still there; the oldest jitted one (f1) was evicted
    local r2 = run(many, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "0.06", ONLY = "," .. n .. ",1,"})
    local res2 = succeeded(r2)
    assert.truthy(math.abs(res2.values[1] - (math.tanh(5) + 1)) <= 1e-4, r2.text)
    assert.truthy(math.abs(res2.values[n] - (math.tanh(5 * n) + n)) <= 1e-4, r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded f" .. n .. " from the disk cache in "), r2.text)
    assert.are.equal(1, #lines(r2, "halua: compiled f1 in "), r2.text)
    assert(entries_bytes(dir) <= limit, "still within the limit after the second run")
    assert.are.equal(1, #listing(dir).runtimes)
  end)

  -- A scan stats every entry (a full cache holds tens of thousands), so a process scans at its
  -- first store and then only when its own stores would pass the limit; an eviction goes down to
  -- 7/8 of the limit, so that the next scan is far off. 400 old 12 KiB entries (4.7 MiB) against
  -- a 4 MiB limit: the first store evicts the oldest down to 3.5 MiB, and the program's later
  -- entries fit under 4 MiB without another scan (evicting to the limit itself would keep ~330).
  it("HALUA_CACHE_MAX_MB: an eviction goes down to 7/8 of the limit, oldest entries first", function()
    local dir = tmpdir()
    local limit, n, size = 4 * 2 ^ 20, 400, 12288
    assert(sh(string.format("cd %s && for i in $(seq 1 %d); do f=$(printf '%%016x.o' $i); " ..
                            "head -c %d /dev/zero > $f; touch -d @$((1577836800 + i)) $f; done", q(dir), n, size)))
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "4"})
    succeeded(r)
    local kept, oldest = 0, nil
    for _, name in ipairs(listing(dir).entries) do
      local i = tonumber(name:sub(1, 16), 16)
      if i <= n and file_size(dir .. "/" .. name) == size then
        kept = kept + 1
        oldest = math.min(oldest or i, i)
      end
    end
    local total = entries_bytes(dir)
    assert(total <= limit, string.format("the entries take %d bytes, over %d", total, limit))
    assert(kept * size <= limit * 7 / 8, string.format("%d old entries kept: the eviction stopped above 7/8 of the limit", kept))
    assert(kept >= 250, string.format("only %d old entries kept: the eviction went far below 7/8 of the limit", kept))
    assert.are.equal(n - kept + 1, oldest, "the oldest entries go first")
    assert(total - kept * size > 0, "the program's own entries are kept:\n" .. r.text)
  end)

  -- The entries' total is kept in the file `usage`, so that a process that stores need not stat
  -- every entry (tens of thousands in a full cache); it counts them only where that file is
  -- missing or unreadable, or where the total would pass the limit.
  it("the entries' total in the file usage: trusted where it reads, counted again where it does not", function()
    local limit, n, size = 4 * 2 ^ 20, 400, 12288
    -- made once (a few processes per entry), then copied with their times into each directory
    local template = tmpdir()
    assert(sh(string.format("cd %s && for i in $(seq 1 %d); do f=$(printf '%%016x.o' $i); " ..
                            "head -c %d /dev/zero > $f; touch -d @$((1577836800 + i)) $f; done", q(template), n, size)))
    local function old_entries(dir)
      assert(sh(string.format("cp -a %s/. %s/", q(template), q(dir))))
    end
    local function kept(dir)
      local k = 0
      for _, name in ipairs(listing(dir).entries) do
        if tonumber(name:sub(1, 16), 16) <= n and file_size(dir .. "/" .. name) == size then k = k + 1 end
      end
      return k
    end
    -- 4.7 MiB of old entries, but a total that says 1 MiB: the process believes it and evicts nothing
    local dir = tmpdir()
    old_entries(dir)
    spit(dir .. "/usage", "1048576\n")
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "4"})
    succeeded(r)
    assert.are.equal(n, kept(dir), "the total was read, not counted:\n" .. r.text)
    local after = tonumber((slurp(dir .. "/usage") or ""):match("^(%d+)\n$"))
    assert(entries_bytes(dir) > n * size, "the program stored entries:\n" .. r.text)
    assert.are.equal(1048576 + entries_bytes(dir) - n * size, after, "the process adds its stores to the total")
    -- the same with a total that does not read as one: counted, and evicted down to 7/8
    for _, bad in ipairs {"", "garbage\n", "123", "-5\n"} do
      dir = tmpdir()
      old_entries(dir)
      spit(dir .. "/usage", bad)
      r = run(PROGRAM, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "4"})
      succeeded(r)
      assert(kept(dir) * size <= limit * 7 / 8, string.format("usage %q: %d old entries kept\n%s", bad, kept(dir), r.text))
      assert.are.equal(entries_bytes(dir) .. "\n", slurp(dir .. "/usage"), "usage " .. string.format("%q", bad))
    end
  end)

  it("a jitted function with compiled loops loads from disk in a second process, bodies too, each loop its own", function()
    -- compiled code names a program's loops by their place, so the pipeline is the same in every
    -- process; two functions that differ only in their loops' bodies share the enclosing pipeline
    -- and each runs its own loop
    local dir = tmpdir()
    local script = HEADER .. [==[
local x = hl.arange(4):astype("float32")
local g = hl.jit(function(a)
  return hl.fori_loop(1, 10, function(i, c) return c * 0.5 + a end, a)
end, {name = "loopy"})
local h = hl.jit(function(a)
  return hl.fori_loop(1, 10, function(i, c) return c * 0.25 + a end, a)
end, {name = "loopy2"})
local w = hl.jit(function(a)
  local s = hl.while_loop(function(c) return hl.lt(hl.sum(c), 100) end, function(c) return c * 3 end, a + 1)
  return s, hl.fori_loop(1, 3, function(i, c) return c + i end, a)
end, {name = "loopy3"})
result.g = g(x):totable()
result.h = h(x):totable()
local s, f = w(x)
result.s, result.f = s:totable(), f:totable()
info("info")
finish()
]==]
    for run_no = 1, 2 do
      local r = run(script, {HALUA_CACHE_DIR = dir})
      local res = succeeded(r)
      local function near(got, want, what)
        assert(math.abs(got - want) <= 1e-5 * (1 + math.abs(want)), string.format("run %d, %s: %.9g, expected %.9g\n%s",
               run_no, what, got, want, r.text))
      end
      for i = 0, 3 do
        near(res.g[i + 1], i * (2 - 2 ^ -10), "g")                      -- ten steps of c = c / 2 + a from c = a
        near(res.h[i + 1], 4 * i / 3 - i / (3 * 4 ^ 10), "h")           -- ten of c = c / 4 + a
        near(res.s[i + 1], (i + 1) * 27, "s")                           -- sum 10 * 27 = 270 >= 100 after 3 steps
        near(res.f[i + 1], i + 6, "f")                                  -- + 1 + 2 + 3
      end
      if run_no == 1 then
        assert.are.equal(1, #lines(r, "halua: compiled loopy in "), r.text)
      else
        assert.are.same({}, lines(r, "halua: compiled "), "run 2 compiles nothing:\n" .. r.text)
        assert.are.equal(1, #lines(r, "halua: loaded loopy from the disk cache"), r.text)
        assert.are.equal(1, #lines(r, "halua: loaded loopy3 from the disk cache"), r.text)
        assert(#lines(r, "halua: loaded fori_loop from the disk cache") >= 2, r.text)
        assert(#lines(r, "halua: loaded while_loop from the disk cache") >= 2, r.text)   -- the body and the condition
      end
    end
  end)

  it("a CUDA pipeline is written by the first process and loaded by the next, its PTX the same", function()
    -- compiling for CUDA (to PTX) and loading the host code needs no GPU: its calls resolve against
    -- Halide's JIT runtime for CUDA, which the process builds without a driver
    local dir = tmpdir()
    local script = HEADER .. [==[
local f = hl.jit(function(a) return hl.tanh(a * 2) + 1 end, {device = "cuda", name = "cudaf"})
result.ptx = f:lower(hl.ones({4})):ptx()
info("info")
finish()
]==]
    local r1 = run(script, {HALUA_CACHE_DIR = dir})
    local res1 = succeeded(r1)
    assert.truthy(res1.ptx:find(".entry", 1, true), r1.text)
    assert.are.equal(1, #lines(r1, "halua: compiled cudaf in "), r1.text)
    assert.are.equal(1, res1.info.disk_misses, r1.text)
    local entries = listing(dir).entries
    assert.are.equal(1, #entries, "one entry, the CUDA pipeline's:\n" .. table.concat(listing(dir).all, "\n"))
    assert.are.same({}, listing(dir).runtimes, "no host runtime: CUDA pipelines call the JIT's")
    local r2 = run(script, {HALUA_CACHE_DIR = dir})
    local res2 = succeeded(r2)
    assert.are.same({}, lines(r2, "halua: compiled "), r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded cudaf from the disk cache in "), r2.text)
    assert.are.equal(1, res2.info.disk_hits, r2.text)
    assert.are.equal(res1.ptx, res2.ptx, "the loaded kernel's PTX, lowered again, is the compiled one's")
    -- a damaged CUDA entry is removed and compiled again, as any other
    damage_entries(dir, function(b) return b:sub(1, #b - 40) end)
    local r3 = run(script, {HALUA_CACHE_DIR = dir})
    local res3 = succeeded(r3)
    assert.are.equal(1, #lines(r3, DAMAGED), r3.text)
    assert.are.equal(1, #lines(r3, "halua: compiled cudaf in "), r3.text)
    assert.are.equal(res1.ptx, res3.ptx)
  end)

  it("a CUDA pipeline's entry is keyed by whether cuBLAS served its products: HALUA_NO_CUBLAS=1 compiles its own", function()
    -- a product lowers to cuBLAS's extern stage where the library is there and allowed, else to a
    -- Halide product: an entry of one kind must never load in a process of the other
    local dir = tmpdir()
    local script = HEADER .. [==[
local f = hl.jit(function(a, b) return hl.matmul(a, b) * 2 end, {device = "cuda", name = "cudamm"})
result.cublas = f:lower(hl.ones({8, 8}), hl.ones({8, 8})):stmt():find("hl_stage_cublas_matmul", 1, true) ~= nil
info("info")
finish()
]==]
    local r1 = succeeded(run(script, {HALUA_CACHE_DIR = dir}))
    local r2 = run(script, {HALUA_CACHE_DIR = dir, HALUA_NO_CUBLAS = "1"})
    local res2 = succeeded(r2)
    assert.is_false(res2.cublas, r2.text)
    if r1.cublas then   -- (the CUDA toolkit's cuBLAS is on this machine: two kinds, two entries)
      assert.are.equal(1, #lines(r2, "halua: compiled cudamm in "), "no cuBLAS: its own entry\n" .. r2.text)
      assert.are.same({}, lines(r2, "halua: loaded cudamm "), r2.text)
    end
    for _, env in ipairs({{HALUA_CACHE_DIR = dir}, {HALUA_CACHE_DIR = dir, HALUA_NO_CUBLAS = "1"}}) do
      local r = run(script, env)
      local res = succeeded(r)
      assert.are.equal(1, #lines(r, "halua: loaded cudamm from the disk cache in "), "each kind loads its own\n" .. r.text)
      assert.are.equal(env.HALUA_NO_CUBLAS == nil and r1.cublas, res.cublas, r.text)
    end
  end)

  it("on a GPU, CUDA pipelines (jitted and eager) load in a second process and give the same values", function()
    local probe = succeeded(run(HEADER .. "result.gpu = #hl.devices() > 1\nfinish()\n", {HALUA_CACHE_DIR = "off"}))
    if not probe.gpu then
      pending("no GPU here: the CPU test above checks writing, loading and the PTX")
      return
    end
    local dir = tmpdir()
    local script = HEADER .. [==[
local x = hl.device_put(hl.arange(6), "cuda")
local f = hl.jit(function(a) return hl.tanh(a * 2) + a:sum() end, {name = "cudaf"})
local y, e = f(x), hl.exp(x)
result.values = {f = y:to("cpu"):totable(), e = e:to("cpu"):totable()}
result.device = y.device
info("info")
finish()
]==]
    local r1 = run(script, {HALUA_CACHE_DIR = dir})
    local res1 = succeeded(r1)
    check_values(res1.values, r1.text)
    assert.are.equal("cuda", res1.device)
    assert(res1.info.disk_misses >= 2, r1.text)
    local r2 = run(script, {HALUA_CACHE_DIR = dir})
    local res2 = succeeded(r2)
    check_values(res2.values, r2.text)
    assert.are.same(res1.values, res2.values)
    assert.are.same({}, lines(r2, "halua: compiled "), r2.text)
    assert.are.equal(1, #lines(r2, "halua: loaded cudaf from the disk cache in "), r2.text)
    assert.are.equal(res1.info.disk_misses, res2.info.disk_hits, r2.text)
    assert.are.equal(0, res2.info.disk_misses, r2.text)
  end)

  it("HALUA_CACHE_DIR=off: no disk cache, no files anywhere, right values", function()
    local xdg, home = tmpdir(), tmpdir()
    local r = run(PROGRAM, {HALUA_CACHE_DIR = "off", XDG_CACHE_HOME = xdg, HOME = home})
    local res = succeeded(r)
    check_values(res.values, r.text)
    assert.is_nil(res.info.disk_dir, r.text)
    assert.are.equal(0, res.info.disk_hits, r.text)
    assert.are.equal(0, res.info.disk_misses, r.text)
    assert.are.same({}, lines(r, WARNING), r.text)
    assert.are.same({}, files_below(xdg))
    assert.are.same({}, files_below(home))
  end)

  it("without HALUA_CACHE_DIR: $XDG_CACHE_HOME/halua, else ~/.cache/halua", function()
    local xdg, home = tmpdir(), tmpdir()
    local r = run(PROGRAM, {XDG_CACHE_HOME = xdg, HOME = home})
    local res = succeeded(r)
    check_values(res.values, r.text)
    assert.are.equal(xdg .. "/halua", res.info.disk_dir, r.text)
    assert(#listing(xdg .. "/halua").entries >= 2, r.text)
    assert.are.same({}, files_below(home))

    local home2 = tmpdir()
    assert(sh("mkdir -m 0700 " .. q(home2 .. "/.cache")))
    local r2 = run(PROGRAM, {XDG_CACHE_HOME = false, HOME = home2})
    local res2 = succeeded(r2)
    check_values(res2.values, r2.text)
    assert.are.equal(home2 .. "/.cache/halua", res2.info.disk_dir, r2.text)
    assert(#listing(home2 .. "/.cache/halua").entries >= 2, r2.text)
  end)

  -- Entries were shared objects (`<16 hex>.so`) before pipelines loaded without a linker: a cache
  -- that has them counts them, evicts them oldest first and clears them, and never loads one.
  it("entries of an earlier build (<16 hex>.so) are counted, evicted and cleared, never loaded", function()
    local dir = tmpdir()
    local size = 40000
    assert(sh(string.format("cd %s && for i in 1 2 3; do f=$(printf '%%016x.so' $i); head -c %d /dev/zero > $f; " ..
                            "touch -d @$((1577836800 + i)) $f; done", q(dir), size)))
    local old = listing(dir).other
    assert.are.equal(3, #old)
    -- counted (the total passes a 0.1 MB limit) and evicted oldest first
    local r = run(PROGRAM, {HALUA_CACHE_DIR = dir, HALUA_CACHE_MAX_MB = "0.1"})
    local res = succeeded(r)
    local left = {}
    for _, name in ipairs(listing(dir).other) do
      if name:match("^" .. HEX16 .. "%.so$") then left[#left + 1] = name end
    end
    assert(#left < 3, "the old entries were counted against the limit: " .. table.concat(left, " "))
    if #left > 0 then assert.are.equal(("%016x.so"):format(3), left[#left], "the oldest go first") end
    assert(res.info.disk_bytes <= 0.1 * 2 ^ 20, r.text)
    assert.are.equal(res.info.disk_bytes, entries_bytes(dir) + #left * size, r.text)
    -- cleared with the rest
    local script = HEADER .. [==[
hl.cache_clear({disk = true})
info("info")
finish()
]==]
    res = succeeded(run(script, {HALUA_CACHE_DIR = dir}))
    assert.are.equal(0, res.info.disk_bytes)
    local rest = listing(dir)
    assert.are.equal(0, #rest.entries)
    for _, name in ipairs(rest.other) do assert.is_nil(name:match("^" .. HEX16 .. "%.so$"), name) end
  end)

  -- HALUA_PERF_MAP=1: the code of loaded pipelines is named for perf in /tmp/perf-PID.map
  it("HALUA_PERF_MAP=1 names compiled and loaded pipelines' functions in /tmp/perf-PID.map", function()
    local dir = tmpdir()
    local script = HEADER .. [==[
result.pid = tonumber(io.open("/proc/self/stat"):read("*a"):match("^(%d+)"))
result.values = program()
finish()
]==]
    local function map_of(res)
      local path = "/tmp/perf-" .. res.pid .. ".map"
      local text = slurp(path)
      if text then os.remove(path) end
      return text
    end
    for _, how in ipairs({"compiled", "loaded"}) do
      local r = run(script, {HALUA_CACHE_DIR = dir, HALUA_PERF_MAP = "1"})
      local res = succeeded(r)
      assert.are.equal(1, #lines(r, "halua: " .. how .. " disk_f "), r.text)
      local text = assert(map_of(res), "no perf map written (" .. how .. ")")
      local named = {}
      for line in text:gmatch("[^\n]+") do
        local addr, size, label, fn = line:match("^(%x+) (%x+) (.-): (%S+)$")
        assert(addr and tonumber(size, 16) > 0, "a malformed line: " .. line)
        named[label .. ": " .. fn] = true
      end
      assert(named["disk_f: hl_pipeline"] and named["disk_f: hl_pipeline_argv"], how .. ":\n" .. text)
      assert(named["exp: hl_pipeline"], "the eager kernels too (" .. how .. "):\n" .. text)
    end
    -- off without it, and a value that is not 0 or 1 is said once and writes nothing
    local res = succeeded(run(script, {HALUA_CACHE_DIR = dir}))
    assert.is_nil(map_of(res))
    local r = run(script, {HALUA_CACHE_DIR = dir, HALUA_PERF_MAP = "yes"})
    res = succeeded(r)
    assert.is_nil(map_of(res))
    assert.are.equal(1, #lines(r, "halua: warning: HALUA_PERF_MAP=yes is not 0 or 1; no perf map is written"), r.text)
  end)

  it("cache_clear() keeps the disk; cache_clear({disk = true}) empties it but the runtime; bad options are errors", function()
    local dir = tmpdir()
    local script = HEADER .. [==[
local dir = os.getenv("HALUA_CACHE_DIR")
local function ls()
  local p, t = io.popen("ls -A '" .. dir .. "' | LC_ALL=C sort"), {}
  for l in p:lines() do t[#t + 1] = l end
  p:close()
  return t
end
result.values1 = program()
info("first")
hl.cache_clear()                 -- the in-memory index only
result.values2 = program()       -- a new jitted function: found on disk
info("memory_cleared")
hl.cache_clear({disk = true})
info("disk_cleared")
result.ls_cleared = ls()
result.values3 = program()       -- compiled again
info("last")
result.ls_last = ls()
local ok, err = pcall(hl.cache_clear, {bogus = 1})
result.bogus = {ok = ok, err = tostring(err)}
finish()
]==]
    local r = run(script, {HALUA_CACHE_DIR = dir})
    local res = succeeded(r)
    for _, k in ipairs({"values1", "values2", "values3"}) do check_values(res[k], r.text) end
    local first, mem, cleared, last = res.first, res.memory_cleared, res.disk_cleared, res.last
    -- cache_clear(): the next lookups go to the disk and hit (it zeroes the counters, as it did
    -- before there was a disk cache)
    assert.are.equal(0, first.disk_hits, r.text)
    assert(mem.disk_hits >= 1, "after cache_clear() the pipelines load from disk:\n" .. r.text)
    assert(mem.disk_misses == 0 or mem.disk_misses == first.disk_misses, "no disk misses after cache_clear():\n" .. r.text)
    assert.are.equal(1, #lines(r, "halua: loaded disk_f from the disk cache in "), r.text)
    -- cache_clear({disk = true}): no entries left, the runtime kept, and the next call compiles
    assert.are.equal(0, cleared.disk_bytes, r.text)
    local entries, runtimes = 0, 0
    for _, name in ipairs(res.ls_cleared) do
      if name:match("^" .. HEX16 .. "%.o$") then entries = entries + 1 end
      if name:match("^runtime%-" .. HEX16 .. "%.o$") then runtimes = runtimes + 1 end
    end
    assert.are.equal(0, entries, "entries left after cache_clear({disk = true}): " .. table.concat(res.ls_cleared, " "))
    assert.are.equal(1, runtimes, "the runtime stays: " .. table.concat(res.ls_cleared, " "))
    assert(last.disk_misses > cleared.disk_misses, "the call after clearing misses on disk:\n" .. r.text)
    assert.are.equal(2, #lines(r, "halua: compiled disk_f in "), r.text)
    assert(#listing(dir).entries >= 2, "the recompiled pipelines are written again")
    assert.are.equal(entries_bytes(dir), last.disk_bytes, r.text)
    -- an unknown option
    assert.is_false(res.bogus.ok)
    assert.are.equal("halua: cache_clear: unknown option 'bogus' (the options are disk)", res.bogus.err)
  end)
end)
