-- hl.help: every public function has an entry, every entry's example runs, lookups by name and
-- by value work; and what the shell shows: one-line "halua: " errors and readable values.
local hl = require "halua"
local docs = require "halua.docs"

-- Tables under hl that are not API and so need no entries: hl.core (the C binding) and hl.rules
-- (autodiff's rule table). hl.methods is walked below, as methods. Names starting with "_" are
-- private. Everything else reachable from hl is public.
local not_api = {core = true, rules = true, methods = true}

-- qualified name -> function, for every function reachable from hl (own walk, not help's)
local function public_functions()
  local mt = getmetatable(hl)   -- (the namespaces loaded on first use: init.lua)
  if mt and mt.load_all then mt.load_all() end
  local out, seen = {}, {}
  local function visit(t, prefix)
    if seen[t] then return end
    seen[t] = true
    for k, v in pairs(t) do
      if type(k) == "string" and k:sub(1, 1) ~= "_" then
        if type(v) == "function" then out[prefix .. k] = v
        elseif type(v) == "table" and getmetatable(v) == nil and not (prefix == "" and not_api[k]) then
          visit(v, prefix .. k .. ".")
        end
      end
    end
  end
  visit(hl, "")
  return out
end

local function text(what) return hl.help(what, {print = false}) end

-- the function an entry's name stands for, or nil when no module has added it yet
local function present(name)
  local m = name:match("^x:(.+)$")
  if m then return hl.methods[m] end
  local v = hl
  for part in name:gmatch("[^.]+") do
    if type(v) ~= "table" then return nil end
    v = v[part]
  end
  return v
end

describe("hl.help", function()
  it("has an entry for every public function, found by name and by value", function()
    local n = 0
    for name, f in pairs(public_functions()) do
      local ok, t = pcall(text, name)
      assert.truthy(ok, "no help for hl." .. name .. ": " .. tostring(t))
      local ok2, t2 = pcall(text, f)
      assert.truthy(ok2, "no help for the value of hl." .. name .. ": " .. tostring(t2))
      -- the same page, less the line saying which name was asked for ("(hl.negative is hl.neg)")
      local function page(x) return (x:gsub("\n  %([^\n]- is [^\n]-%)", "")) end
      assert.are.equal(page(t), page(t2))
      n = n + 1
    end
    assert.truthy(n > 140, "only " .. n .. " functions walked")
  end)

  it("has an entry for every array method", function()
    for name, f in pairs(hl.methods) do
      assert.truthy(pcall(text, f), "no help for the method x:" .. name)
      assert.truthy(pcall(text, name), "no help for the method name " .. name)
    end
  end)

  it("runs every entry's example (skipping functions not in this build yet)", function()
    local ran, skipped = 0, {}
    for name, e in pairs(docs.entries) do
      if not e.alias then
        assert.truthy(e.sig and e.doc and e.example and e.group, "entry " .. name .. " is incomplete")
        if present(name) == nil then
          skipped[#skipped + 1] = name
        else
          local out = {}
          local env = setmetatable({hl = hl, print = function(...)
            local parts = {}
            for i = 1, select("#", ...) do parts[i] = tostring((select(i, ...))) end
            out[#out + 1] = table.concat(parts, "\t")
          end}, {__index = _G})
          local chunk, err = load(e.example, "=example " .. name, "t", env)
          assert.truthy(chunk, "example of " .. name .. " does not compile: " .. tostring(err))
          if setfenv then setfenv(chunk, env) end
          local ok, rerr = pcall(chunk)
          assert.truthy(ok, "example of " .. name .. " fails: " .. tostring(rerr))
          assert.truthy(#out > 0, "example of " .. name .. " prints nothing")
          ran = ran + 1
        end
      end
    end
    table.sort(skipped)
    -- the skipped ones are docs/api.md functions other modules are adding; once present they run
    print(string.format("\nhelp_spec: %d examples ran, %d skipped (not in this build yet: %s)", ran, #skipped,
                        table.concat(skipped, " ")))
    assert.truthy(ran > 150)
  end)

  it("shows a signature, a paragraph and an example", function()
    local t = text("sum")
    assert.truthy(t:find("^hl%.sum%(x %[, axes%] %[, keepdims%]%)"), t)
    assert.truthy(t:find("1-based", 1, true))
    assert.truthy(t:find("keepdims", 1, true))
    assert.truthy(t:find("\n  Example:\n    ", 1, true))
    assert.are.equal(t, text(hl.sum))
    assert.are.equal(t, text("hl.sum"))
    assert.are.equal(t, text("x:sum"):gsub("\n  %(x:sum is hl%.sum%)", ""), nil)
  end)

  it("finds functions by value, sub-tables and second names included", function()
    assert.truthy(text(hl.random.split):find("^hl%.random%.split%(key %[, n%]%)"))
    assert.truthy(text(hl.tree.map):find("^hl%.tree%.map%(f, tree"))
    assert.truthy(text(hl.softmax):find("^hl%.nn%.softmax"))
    assert.truthy(text(hl.ones(2).astype):find("^hl%.astype%(x, dtype%)"))
    assert.truthy(text(hl.ones(2).item):find("^x:item%(%)"))
    assert.truthy(text("item"):find("^x:item%(%)"))
    assert.truthy(text("at"):find("^x:at%(index%)"))
    assert.truthy(text("shape"):find("x.shape", 1, true))
    assert.truthy(text(hl.ones(2)):find("^hl%.array%(v"))
    local jf = hl.jit(function(x) return x end, {name = "ident"})
    assert.truthy(text(jf):find("^<jit function ident: 0 signatures traced>\nhl%.jit%(f"))
  end)

  it("finds functions added to hl after it was first used", function()
    text("sum")   -- builds the map from functions to names
    local f = function() end
    hl.nn.__help_probe = f   -- a private name: walks skip it, so no entry is needed
    assert.is_false(pcall(text, f))
    hl.nn.__help_probe = nil
    local had = hl.nn.relu
    if not had then
      hl.nn.relu = function(x) return hl.maximum(x, 0) end
      assert.truthy(text(hl.nn.relu):find("^hl%.nn%.relu%(x%)"))
      assert.falsy(text("nn.relu"):find("not in this build", 1, true))
      hl.nn.relu = nil
      assert.truthy(text("nn.relu"):find("not in this build", 1, true))
    end
  end)

  it("names close matches for an unknown name", function()
    local ok, err = pcall(hl.help, "summ")
    assert.is_false(ok)
    assert.truthy(err:find("^halua: help: no function named 'summ' %(did you mean sum"), err)
    ok, err = pcall(hl.help, "rnadom.split")
    assert.truthy(err:find("random.split", 1, true), err)
    ok, err = pcall(hl.help, "qqqqqqq")
    assert.truthy(err:find("^halua: help: no function named 'qqqqqqq' %(hl%.help%(%) lists every function%)"), err)
    ok, err = pcall(hl.help, print)
    assert.truthy(err:find("^halua: help: this function is not one of halua's"), err)
    ok, err = pcall(hl.help, 42)
    assert.truthy(err:find("^halua: help: expected a function or a name, got a number"), err)
  end)

  it("gives an overview by group, listing what is present", function()
    local t = text()
    for _, g in ipairs {"Arrays:", "Reductions and scans:", "Transformations:", "Random numbers (hl.random):"} do
      assert.truthy(t:find("\n" .. g, 1, true), g)
    end
    assert.truthy(t:find("random.split", 1, true))
    if not hl.optim then assert.falsy(t:find("optim.adam", 1, true)) end
  end)

  it("prints by default and then returns nothing", function()
    local printed
    local old = print
    _G.print = function(s) printed = s end
    local r = hl.help("mean")
    _G.print = old
    assert.is_nil(r)
    assert.are.equal(text("mean"), printed)
  end)
end)

describe("what the shell shows", function()
  local function message(f, ...)
    local ok, err = pcall(f, ...)
    assert.is_false(ok)
    return err
  end

  it("engine errors start with 'halua: ', with no file:line of halua's own files", function()
    assert.are.equal("halua: reshape: cannot reshape [3] (3 elements) to [2]",
                     message(hl.reshape, hl.ones(3), {2}))
    -- raised in C (engine/lua/hl_lua_loop.c) with a Lua function of control.lua as its caller
    local f = hl.jit(function(x)
      local init = {}
      for i = 1, 30 do init[i] = x end
      return hl.fori_loop(1, 2, function(_, c)
        local o = {}
        for k = 1, #c do o[k] = c[k] + 1 end
        return o
      end, init)
    end)
    assert.truthy(message(f, hl.ones(2)):find("^halua: fori_loop: the loop carries or scans more than"))
    -- wrong argument types reach no Lua internals
    assert.are.equal("halua: tree.map: argument 1 is a number, expected a function", message(hl.tree.map, 1, {1}))
    assert.truthy(message(hl.tree.unflatten, "x", {}):find("^halua: tree.unflatten: malformed"))
    assert.truthy(message(hl.expand_dims, "a", 1):find("^halua: expand_dims: argument 1 is a string"))
    assert.truthy(message(hl.dot, {1}, 2):find("^halua: dot: argument 1 is a table"))
    assert.truthy(message(hl.tostring, 1):find("^halua: tostring: argument 1 is a number"))
  end)

  it("prints jitted functions, lowerings, traces, tracers and cache_info readably", function()
    local f = hl.jit(function(x) return x * 2 end, {name = "double"})
    assert.are.equal("<jit function double: 0 signatures traced>", tostring(f))
    f(hl.ones(2))
    assert.are.equal("<jit function double: 1 signature traced>", tostring(f))
    assert.truthy(tostring(hl.jit(function(x) return x end)):find("^<jit function .*help_spec%.lua:%d+: 0 signatures traced>$"))
    assert.truthy(tostring(f:lower(hl.ones(2))):find("mul", 1, true))
    assert.truthy(tostring(hl.trace(function(x) return hl.exp(x) end, hl.ones(2))):find("exp", 1, true))
    local seen
    hl.jit(function(x) seen = tostring(x) return x end)(hl.ones({3, 4}))
    assert.are.equal("<traced float32[3,4]>", seen)
    local info = hl.cache_info()
    assert.are.equal("number", type(info.entries))
    assert.truthy(tostring(info):find("^{entries = %d+, hits = %d+, misses = %d+, compile_ms = [%d.]+, disk_hits = %d+, " ..
                                      "disk_misses = %d+, disk_bytes = %d+, disk_load_ms = [%d.]+, disk_dir = [^,]+, mem_bytes = %d+, " ..
                                      "mem_limit = %d+, evictions = %d+}$"), tostring(info))
  end)
end)

describe("the shell (lua/halua/repl.lua, started by scripts/halua)", function()
  -- the shell reading `input`, in a process of its own (it owns stdin and the SIGINT handler)
  local function session(input)
    local path = os.tmpname()
    local f = assert(io.open(path, "w"))
    f:write(input)
    f:close()
    local p = assert(io.popen("luajit -e 'require(\"halua.repl\").run()' < " .. path .. " 2>&1"))
    local out = p:read("*a")
    p:close()
    os.remove(path)
    return out
  end

  it("shows values of expressions, halua's errors as one line, and continues lines", function()
    local out = session(table.concat({
      "x = hl.ones({2, 3})",
      "x:sum()",
      "x.shape",
      "hl.reshape(hl.ones(3), {2})",
      "hl.array({1,",
      "  2})",
      "hl.jit(function(a) return a end)",
      "hl.cache_info().misses >= 0",
      "nosuch()",
      "hl.help('mean')",
    }, "\n") .. "\n")
    assert.truthy(out:find("> hl.array(6.0)\n", 1, true), out)
    assert.truthy(out:find("> {2, 3}\n", 1, true), out)
    assert.truthy(out:find("> halua: reshape: cannot reshape [3] (3 elements) to [2]\n> ", 1, true), out)
    assert.truthy(out:find("> >> hl.array({1.0, 2.0})\n", 1, true), out)
    assert.truthy(out:find("> <jit function stdin:1: 0 signatures traced>\n", 1, true), out)
    assert.truthy(out:find("> true\n", 1, true), out)
    assert.truthy(out:find("> stdin:1: attempt to call global 'nosuch' (a nil value)\n", 1, true), out)
    assert.truthy(out:find("> hl.mean(x [, axes] [, keepdims])", 1, true), out)
    assert.falsy(out:find("stack traceback", 1, true), out)
  end)

  it("shows plain tables by their contents", function()
    local show = require("halua.repl").show
    assert.are.equal('{1, {2, 3}, a = "x", b = {c = {...}}}', show({1, {2, 3}, a = "x", b = {c = {d = 1}}}))
    assert.are.equal("hl.array(1.0)", show(hl.array(1)))
    assert.are.equal("text", show("text"))
  end)
end)

-- Some modules load on the first use of the namespace they add (init.lua): every name they add
-- must load its module when a script uses it first, in a new process
describe("modules loaded on first use", function()
  local function run(code)
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write('local hl = require "halua"\n', code)
    f:close()
    local p = io.popen("luajit " .. script .. " 2>&1")
    local out = p:read("*a")
    p:close()
    os.remove(script)
    return out
  end
  -- what the deferred modules add: the names load_all brings, in a process that used none
  local added = run([[
    local before, mbefore = {}, {}
    for k in pairs(hl) do before[k] = true end
    for k in pairs(hl.methods) do mbefore[k] = true end
    getmetatable(hl).load_all()
    for k in pairs(hl) do if not before[k] then io.write("hl ", k, "\n") end end
    for k in pairs(hl.methods) do if not mbefore[k] then io.write("method ", k, "\n") end end
  ]])
  local names, methods = {}, {}
  for kind, k in added:gmatch("(%a+) ([%w_]+)") do table.insert(kind == "hl" and names or methods, k) end
  table.sort(names)
  table.sort(methods)

  it("defers the modules of these names", function()
    -- (a list here too, so that a module that stops being deferred, or a name it stops adding, is seen)
    assert.are.same({"dist", "fft", "linalg", "optim"}, names)
    -- none adds methods: arrays find theirs in a plain table, which nothing would load on a miss
    assert.are.same({}, methods)
  end)
  it("loads each name's module when the name is used first", function()
    for _, k in ipairs(names) do
      local out = run(string.format([[
        assert(rawget(hl, %q) == nil, "loaded before its first use")
        local v = hl[%q]
        io.write(type(v), " ", tostring(rawget(hl, %q) == v))
      ]], k, k, k))
      assert.truthy(out:match("^function true$") or out:match("^table true$"), k .. ": " .. out)
    end
  end)
end)
