-- Printing arrays as NumPy does, in Lua syntax: the text is an expression that rebuilds the
-- array exactly (`hl.array({{1.0, 2.5}, {3.0, 4.0}})`): every element in one format and one
-- width, floats with the fewest digits that give every value back (NumPy stops at 8 digits,
-- which does not rebuild float64), summarised with `...` past 1000 elements (then it is for
-- reading, not for `load`).
local ffi = require "ffi"
local format = {}

local THRESHOLD, EDGE, LINE = 1000, 3, 75
local GAP = {}   -- marks the elided middle of a summarised axis

local function shape_str(shape) return "[" .. table.concat(shape, ",") .. "]" end

function format.tracer(dtype, shape)
  return "<traced " .. dtype .. shape_str(shape) .. ">"
end

-- the flat indices shown along each axis: all of them, or the first and last EDGE with a gap
local function axis_picks(n, summarise)
  local picks = {}
  if summarise and n > 2 * EDGE then
    for i = 0, EDGE - 1 do picks[#picks + 1] = i end
    picks[#picks + 1] = GAP
    for i = n - EDGE, n - 1 do picks[#picks + 1] = i end
  else
    for i = 0, n - 1 do picks[#picks + 1] = i end
  end
  return picks
end

-- Collect the shown values (calling get only for them) into a nested structure.
local function gather(get, shape, summarise)
  local strides, n = {}, 1
  for d = #shape, 1, -1 do
    strides[d] = n
    n = n * shape[d]
  end
  local values = {}
  local function rec(d, base)
    local node = {}
    for _, i in ipairs(axis_picks(shape[d], summarise)) do
      if i == GAP then
        node[#node + 1] = GAP
      elseif d == #shape then
        local v = get(base + i * strides[d])
        node[#node + 1] = v
        values[#values + 1] = v
      else
        node[#node + 1] = rec(d + 1, base + i * strides[d])
      end
    end
    return node
  end
  return rec(1, 0), values
end

-- One formatter for all the values of an array, as NumPy chooses: integers plainly; floats
-- with the fewest digits (up to 8 significant) that show every value, or scientific notation
-- when magnitudes span more than 1e3 or leave [1e-4, 1e16).
-- the fewest significant digits that give v back at its own precision (float32 values were
-- widened to doubles on the way here; NumPy prints them by their float32 digits)
local f32 = ffi.new("float[1]")
local function shortest(v, single)
  for d = 0, single and 8 or 16 do   -- %.de has d + 1 significant digits
    local s = string.format("%." .. d .. "e", v)
    local back = tonumber(s)
    if single then
      f32[0] = back
      back = f32[0]
    end
    if back == v then return d + 1, s end
  end
  return 17, string.format("%.16e", v)
end

local function float_formatter(values, single)
  local finite, maxabs, minabs = {}, 0, math.huge
  for _, v in ipairs(values) do
    if v == v and v ~= math.huge and v ~= -math.huge then
      finite[#finite + 1] = v
      local a = math.abs(v)
      if a > maxabs then maxabs = a end
      if a ~= 0 and a < minabs then minabs = a end
    end
  end
  local sci = #finite > 0 and maxabs > 0 and (maxabs >= 1e16 or minabs < 1e-4 or maxabs / minabs > 1e3)
  local function special(v)
    if v ~= v then return "0/0" end
    if v == math.huge then return "1/0" end
    if v == -math.huge then return "-1/0" end
  end
  -- the fewest significant digits that give every value back (the text rebuilds the array)
  local sig = 1
  for _, v in ipairs(finite) do sig = math.max(sig, (shortest(v, single))) end
  if sci then
    return function(v)
      return special(v) or (string.format("%." .. (sig - 1 > 0 and sig - 1 or 1) .. "e", v):gsub("e([%-+])0*(%d%d)", "e%1%2"))
    end
  end
  local decimals = 1
  for _, v in ipairs(finite) do
    local _, s = shortest(v, single)
    local mant, exp = s:match("^%-?(%d[%.%d]*)e([%-+]%d+)$")
    local digits = #mant:gsub("%.", ""):gsub("0+$", "")
    local frac = math.max(0, digits - 1 - tonumber(exp))
    if frac > decimals then decimals = frac end
  end
  return function(v)
    return special(v) or string.format("%." .. decimals .. "f", v)
  end
end

local function formatter(dtype, values)
  if dtype == "bool" then return function(v) return v and "true" or "false" end end
  if dtype:match("^float") or dtype == "bfloat16" then return float_formatter(values, dtype ~= "float64") end
  return function(v) return string.format("%d", v) end
end

-- Lay out the nested structure with right-aligned columns and NumPy's line breaks.
local function render(node, fmt, width, depth, ndim, indent)
  if ndim == 0 then return fmt(node) end
  local parts = {}
  if depth == ndim then
    local line, lines = {}, {}
    local len = indent
    for _, v in ipairs(node) do
      local cell = v == GAP and string.rep(" ", width - 3) .. "..." or string.rep(" ", width - #fmt(v)) .. fmt(v)
      if #line > 0 and len + #cell + 2 > LINE then
        lines[#lines + 1] = table.concat(line, ", ")
        line, len = {}, indent
      end
      line[#line + 1] = cell
      len = len + #cell + 2
    end
    lines[#lines + 1] = table.concat(line, ", ")
    return "{" .. table.concat(lines, ",\n" .. string.rep(" ", indent + 1)) .. "}"
  end
  for _, child in ipairs(node) do
    if child == GAP then
      parts[#parts + 1] = "..."
    else
      parts[#parts + 1] = render(child, fmt, width, depth + 1, ndim, indent + 1)
    end
  end
  -- blocks of 3-d and deeper arrays are separated by blank lines, as in NumPy
  local sep = ",\n" .. string.rep("\n", math.max(0, ndim - depth - 1)) .. string.rep(" ", indent + 1)
  return "{" .. table.concat(parts, sep) .. "}"
end

-- get(i): element i (0-based, row-major); shape: table of extents; dtype: its name
function format.array(get, shape, dtype)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local suffix = dtype == "float32" and ")" or string.format(", %q)", dtype)
  if n == 0 then
    return "hl.zeros({" .. table.concat(shape, ", ") .. "}" .. (dtype == "float32" and ")" or string.format(", %q)", dtype))
  end
  if #shape == 0 then
    local v = get(0)
    return "hl.array(" .. formatter(dtype, {v})(v) .. suffix
  end
  local summarise = n > THRESHOLD
  local nested, values = gather(get, shape, summarise)
  local fmt = formatter(dtype, values)
  local width = summarise and 3 or 1
  for _, v in ipairs(values) do
    local w = #fmt(v)
    if w > width then width = w end
  end
  return "hl.array(" .. render(nested, fmt, width, 1, #shape, #"hl.array(") .. suffix
end

format.shape_str = shape_str
return format
