-- NumPy as the reference: cases are collected, evaluated by one python3 process, and compared.
--   local np = require "support.numpy"
--   local batch = np.batch()
--   local want = batch:add("np.exp(a)", {x})      -- inputs are a, b, ... in the expression
--   batch:run()
--   np.assert_close(hl.exp(x), want())            -- want() is {dtype, shape, values} or {error}
local hl = require "halua"
local M = {}

local PYTHON = os.getenv("HALUA_NUMPY_PYTHON") or "/usr/bin/python3"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"

local function json_number(v)
  if v ~= v then return "NaN" end
  if v == math.huge then return "Infinity" end
  if v == -math.huge then return "-Infinity" end
  return string.format("%.17e", v)   -- an exponent keeps -0.0 a float in JSON
end

local function encode_input(x)
  if type(x) == "number" then return string.format('{"dtype":"scalar","shape":[],"values":[%s]}', json_number(x)) end
  local flat = hl.reshape(x, {x.size}):totable()
  local vals = {}
  for i, v in ipairs(flat) do vals[i] = type(v) == "boolean" and tostring(v) or json_number(v) end
  return string.format('{"dtype":"%s","shape":[%s],"values":[%s]}', x.dtype, table.concat(x.shape, ","), table.concat(vals, ","))
end

local batch_mt = {}
batch_mt.__index = batch_mt

function M.batch() return setmetatable({cases = {}, results = nil}, batch_mt) end

-- returns a function giving the case's result once the batch has run
function batch_mt:add(expr, inputs)
  local enc = {}
  for i, x in ipairs(inputs or {}) do enc[i] = encode_input(x) end
  self.cases[#self.cases + 1] = string.format('{"expr":%q,"inputs":[%s]}', expr, table.concat(enc, ","))
  local i = #self.cases
  return function()
    assert(self.results, "numpy batch has not run")
    return self.results[i]
  end
end

function batch_mt:run()
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write("[", table.concat(self.cases, ",\n"), "]")
  f:close()
  local p = assert(io.popen(PYTHON .. " " .. here .. "numpy_eval.py " .. path))
  local chunk = p:read("*a")
  p:close()
  os.remove(path)
  local fn = assert(loadstring(chunk), "numpy_eval.py printed no Lua: " .. chunk:sub(1, 200))
  self.results = fn()
  assert(#self.results == #self.cases, "numpy_eval.py answered " .. #self.results .. " of " .. #self.cases .. " cases")
end

M.tolerance = {float32 = {2e-5, 1e-6}, float64 = {1e-12, 1e-14}}

-- actual: an hl array; expected: a result from a batch. opts.dtype: the dtype actual must have
-- (default: no dtype check, for ops whose dtype rule differs from NumPy's); opts.rtol, opts.atol
function M.assert_close(actual, expected, opts)
  opts = opts or {}
  assert(not expected.error, "NumPy raised: " .. tostring(expected.error))
  assert(hl.core.is_array(actual), "not an array: " .. tostring(actual))
  if opts.dtype then assert(actual.dtype == opts.dtype, "dtype " .. actual.dtype .. ", expected " .. opts.dtype) end
  local shape = actual.shape
  assert(#shape == #expected.shape and table.concat(shape, ",") == table.concat(expected.shape, ","),
         "shape [" .. table.concat(shape, ",") .. "], NumPy's [" .. table.concat(expected.shape, ",") .. "]")
  local got = hl.reshape(actual, {actual.size}):totable()
  local tol = M.tolerance[actual.dtype] or {0, 0}
  local rtol, atol = opts.rtol or tol[1], opts.atol or tol[2]
  for i, w in ipairs(expected.values) do
    local g = got[i]
    if type(w) == "boolean" or type(g) == "boolean" then
      local gb, wb = g, w
      if type(gb) ~= "boolean" then gb = gb ~= 0 end
      if type(wb) ~= "boolean" then wb = wb ~= 0 end
      assert(gb == wb, string.format("element %d: %s, NumPy %s", i, tostring(g), tostring(w)))
    elseif w ~= w then
      assert(g ~= g, string.format("element %d: %s, NumPy nan", i, tostring(g)))
    elseif w == math.huge or w == -math.huge then
      assert(g == w, string.format("element %d: %s, NumPy %s", i, tostring(g), tostring(w)))
    else
      assert(g == g and math.abs(g - w) <= atol + rtol * math.abs(w),
             string.format("element %d: %.9g, NumPy %.9g (rtol %g, atol %g)", i, g, w, rtol, atol))
    end
  end
end

-- deterministic random arrays
function M.rand(shape, lo, hi, dtype)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  local v = {}
  for i = 1, n do
    local x = lo + (hi - lo) * math.random()
    if dtype and not dtype:match("float") then x = math.floor(x) end
    if dtype == "bool" then x = x > (lo + hi) / 2 end
    v[i] = x
  end
  if n == 0 then return hl.zeros(shape, dtype or "float32") end
  return hl.reshape(hl.array(v, dtype or "float32"), shape)
end

return M
