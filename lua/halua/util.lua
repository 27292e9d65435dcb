-- What every module shares: errors in halua's form, shapes and types as text, argument packing.
local M = {}

-- raises "halua: <formatted message>" with no position prefix (the caller's file would be halua's)
function M.fail(msg, ...) error("halua: " .. string.format(msg, ...), 0) end

function M.shape_str(s)
  local parts = {}
  for i, e in ipairs(s) do parts[i] = tostring(e) end
  return "[" .. table.concat(parts, ",") .. "]"
end

function M.type_str(x) return x.dtype .. M.shape_str(x.shape) end

-- whether dtype (a name such as "float32") is one of the floating-point dtypes: float32, float64,
-- float16 or bfloat16 (the ones that differentiate and that NaN can occur in)
function M.is_float(dtype) return dtype == "float32" or dtype == "float64" or dtype == "float16" or dtype == "bfloat16" end

-- options(op, opts, {"a", "b"}, example) -> opts (or {} for nil): an options table whose every key
-- is one of the names given; anything else is op's error naming the key and the accepted ones (an
-- option halua does not have must not be silently ignored: conv2d's {dilation = 2} once returned
-- the undilated result)
function M.options(op, opts, names, example)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    M.fail("%s: options must be a table%s, got a %s", op, example and " such as " .. example or "", type(opts))
  end
  for k in pairs(opts) do
    local known = false
    for _, n in ipairs(names) do known = known or k == n end
    if not known then
      M.fail("%s: unknown option '%s' (the options are %s)", op, tostring(k), table.concat(names, ", "))
    end
  end
  return opts
end

-- whether t is an options table: a Lua table with a string key (an axes list {1, 2} has none;
-- arrays are userdata), for functions whose trailing arguments may be positional or options
function M.is_options(t)
  if type(t) ~= "table" then return false end
  for k in pairs(t) do if type(k) == "string" then return true end end
  return false
end

-- shape with the 0-based axes set to 1 (a reduction's result with keepdims), a new table
function M.keep_shape(shape, axes)
  local s = {}
  for i = 1, #shape do s[i] = shape[i] end
  for _, a in ipairs(axes) do s[a + 1] = 1 end
  return s
end

-- the 0-based axis that ax (1-based, negative from the end) names in an array of ndim axes
function M.norm_axis(op, ax, ndim)
  if type(ax) ~= "number" or ax ~= math.floor(ax) then
    M.fail("%s: axis must be an integer, got %s", op, tostring(ax))
  end
  local a = ax < 0 and ndim + ax or ax - 1
  if a < 0 or a >= ndim then
    M.fail("%s: axis %d is out of range for %d dimensions (axes are 1-based, negative from the end)", op, ax, ndim)
  end
  return a
end

-- a table of 0-based axes (sorted, unique) from nil, a number or a table
function M.norm_axes(op, axes, ndim)
  local out, seen = {}, {}
  if axes == nil then
    for a = 0, ndim - 1 do out[#out + 1] = a end
    return out
  end
  if type(axes) ~= "table" then axes = {axes} end
  for _, ax in ipairs(axes) do
    local a = M.norm_axis(op, ax, ndim)
    if seen[a] then M.fail("%s: axis %d repeated", op, ax) end
    seen[a] = true
    out[#out + 1] = a
  end
  table.sort(out)
  return out
end

-- x[start : start + count*step : step] along its 0-based axis a, the other axes whole (core is
-- the engine module: util needs none of its own)
function M.slice_axis(core, x, a, start, count, step)
  local starts, steps, counts = {}, {}, x.shape
  for i = 1, x.ndim do starts[i], steps[i] = 0, 1 end
  starts[a + 1], counts[a + 1], steps[a + 1] = start, count, step or 1
  return core.slice(x, starts, steps, counts)
end

-- float32 or float64: the float dtypes halua computes in (float16 and bfloat16 compute in float32)
function M.is_full_float(d) return d == "float32" or d == "float64" end
function M.is_half(d) return d == "float16" or d == "bfloat16" end
-- a Lua number with no fraction
function M.is_integer(v) return type(v) == "number" and v == math.floor(v) end

-- x in a dtype to compute in (float32 or float64), and the dtype to round results back to with
-- M.back (a half float's; nil: keep what was computed)
function M.floated(x)
  if M.is_full_float(x.dtype) then return x, nil end
  if M.is_half(x.dtype) then return x:astype("float32"), x.dtype end
  return x:astype("float32"), nil
end
function M.back(r, dtype) if dtype then return r:astype(dtype) end return r end

-- the list a followed by the list b (shapes: outer .. inner)
function M.concat(a, b)
  local r = {}
  for _, e in ipairs(a) do r[#r + 1] = e end
  for _, e in ipairs(b) do r[#r + 1] = e end
  return r
end

-- c, a constant made on the host, where x is: on x's device (x's trace takes c as it is when x is
-- traced; the program moves its constants to its device)
function M.where_is(core, c, x)
  if core.is_tracer(x) or core.device_of(x) == core.device_of(c) then return c end
  return core.to_device(c, core.device_of(x))
end

function M.pack(...) return {n = select("#", ...), ...} end

function M.is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return mt ~= nil and mt.__call ~= nil
end

return M
