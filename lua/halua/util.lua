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

function M.pack(...) return {n = select("#", ...), ...} end

function M.is_callable(f)
  if type(f) == "function" then return true end
  local mt = getmetatable(f)
  return mt ~= nil and mt.__call ~= nil
end

return M
