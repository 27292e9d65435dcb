-- Pytrees: nested Lua tables (array part, then string keys in sorted order) whose leaves are
-- anything that is not a table (arrays, numbers, booleans).
local tree = {}

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do
    if type(k) == "string" then
      keys[#keys + 1] = k
    elseif type(k) ~= "number" or k < 1 or k > #t or k ~= math.floor(k) then
      error("halua: tree: table key " .. tostring(k) .. " is neither a string nor in the array part", 0)
    end
  end
  table.sort(keys)
  return keys
end

-- path: the tables being flattened, outermost first (a table met again on its own path is a
-- cycle, which has no flat form: without this check the walk would end in a stack overflow)
local function flatten_into(t, leaves, path)
  if type(t) ~= "table" then
    leaves[#leaves + 1] = t
    return "*"
  end
  if path[t] then error("halua: tree: the table contains itself (a cycle); a pytree must be a tree of tables", 0) end
  path[t] = true
  local parts = {}
  for i = 1, #t do parts[#parts + 1] = flatten_into(t[i], leaves, path) end
  local keys = sorted_keys(t)
  for _, k in ipairs(keys) do parts[#parts + 1] = string.format("%q=", k) .. flatten_into(t[k], leaves, path) end
  path[t] = nil
  return "{" .. #t .. ":" .. table.concat(parts, ",") .. "}"
end

-- leaves, def: def is a string that describes the structure (usable as a cache key)
function tree.flatten(t)
  local leaves = {}
  local def = flatten_into(t, leaves, {})
  return leaves, def
end

function tree.leaves(t)
  return (tree.flatten(t))
end

-- Parse a def once into a builder: a function of the leaves (in order) that makes the
-- structure. Builders are kept per def (weakly): a jitted function's results are rebuilt from
-- the same def on every call, and parsing it (a loadstring per key) cost more than the call.
local function parse_def(def)
  local pos, nleaves = 1, 0
  local function parse()
    local c = def:sub(pos, pos)
    if c == "*" then
      pos = pos + 1
      nleaves = nleaves + 1
      return nleaves
    end
    if c ~= "{" then error("halua: tree.unflatten: malformed tree definition (from tree.flatten)", 0) end
    local n, after = def:match("^(%d+):()", pos + 1)
    if not n then error("halua: tree.unflatten: malformed tree definition (from tree.flatten)", 0) end
    pos = after
    n = tonumber(n)
    local node = {keys = {}, children = {}, n = n}
    local i = 0
    while def:sub(pos, pos) ~= "}" do
      if pos > #def then error("halua: tree.unflatten: malformed tree definition (from tree.flatten)", 0) end
      if def:sub(pos, pos) == "," then pos = pos + 1 end
      local key
      if i < n then
        i = i + 1
        key = i
      else
        local k, p2 = def:match('^(%b"")=()', pos)
        if not k then error("halua: tree.unflatten: malformed tree definition (from tree.flatten)", 0) end
        pos = p2
        key = loadstring("return " .. k)()
      end
      node.keys[#node.keys + 1] = key
      node.children[#node.children + 1] = parse()
    end
    pos = pos + 1
    return node
  end
  local spec = parse()
  return spec, nleaves
end

local function build(spec, leaves)
  if type(spec) == "number" then return leaves[spec] end
  local t, keys, children = {}, spec.keys, spec.children
  for j = 1, #keys do t[keys[j]] = build(children[j], leaves) end
  return t
end

-- parsed definitions, kept weakly: {spec, number of leaves}
local parsed = setmetatable({}, {__mode = "v"})
local function parsed_def(def)
  local p = parsed[def]
  if not p then
    local spec, nleaves = parse_def(def)
    p = {spec = spec, nleaves = nleaves}
    parsed[def] = p
  end
  return p
end

-- Fill the structure def describes (from tree.flatten) with leaves in order.
function tree.unflatten(def, leaves)
  local p = parsed_def(def)
  if p.nleaves ~= #leaves then error("halua: tree.unflatten: " .. #leaves .. " leaves for a tree of " .. p.nleaves, 0) end
  return build(p.spec, leaves)
end

-- appends v's leaves to out in spec's order; false when v has another structure
local function match(v, spec, out)
  if type(spec) == "number" then
    if v == nil or type(v) == "table" then return false end
    out[#out + 1] = v
    return true
  end
  if type(v) ~= "table" or #v ~= spec.n then return false end
  local keys, children, count = spec.keys, spec.children, 0
  for _ in pairs(v) do count = count + 1 end
  if count ~= #keys then return false end
  for j = 1, #keys do
    if not match(v[keys[j]], children[j], out) then return false end
  end
  return true
end

-- The leaves of t appended to out (a new list without it) when t has the structure def
-- describes, as tree.flatten would give them; nil otherwise. No flattening, sorting or strings:
-- a jitted function checks each call's tables against the structure it saw last this way.
function tree.match(def, t, out)
  out = out or {}
  local n = #out
  if match(t, parsed_def(def).spec, out) then return out end
  for i = #out, n + 1, -1 do out[i] = nil end
  return nil
end

function tree.map(f, t, ...)
  if type(f) ~= "function" and not (type(f) == "table" and getmetatable(f) and getmetatable(f).__call) then
    error("halua: tree.map: argument 1 is a " .. type(f) .. ", expected a function", 0)
  end
  local leaves, def = tree.flatten(t)
  local others = {}
  for i, o in ipairs({...}) do
    local ol, od = tree.flatten(o)
    if od ~= def then error("halua: tree.map: tree " .. (i + 1) .. " has a different structure", 0) end
    others[i] = ol
  end
  local out = {}
  for i, leaf in ipairs(leaves) do
    local args = {leaf}
    for j = 1, #others do args[j + 1] = others[j][i] end
    out[i] = f(unpack(args))
  end
  return tree.unflatten(def, out)
end

return tree
