-- hl.help: documentation in the shell. The entries live in lua/halua/docs.lua, keyed by the
-- name under hl ("sum", "random.split", "nn.init.glorot") or "x:item" for methods with no hl
-- function. A function value is found by identity through a map from functions to names, built
-- when first needed and rebuilt when a function is missing from it, so functions other modules
-- add to hl later are found too.
return function(hl)
  local util = require "halua.util"
  local fail = util.fail

  local docs                       -- loaded on first use: most scripts never ask for help
  local function entries()
    docs = docs or require "halua.docs"
    return docs.entries
  end

  -- tables under hl that are not API: the C binding, autodiff's rule table, and the method table
  -- (walked separately, as "x:name")
  local internal = {core = true, rules = true, methods = true}

  -- every public function reachable from hl: name -> function, and function -> preferred name
  local function walk()
    local by_name, by_fn = {}, {}
    local E = entries()
    -- the namespaces loaded on first use (init.lua) are listed too
    local mt = getmetatable(hl)
    if mt and mt.load_all then mt.load_all() end
    local function note(name, f)
      by_name[name] = f
      local old = by_fn[f]
      -- one function under several names (hl.softmax is hl.nn.softmax): the first found with
      -- an entry of its own wins
      if old == nil or (not E[old] and E[name]) then by_fn[f] = name end
    end
    local seen = {}
    local function visit(t, prefix)
      if seen[t] then return end
      seen[t] = true
      local keys = {}
      for k in pairs(t) do
        if type(k) == "string" and k:sub(1, 1) ~= "_" then keys[#keys + 1] = k end
      end
      table.sort(keys)
      local tables = {}
      for _, k in ipairs(keys) do
        local v = t[k]
        if type(v) == "function" then note(prefix .. k, v)
        elseif type(v) == "table" and getmetatable(v) == nil and not (prefix == "" and internal[k]) then
          tables[#tables + 1] = k
        end
      end
      -- functions of a table before those of its sub-tables: hl.softmax is found as "softmax"
      for _, k in ipairs(tables) do visit(t[k], prefix .. k .. ".") end
    end
    visit(hl, "")
    local mkeys = {}
    for k, v in pairs(hl.methods or {}) do
      if type(v) == "function" then mkeys[#mkeys + 1] = k end
    end
    table.sort(mkeys)
    for _, k in ipairs(mkeys) do
      local f = hl.methods[k]
      if by_fn[f] == nil then note("x:" .. k, f) end   -- x:sum is hl.sum: listed once
    end
    return by_name, by_fn
  end

  local by_fn_cache
  local function name_of(f)
    local name = by_fn_cache and by_fn_cache[f]
    if name then return name end
    by_fn_cache = select(2, walk())
    return by_fn_cache[f]
  end

  -- the function a qualified name stands for now (nil when no module has added it yet)
  local function present(name)
    local m = name:match("^x:(.+)$")
    if m then return hl.methods and hl.methods[m] end
    local v = hl
    for part in name:gmatch("[^.]+") do
      if type(v) ~= "table" then return nil end
      v = v[part]
    end
    return v
  end

  local function levenshtein(a, b)
    local prev = {}
    for j = 0, #b do prev[j] = j end
    for i = 1, #a do
      local cur = {[0] = i}
      for j = 1, #b do
        local cost = a:byte(i) == b:byte(j) and 0 or 1
        cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
      end
      prev = cur
    end
    return prev[#b]
  end

  local function close_matches(name)
    local E = entries()
    local candidates, seen = {}, {}
    local function add(k)
      if not seen[k] then seen[k] = true; candidates[#candidates + 1] = k end
    end
    for k, e in pairs(E) do if not e.topic then add(k) end end
    for k in pairs((walk())) do add(k) end
    local lname = name:lower()
    local scored = {}
    for _, k in ipairs(candidates) do
      local short = k:match("[^.:]+$")
      local d = math.min(levenshtein(lname, k:lower()), levenshtein(lname, short:lower()))
      if #lname >= 3 and k:lower():find(lname, 1, true) then d = math.min(d, 1) end
      if d <= math.max(1, math.floor(#lname / 3)) then scored[#scored + 1] = {k, d} end
    end
    table.sort(scored, function(p, q) return p[2] < q[2] or (p[2] == q[2] and p[1] < q[1]) end)
    local out = {}
    for i = 1, math.min(6, #scored) do out[i] = scored[i][1] end
    return out
  end

  -- name -> key, entry (aliases followed), the name as asked (nil for a topic word), or nil
  local function resolve(name)
    local E = entries()
    name = name:gsub("^%s+", ""):gsub("%s+$", ""):gsub("^hl%.", ""):gsub("%(%)$", "")
    name = name:gsub("^x%.", "x:"):gsub("^:", "x:")
    local asked = name
    if name:match("^x:") and not E[name] then name = name:sub(3) end
    local key = E[name] and name or (E["x:" .. name] and "x:" .. name) or nil
    if not key then
      -- a method name whose function has an hl name: "x:sum" is hl.sum
      local f = hl.methods and hl.methods[name]
      key = f and name_of(f)
      if not key or not E[key] then return nil, name end
    end
    local entry = E[key]
    local topic = entry.topic   -- "shape" or "x.T": a word that leads to a page, not a second name
    while entry.alias do key, entry = entry.alias, E[entry.alias] end
    return key, entry, not topic and asked or nil
  end

  local function wrap(text, indent, width)
    local lines, line = {}, indent
    for word in text:gmatch("%S+") do
      if #line > #indent and #line + 1 + #word > width then
        lines[#lines + 1] = line
        line = indent .. word
      else
        line = line == indent and indent .. word or line .. " " .. word
      end
    end
    if #line > #indent then lines[#lines + 1] = line end
    return table.concat(lines, "\n")
  end

  local function render(key, entry, asked)
    local out = {entry.sig}
    if asked and asked ~= key and "x:" .. asked ~= key then
      local shown = asked:match("^x:") and asked or "hl." .. asked
      out[#out + 1] = "  (" .. shown .. " is " .. (key:match("^x:") and key or "hl." .. key) .. ")"
    end
    out[#out + 1] = wrap(entry.doc, "  ", 78)
    if present(key) == nil then
      out[#out + 1] = "  (" .. (key:match("^x:") and key or "hl." .. key) .. " is not in this build yet.)"
    end
    out[#out + 1] = "  Example:"
    out[#out + 1] = "    " .. entry.example:gsub("\n", "\n    ")
    return table.concat(out, "\n")
  end

  local function overview()
    local D = docs or require "halua.docs"
    docs = D
    local groups, names = {}, {}
    for _, key in ipairs(D.order) do
      local e = D.entries[key]
      if present(key) ~= nil then
        if not names[e.group] then
          groups[#groups + 1] = e.group
          names[e.group] = {}
        end
        local list = names[e.group]
        list[#list + 1] = key
      end
    end
    local out = {"halua: hl.help(name) or hl.help(fn) describes one function, with an example:",
                 "  hl.help(\"sum\"), hl.help(hl.jit), hl.help(\"random.split\"), hl.help(\"item\")."}
    for _, g in ipairs(groups) do
      out[#out + 1] = g .. ":"
      out[#out + 1] = wrap(table.concat(names[g], " "), "  ", 78)
    end
    return table.concat(out, "\n")
  end

  local function text_for(what)
    if what == nil then return overview() end
    local t = type(what)
    if t == "string" then
      local key, entry, asked = resolve(what)
      if key then return render(key, entry, asked) end
      local near = close_matches(entry or what)
      fail("help: no function named '%s'%s", what, #near > 0 and " (did you mean " .. table.concat(near, ", ") .. "?)"
           or " (hl.help() lists every function)")
    end
    if hl.core and hl.core.is_array(what) then return render(resolve("array")) end
    if t == "function" or (t == "table" and getmetatable(what) and getmetatable(what).__call) then
      local name = name_of(what)
      local key, entry
      if name then key, entry = resolve(name) end
      if key then return render(key, entry, name) end
      -- a function hl.jit made: what it is, then how jitted functions work
      local shown = tostring(what)
      if t == "table" and shown:find("^<jit function ") then return shown .. "\n" .. render(resolve("jit")) end
      fail("help: this %s is not one of halua's functions (hl.help() lists them; a jitted function is " ..
           "described by hl.help(\"jit\"))", t)
    end
    fail("help: expected a function or a name, got a %s", t)
  end

  -- hl.help([fn_or_name] [, opts]): prints, or with opts.print == false returns the text. It
  -- returns nothing when printing so the shell does not show the text twice.
  function hl.help(what, opts)
    opts = util.options("help", opts, {"print"}, "{print = false}")
    local text = text_for(what)
    if opts and opts.print == false then return text end
    print(text)
  end
end
