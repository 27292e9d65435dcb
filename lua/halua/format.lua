-- Printing arrays as NumPy does, in Lua syntax. The text is a Lua expression that rebuilds the
-- array exactly:
--
--   hl.array({{ 1.00,  2.50, -3.00},
--             {10.00,  0.00,  4.25}})
--
-- Every element of an array shares one format and one width (right-aligned, NumPy's
-- floatmode "maxprec_equal" with a `.0` where NumPy writes `1.`): floats get the fewest
-- digits at which every value's text gives it back at the array's own precision (float32
-- values by their float32 digits, float64 by theirs; NumPy stops at 8 digits, which would not
-- rebuild float64: set format.precision = 8 for that), and
-- switch to scientific notation, with one exponent width, when the non-zero magnitudes span
-- more than 1e3 or leave [1e-4, 1e16). NaN and the infinities print as 0/0, 1/0 and -1/0.
-- Past 1000 elements the first and last 3 entries of each long axis are shown with `...`
-- between them (NumPy's threshold and edgeitems); that text is for reading, not for `load`,
-- and only the shown elements are fetched.
--
-- Pure Lua: runs on LuaJIT and on PUC Lua 5.1 to 5.4, with no engine.
local format = {}

local THRESHOLD, EDGE, LINE = 1000, 3, 75   -- NumPy's threshold, edgeitems and linewidth

-- nil (the default): as many digits as rebuild every value exactly. A number k: at most k
-- fraction digits (of the mantissa, in scientific notation), NumPy's `precision` (8 there);
-- shorter lines, but float64 (and rarely float32) values no longer rebuild exactly.
format.precision = nil

local GAP = {}                               -- marks the elided middle of a summarised axis

local floor, abs, huge = math.floor, math.abs, math.huge
local sformat, rep, concat = string.format, string.rep, table.concat
local mtype = math.type                      -- Lua 5.3+: integers print with %d

local function shape_str(shape) return "[" .. concat(shape, ",") .. "]" end
format.shape_str = shape_str

-- "<traced float32[3,4]>"; a 0-d tracer is "<traced float32[]>"
function format.tracer(dtype, shape)
  return "<traced " .. tostring(dtype) .. shape_str(shape or {}) .. ">"
end

-- ------------------------------------------------------------------ rounding to a dtype

-- significand bits, smallest and largest normal exponent, most digits ever needed
local FLOATS = {
  float64  = {p = 53, emin = -1022, emax = 1023, maxd = 17},
  float32  = {p = 24, emin = -126,  emax = 127,  maxd = 9},
  float16  = {p = 11, emin = -14,   emax = 15,   maxd = 5},
  bfloat16 = {p = 8,  emin = -126,  emax = 127,  maxd = 4},
}

local frexp = math.frexp or function(a)    -- Lua 5.4 dropped math.frexp; a > 0 and finite
  local e = floor(math.log(a, 2)) + 1
  local m = a / 2 ^ e
  while m >= 1 do e = e + 1; m = a / 2 ^ e end
  while m < 0.5 do e = e - 1; m = a / 2 ^ e end
  return m, e
end

-- v (a double) rounded to the nearest value of a binary format (ties to even), as a C cast
-- from double to float does; the identity for float64
local has_ffi, ffi = pcall(require, "ffi")
local function rounder(fl)
  if fl.p == 53 then return function(v) return v end end
  if fl.p == 24 and has_ffi then             -- LuaJIT: let the machine round
    local f32 = ffi.new("float[1]")
    return function(v) f32[0] = v; return f32[0] end
  end
  local p, emin, overflow = fl.p, fl.emin, 2 ^ (fl.emax + 1)
  local tiny = 2 ^ emin
  return function(v)
    if v ~= v or v == 0 then return v end
    local a = abs(v)
    if a >= overflow then return v < 0 and -huge or huge end
    local e = emin                           -- subnormals share the smallest exponent's step
    if a >= tiny then
      local _, x = frexp(a)                  -- 2^(x-1) <= a < 2^x
      e = x - 1
    end
    local ulp = 2 ^ (e - p + 1)
    local q = a / ulp                        -- exact: scaling by a power of two
    local f = floor(q)
    local r = q - f
    if r > 0.5 or (r == 0.5 and f % 2 == 1) then f = f + 1 end
    a = f * ulp
    if a >= overflow then a = huge end
    return v < 0 and -a or a
  end
end
format._rounder = function(dtype) return rounder(FLOATS[dtype] or FLOATS.float64) end

-- ------------------------------------------------------------------ element formats

local function special(v)
  if v ~= v then return "0/0" end
  if v == huge then return "1/0" end
  if v == -huge then return "-1/0" end
end

-- The texts of the float values of one array (finite or not), all in one format: fixed
-- ("%.Nf") or scientific ("%.Ne") with the smallest N at which every value's text gives the
-- value back (or format.precision, if smaller).
local function float_texts(values, dtype)
  local fl = FLOATS[dtype] or FLOATS.float64
  local round = rounder(fl)
  local n = #values
  local finite, nf, maxabs, minabs = {}, 0, 0, huge
  for i = 1, n do
    -- values should already be the dtype's; rounding makes sure (the digits are its digits)
    local v = round(values[i])
    values[i] = v
    if v == v and v ~= huge and v ~= -huge then
      nf = nf + 1
      finite[nf] = v
      local a = abs(v)
      if a > maxabs then maxabs = a end
      if a ~= 0 and a < minabs then minabs = a end
    end
  end
  local sci = maxabs > 0 and (maxabs >= 1e16 or minabs < 1e-4 or maxabs / minabs > 1e3)
  local conv = sci and "e" or "f"
  -- N that surely rebuilds: maxd significant digits; fixed notation holds values >= 1e-4
  -- (at most 3 leading zeros after the point) below 1e16
  local hi = sci and fl.maxd - 1 or fl.maxd + 3

  -- the texts at N, or nil as soon as one of them does not give its value back
  local function attempt(N)
    local f, out = "%." .. N .. conv, {}
    for i = 1, nf do
      local v = finite[i]
      local s = sformat(f, v)
      if round(tonumber(s)) ~= v then return nil end
      out[i] = s
    end
    return out
  end

  local cap, capped = format.precision, false
  if cap then
    cap = cap > 1 and floor(cap) or 1
    if cap < hi then hi, capped = cap, true end   -- then values may no longer rebuild
  end
  -- gallop up from 1 (most arrays need few digits, and a failing N fails fast), then bisect;
  -- the N kept is one whose texts were all checked
  local best
  local lo, N = 1, 1
  while N < hi do
    local out = attempt(N)
    if out then best, hi = out, N; break end
    lo = N + 1
    N = N * 2
  end
  while lo < hi do
    local mid = floor((lo + hi) / 2)
    local out = attempt(mid)
    if out then best, hi = out, mid else lo = mid + 1 end
  end
  best = best or attempt(hi)
  if not best then
    -- capped (or, which cannot happen, the known-good N failed): the texts at hi as they are
    best = {}
    local f = capped and "%." .. hi .. conv or "%.16e"
    sci = sci or not capped
    for i = 1, nf do best[i] = sformat(f, finite[i]) end
  end

  if sci then
    -- one exponent width for all: C writes at least two digits, NumPy pads to the widest
    local ew = 2
    for i = 1, nf do
      local e = #best[i] - (best[i]:find("e", 1, true) + 1)
      if e > ew then ew = e end
    end
    if ew > 2 then
      for i = 1, nf do
        local mant, sign, digits = best[i]:match("^(.-)e([%-+])(%d+)$")
        best[i] = mant .. "e" .. sign .. rep("0", ew - #digits) .. digits
      end
    end
  end

  local out, k = {}, 0
  for i = 1, n do
    local v = values[i]
    local s = special(v)
    if not s then k = k + 1; s = best[k] end
    out[i] = s
  end
  return out
end

local function int_text(v)
  if type(v) == "cdata" then return (tostring(v):gsub("U?LL$", "")) end   -- LuaJIT int64
  if v == 0 then return "0" end
  if mtype and mtype(v) == "integer" then return sformat("%d", v) end
  -- int64's largest, 2^63 - 1, arrives as the double 2^63: print the int64 (which reads
  -- back as the same double)
  if v >= 9223372036854775807 then return "9223372036854775807" end
  return sformat("%.0f", v)                  -- exact for integral doubles of any size
end

local function bool_text(v)
  if v == true or (type(v) == "number" and v ~= 0) then return "true" end
  return "false"
end

-- the texts of the shown values, in order
local function texts(dtype, values)
  if dtype == "bool" or not (FLOATS[dtype] or tostring(dtype):match("float")) then
    local fmt = dtype == "bool" and bool_text or int_text
    local out = {}
    for i = 1, #values do out[i] = fmt(values[i]) end
    return out
  end
  return float_texts(values, dtype)
end

-- ------------------------------------------------------------------ layout

-- Collect the shown values into a nested structure of indices into `values`, calling get only
-- for them (each once).
local function gather(get, shape, summarise)
  local nd = #shape
  local strides, n = {}, 1
  for d = nd, 1, -1 do
    strides[d] = n
    n = n * shape[d]
  end
  local values, count = {}, 0
  local function picks(extent)
    if summarise and extent > 2 * EDGE then
      local p = {}
      for i = 0, EDGE - 1 do p[#p + 1] = i end
      p[#p + 1] = GAP
      for i = extent - EDGE, extent - 1 do p[#p + 1] = i end
      return p
    end
  end
  local function rec(d, base)
    local node, extent, stride = {}, shape[d], strides[d]
    local p = picks(extent)
    local m = p and #p or extent
    for k = 1, m do
      local i
      if p then i = p[k] else i = k - 1 end
      if i == GAP then
        node[k] = GAP
      elseif d == nd then
        count = count + 1
        values[count] = get(base + i * stride)
        node[k] = count
      else
        node[k] = rec(d + 1, base + i * stride)
      end
    end
    return node
  end
  return rec(1, 0), values
end

-- Lay out a nested structure whose opening brace sits at column `col` (0-based): rows break
-- onto new lines aligned under the brace, blocks of 3-d and deeper arrays are separated by
-- blank lines, and long rows wrap with continuation lines at the row's content column.
local function render(node, cells, depth, ndim, col, out)
  out[#out + 1] = "{"
  if depth == ndim then
    local pad = rep(" ", col + 1)
    local pos = col + 1                      -- the column where the next text goes
    for k = 1, #node do
      local i = node[k]
      local cell = i == GAP and "..." or cells[i]
      if k > 1 then
        -- the line with ", cell" and its closing "," or "}" must fit in LINE columns
        if pos + 2 + #cell + 1 > LINE then
          out[#out + 1] = ",\n" .. pad
          pos = col + 1
        else
          out[#out + 1] = ", "
          pos = pos + 2
        end
      end
      out[#out + 1] = cell
      pos = pos + #cell
    end
  else
    local sep = ",\n" .. rep("\n", ndim - depth - 1) .. rep(" ", col + 1)
    for k = 1, #node do
      if k > 1 then out[#out + 1] = sep end
      local child = node[k]
      if child == GAP then
        out[#out + 1] = "..."
      else
        render(child, cells, depth + 1, ndim, col + 1, out)
      end
    end
  end
  out[#out + 1] = "}"
end

local PREFIX = "hl.array("

-- get(i): element i (0-based flat index, row-major) as a Lua number or boolean (a complex one: {re, im});
-- shape: table of extents (empty for 0-d; extents may be 0); dtype: its name.
function format.array(get, shape, dtype)
  dtype = dtype or "float32"
  local suffix = dtype == "float32" and ")" or ', "' .. dtype .. '")'
  local n = 1
  for d = 1, #shape do n = n * shape[d] end
  if n == 0 then
    -- nested empty tables cannot say [2, 0]; zeros of that shape can
    return "hl.zeros({" .. concat(shape, ", ") .. "}" .. suffix
  end
  if dtype == "complex64" or dtype == "complex128" then
    -- Lua has no complex numbers (an element is the pair {re, im}): the parts, as hl.complex rebuilds them
    local part = dtype == "complex64" and "float32" or "float64"
    return "hl.complex(" .. format.array(function(i) return get(i)[1] end, shape, part) .. ", " ..
           format.array(function(i) return get(i)[2] end, shape, part) .. ")"
  end
  if #shape == 0 then
    return PREFIX .. texts(dtype, {get(0)})[1] .. suffix
  end
  local nested, values = gather(get, shape, n > THRESHOLD)
  local cells = texts(dtype, values)
  local width = 0
  for i = 1, #cells do
    local w = #cells[i]
    if w > width then width = w end
  end
  for i = 1, #cells do
    local w = #cells[i]
    if w < width then cells[i] = rep(" ", width - w) .. cells[i] end
  end
  local out = {PREFIX}
  render(nested, cells, 1, #shape, #PREFIX, out)
  out[#out + 1] = suffix
  return concat(out)
end

return format
