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
  for i, v in ipairs(flat) do
    -- (a complex element is the pair {re, im}: sent as [re, im])
    if type(v) == "table" then vals[i] = "[" .. json_number(v[1]) .. "," .. json_number(v[2]) .. "]"
    else vals[i] = type(v) == "boolean" and tostring(v) or json_number(v) end
  end
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

-- {rtol, atol} by dtype. The 2-byte floats compute in float32 and round once, so one unit in the
-- last place of the result: 2^-10 relative for float16 (atol its smallest subnormal), 2^-7 for
-- bfloat16 (which has float32's range: atol float32's smallest normal)
M.tolerance = {float32 = {2e-5, 1e-6}, float64 = {1e-12, 1e-14}, float16 = {1e-3, 6e-8}, bfloat16 = {8e-3, 1.2e-38},
               complex64 = {2e-5, 1e-6}, complex128 = {1e-12, 1e-14}}

-- actual: an hl array; expected: a result from a batch. opts.dtype: the dtype actual must have
-- (default: NumPy's dtype; false: no dtype check, for ops whose dtype rule differs from NumPy's);
-- opts.rtol, opts.atol (default by dtype); opts.signed_zero: a zero must have NumPy's sign too.
-- assert_close(actual, expected, rtol, atol) also works.
function M.assert_close(actual, expected, opts, atol_arg)
  if type(opts) == "number" or (opts == nil and atol_arg ~= nil) then opts = {rtol = opts, atol = atol_arg} end
  opts = opts or {}
  assert(not expected.error, "NumPy raised: " .. tostring(expected.error))
  assert(hl.core.is_array(actual), "not an array: " .. tostring(actual))
  local want_dtype = opts.dtype
  if want_dtype == nil then want_dtype = expected.dtype end
  if want_dtype then
    assert(actual.dtype == want_dtype, "dtype " .. actual.dtype .. ", expected " .. want_dtype .. " (NumPy's result is " .. tostring(expected.dtype) .. ")")
  end
  local shape = actual.shape
  assert(#shape == #expected.shape and table.concat(shape, ",") == table.concat(expected.shape, ","),
         "shape [" .. table.concat(shape, ",") .. "], NumPy's [" .. table.concat(expected.shape, ",") .. "]")
  local got = hl.reshape(actual, {actual.size}):totable()
  local tol = M.tolerance[actual.dtype] or {0, 0}
  local rtol, atol = opts.rtol or tol[1], opts.atol or tol[2]
  local function where(i)   -- the multi-index of flat element i, 1-based
    local idx, rem = {}, i - 1
    for d = #shape, 1, -1 do idx[d] = rem % shape[d] + 1; rem = math.floor(rem / shape[d]) end
    return "[" .. table.concat(idx, ",") .. "] (element " .. i .. ")"
  end
  assert(#got == #expected.values, "got " .. #got .. " values, NumPy " .. #expected.values)
  for i, w in ipairs(expected.values) do
    local g = got[i]
    if type(w) == "table" or type(g) == "table" then
      -- complex {re, im}: each part within the tolerance relative to the modulus
      assert(type(w) == "table" and type(g) == "table", string.format("at %s: got %s, NumPy %s (one is complex)", where(i), tostring(g), tostring(w)))
      local mod = math.sqrt(w[1] * w[1] + w[2] * w[2])
      for k = 1, 2 do
        local a, b = g[k], w[k]
        local ok = (b ~= b and a ~= a) or a == b or (a == a and math.abs(a - b) <= atol + rtol * mod)
        assert(ok, string.format("at %s: got %.17g%+.17gi, NumPy %.17g%+.17gi (rtol %g, atol %g)", where(i), g[1], g[2], w[1], w[2], rtol, atol))
      end
    elseif type(w) == "boolean" or type(g) == "boolean" then
      local gb, wb = g, w
      if type(gb) ~= "boolean" then gb = gb ~= 0 end
      if type(wb) ~= "boolean" then wb = wb ~= 0 end
      assert(gb == wb, string.format("at %s: got %s, NumPy %s", where(i), tostring(g), tostring(w)))
    elseif w ~= w then
      assert(g ~= g, string.format("at %s: got %s, NumPy nan", where(i), tostring(g)))
    elseif w == math.huge or w == -math.huge then
      assert(g == w, string.format("at %s: got %s, NumPy %s", where(i), tostring(g), tostring(w)))
    else
      assert(g == g and math.abs(g - w) <= atol + rtol * math.abs(w),
             string.format("at %s: got %.17g, NumPy %.17g (rtol %g, atol %g)", where(i), g, w, rtol, atol))
      if opts.signed_zero and w == 0 then
        assert(1 / g == 1 / w, string.format("at %s: got %s, NumPy %s (the sign of zero)", where(i),
                                            1 / g < 0 and "-0.0" or "0.0", 1 / w < 0 and "-0.0" or "0.0"))
      end
    end
  end
end

-- Float32 special values for an input, as a list for hl.array. CUDA flushes float32 denormals to
-- zero, in inputs and in results, where NumPy on the host keeps them: floor(-1e-40) is -1 on the
-- host and -0 on the GPU, and 1e-40 is true as a bool on the host, false there. So under a GPU
-- default device (scripts/test-gpu runs with HALUA_DEVICE=cuda) the float32 denormals are left
-- out, and those runs report only real differences; float64 denormals are exact on CUDA and are
-- not touched. On the host every value is kept.
function M.float32_specials(values)
  if hl.default_device() == "cpu" then return values end
  local kept = {}
  for _, v in ipairs(values) do
    if not (v ~= 0 and math.abs(v) < 2 ^ -126) then kept[#kept + 1] = v end   -- NaN and inf stay
  end
  return kept
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
