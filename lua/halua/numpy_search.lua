-- NumPy's searching and counting, composed of primitives so that each traces into pipelines,
-- differentiates (interp) and batches like any other op: searchsorted, interp, histogram,
-- bincount and unique. A binary search by gathers (`insertion`) serves the first three.
-- Returned indices are 1-based; counts are int64.
-- shared: init.lua's helpers {as_array, named, methods}.
return function(hl, core, shared)
  local util = require "halua.util"
  local fail, as_array = util.fail, shared.as_array
  local P = core.prims
  local is_array, is_tracer = core.is_array, core.is_tracer
  local shape_str = util.shape_str

  local is_float, is_half, is_intv = util.is_full_float, util.is_half, util.is_integer
  local function has_nan(x) return util.is_float(x.dtype) end   -- (any float dtype)
  local is_opts = util.is_options
  local back = util.back

  ---------------------------------------------------------------- searching

  -- a before v in NumPy's sort order (NaN last); `right`: a before or equal to v
  local function before(a, v, right, nan)
    local r = right and hl.le(a, v) or hl.lt(a, v)
    if not nan then return r end
    if right then return hl.logical_or(r, P.isnan(v)) end
    return hl.logical_or(r, hl.logical_and(P.isnan(v), P.logical_not(P.isnan(a))))
  end

  -- the 0-based insertion points of v in the sorted 1-D a (int64, v's shape), by binary search:
  -- ceil(log2(n + 1)) steps of one gather each, so it traces and batches
  local function insertion(a, v, right)
    local n = a.shape[1]
    local nan = has_nan(a) or has_nan(v)
    local lo = hl.fill_like(v, 0, v.shape, "int64")
    local hi = hl.fill_like(v, n, v.shape, "int64")
    if n == 0 then return lo end
    local steps = 0
    while 2 ^ steps <= n do steps = steps + 1 end
    for _ = 1, steps do
      local mid = hl.floor_divide(lo + hi, 2)
      local am = core.gather(a, hl.minimum(mid, n - 1), 0)
      local go = hl.logical_and(before(am, v, right, nan), hl.lt(mid, hi))
      lo, hi = hl.where(go, mid + 1, lo), hl.where(go, hi, mid)
    end
    return lo
  end

  -- a and v in their promoted dtype
  local function same_type(a, v)
    if a.dtype == v.dtype then return a, v end
    local t = (hl.zeros({}, a.dtype) + hl.zeros({}, v.dtype)).dtype
    return a:astype(t), v:astype(t)
  end

  -- searchsorted(a, v [, side]): for each v, the 1-based position where it would be inserted into
  -- the sorted 1-D a to keep it sorted: 1 + (the count of a's elements before v). side "left"
  -- (default) puts v before equal elements, "right" after them; NumPy's index plus one.
  function hl.searchsorted(a, v, side)
    a = as_array(a, "searchsorted")
    if is_opts(side) then side = util.options("searchsorted", side, {"side"}, "{side = \"right\"}").side end
    side = side or "left"
    if side ~= "left" and side ~= "right" then fail("searchsorted: side must be \"left\" or \"right\", got %s", tostring(side)) end
    if a.ndim ~= 1 then fail("searchsorted: a must be 1-D (sorted), got shape %s", shape_str(a.shape)) end
    if type(v) == "table" and not is_array(v) then v = hl.array(v, a.dtype) end
    v = as_array(v, "searchsorted", 2)
    a, v = same_type(a, v)
    return insertion(a, v, side == "right") + 1
  end

  -- interp(x, xp, fp [, left] [, right]): piecewise-linear interpolation of the points (xp, fp),
  -- xp increasing; left/right (default fp's first/last) outside xp's range, as NumPy
  function hl.interp(x, xp, fp, left, right)
    if is_opts(left) then
      local o = util.options("interp", left, {"left", "right"}, "{left = 0}")
      left, right = o.left, o.right
    end
    local function arr(v, i)
      if type(v) == "table" and not is_array(v) then v = hl.array(v) end
      v = as_array(v, "interp", i)
      return v
    end
    x, xp, fp = arr(x, 1), arr(xp, 2), arr(fp, 3)
    if fp.dtype == "complex64" or fp.dtype == "complex128" then
      -- NumPy's complex interp: each part on its own, left and right split likewise
      local function re(v) if v == nil or type(v) == "number" then return v end return hl.real(v) end
      local function im(v) if v == nil then return nil end if type(v) == "number" then return 0 end return hl.imag(v) end
      return hl.complex(hl.interp(x, xp, hl.real(fp), re(left), re(right)), hl.interp(x, xp, hl.imag(fp), im(left), im(right)))
    end
    if xp.ndim ~= 1 or fp.ndim ~= 1 or xp.shape[1] ~= fp.shape[1] then
      fail("interp: xp and fp must be 1-D of one length, got %s and %s", shape_str(xp.shape), shape_str(fp.shape))
    end
    local n = xp.shape[1]
    if n == 0 then fail("interp: xp and fp must not be empty") end
    local t = (hl.zeros({}, x.dtype) + hl.zeros({}, xp.dtype) + hl.zeros({}, fp.dtype)).dtype
    local dt
    if is_half(t) then t, dt = "float32", t elseif not is_float(t) then t = "float32" end
    x, xp, fp = x:astype(t), xp:astype(t), fp:astype(t)
    local x0, xn, f0, fn = xp[1], xp[n], fp[1], fp[n]
    left = left == nil and f0 or left
    right = right == nil and fn or right
    local r
    if n == 1 then
      r = hl.broadcast_to(f0, x.shape)
    else
      -- j with xp[j] <= x < xp[j+1] (0-based, clamped to the segments), NumPy's slope form
      local j = hl.clip(insertion(xp, x, true) - 1, 0, n - 2)
      local xa, xb = core.gather(xp, j, 0), core.gather(xp, j + 1, 0)
      local fa, fb = core.gather(fp, j, 0), core.gather(fp, j + 1, 0)
      local slope = (fb - fa) / (xb - xa)
      r = slope * (x - xa) + fa
      -- NaN from an infinite slope: from the right end instead, then the equal values
      local alt = slope * (x - xb) + fb
      r = hl.where(P.isnan(r), alt, r)
      r = hl.where(hl.logical_and(P.isnan(r), hl.eq(fa, fb)), fa, r)
      r = hl.where(hl.eq(x, xn), fn, r)
      -- a NaN x stays NaN (the equal-values fallback above must not replace it), as NumPy's
      r = hl.where(P.isnan(x), x, r)
    end
    r = hl.where(hl.lt(x, x0), left, hl.where(hl.gt(x, xn), right, r))
    return back(r:astype(t), dt)
  end

  ---------------------------------------------------------------- counting

  -- histogram(x [, bins] [, range] [, opts]): counts (int64; float with weights or density) and
  -- edges (bins + 1 of them). bins is a count (default 10) or a list/array of increasing edges;
  -- range {lo, hi} (default x's min and max); opts {range =, weights =, density =}. Each bin
  -- holds lo <= v < hi, the last also v == hi; values outside are not counted.
  function hl.histogram(x, bins, range, opts)
    x = as_array(x, "histogram")
    if is_opts(bins) then opts, bins = bins, nil elseif is_opts(range) then opts, range = range, nil end
    opts = util.options("histogram", opts, {"bins", "range", "weights", "density"}, "{range = {0, 1}}")
    bins, range = bins or opts.bins or 10, range or opts.range
    local x_dtype = x.dtype
    local flat = hl.reshape(x, {x.size})
    local et = is_float(x_dtype) and x_dtype or (is_half(x_dtype) and "float32" or "float64")
    if not is_float(flat.dtype) then flat = flat:astype(et) end
    local edges
    if type(bins) == "number" then
      if not is_intv(bins) or bins < 1 then fail("histogram: bins must be a positive integer or a list of edges, got %s", tostring(bins)) end
      local lo, hi
      if range ~= nil then
        if type(range) ~= "table" or type(range[1]) ~= "number" or type(range[2]) ~= "number" then
          fail("histogram: range must be a pair of numbers {lo, hi}")
        end
        lo, hi = range[1], range[2]
        if lo > hi then fail("histogram: range {%g, %g}: lo must not exceed hi", lo, hi) end
        if lo ~= lo or hi ~= hi or math.abs(lo) == math.huge or math.abs(hi) == math.huge then
          fail("histogram: range {%g, %g} is not finite", lo, hi)
        end
        lo, hi = hl.fill_like(flat, lo, {}, et), hl.fill_like(flat, hi, {}, et)
      elseif x.size == 0 then
        lo, hi = hl.fill_like(flat, 0, {}, et), hl.fill_like(flat, 1, {}, et)
      else
        lo, hi = hl.min(flat), hl.max(flat)
        if not is_tracer(lo) then
          local l, h = lo:item(), hi:item()
          if not (l == l and h == h and math.abs(l) ~= math.huge and math.abs(h) ~= math.huge) then
            fail("histogram: the data's range [%g, %g] is not finite: give range = {lo, hi} (NaN and inf are not counted then)", l, h)
          end
        end
      end
      local same = hl.eq(lo, hi)
      lo, hi = hl.where(same, lo - 0.5, lo), hl.where(same, hi + 0.5, hi)
      -- NumPy's linspace: in float64, i * step + lo, the last edge hi exactly
      local i = core.iota("float64", {bins + 1}, 0)
      local l64, h64 = lo:astype("float64"), hi:astype("float64")
      if not is_tracer(i) and not is_tracer(l64) and i.device ~= l64.device then i = i:to(l64.device) end
      edges = hl.where(hl.eq(i, bins), h64, i * ((h64 - l64) / bins) + l64):astype(et)
    else
      if type(bins) == "table" and not is_array(bins) then bins = hl.array(bins, et) end
      if not is_array(bins) then fail("histogram: bins must be a positive integer or a list of edges, got %s", type(bins)) end
      if bins.ndim ~= 1 or bins.shape[1] < 2 then fail("histogram: edges must be a 1-D list of at least 2, got shape %s", shape_str(bins.shape)) end
      edges = is_float(bins.dtype) and bins or bins:astype(et)
      if not is_tracer(edges) and hl.any(hl.lt(edges[{{2, -1}}], edges[{{1, -2}}])):item() then
        fail("histogram: the edges must increase monotonically")
      end
    end
    local nb = edges.shape[1] - 1
    local v, e = same_type(flat, edges)
    local inner = e[{{2, nb}}]   -- the edges between bins (none for one bin)
    local bin = nb > 1 and insertion(inner, v, true) or hl.fill_like(v, 0, v.shape, "int64")
    local keep = hl.logical_and(hl.ge(v, e[1]), hl.le(v, e[nb + 1]))
    bin = hl.where(keep, bin, hl.fill_like(bin, -1, {}, "int64"))
    local w = opts.weights
    local vals
    if w ~= nil then
      w = as_array(w, "histogram")
      if table.concat(w.shape, ",") ~= table.concat(x.shape, ",") then
        fail("histogram: weights of shape %s for x of shape %s (they must match)", shape_str(w.shape), shape_str(x.shape))
      end
      vals = hl.reshape(w, {w.size})
      if vals.dtype == "bool" then vals = vals:astype("int64") end
    else
      vals = hl.fill_like(v, 1, v.shape, opts.density and et or "int64")
    end
    local counts = core.scatter_add(vals, bin, 0, nb)
    if opts.density then
      if not is_float(counts.dtype) then counts = counts:astype(et) end
      local widths = hl.diff(edges):astype(counts.dtype)
      counts = counts / widths / hl.sum(counts)
    end
    return counts, edges
  end

  -- bincount(x [, weights] [, minlength | {minlength =, length =}]): how often each value 0, 1,
  -- 2, ... occurs in the non-negative integer 1-D x (its count at 1-based position value + 1), or
  -- the sum of weights there. The length is max(x) + 1, at least minlength; under jit it must be
  -- static: give length (values from it on are dropped, as JAX).
  function hl.bincount(x, weights, opts)
    x = as_array(x, "bincount")
    if is_opts(weights) then opts, weights = weights, nil end
    if type(opts) == "number" then opts = {minlength = opts} end
    opts = util.options("bincount", opts, {"minlength", "length"}, "{length = 10}")
    if x.dtype == "bool" then x = x:astype("int32") end
    if has_nan(x) then fail("bincount: x must be integers, got %s", x.dtype) end
    if x.ndim ~= 1 then fail("bincount: x must be 1-D, got shape %s", shape_str(x.shape)) end
    local minlength = opts.minlength or 0
    if not is_intv(minlength) or minlength < 0 then fail("bincount: minlength must be a non-negative integer, got %s", tostring(minlength)) end
    local len = opts.length
    if len ~= nil and (not is_intv(len) or len < 0) then fail("bincount: length must be a non-negative integer, got %s", tostring(len)) end
    if not is_tracer(x) and x.size > 0 then
      local lo, hi = hl.min(x):item(), hl.max(x):item()
      if lo < 0 then fail("bincount: x must be non-negative, got %d", lo) end
      len = len or math.max(hi + 1, minlength)
    elseif not is_tracer(x) then
      len = len or minlength
    elseif len == nil then
      fail("bincount: on traced values (under jit or vmap) the result's length must be static: pass {length = n} (values >= n are dropped)")
    end
    local vals
    if weights ~= nil then
      if type(weights) == "table" and not is_array(weights) then weights = hl.array(weights, "float64") end
      weights = as_array(weights, "bincount", 2)
      if table.concat(weights.shape, ",") ~= table.concat(x.shape, ",") then
        fail("bincount: weights of shape %s for x of shape %s (they must match)", shape_str(weights.shape), shape_str(x.shape))
      end
      -- NumPy sums weights in float64; float32 weights stay float32 here (as JAX)
      vals = is_float(weights.dtype) and weights or (is_half(weights.dtype) and weights:astype("float32") or weights:astype("float64"))
    else
      vals = hl.fill_like(x, 1, x.shape, "int64")
    end
    -- negative values (traced) fall outside 0..len-1 and are dropped
    return core.scatter_add(vals, x:astype("int64"), 0, len)
  end

  -- unique(x [, opts]): the sorted distinct values of the flattened x (NaNs count as one, last);
  -- opts return_index (1-based position of each value's first occurrence), return_inverse (for
  -- each element of x, the 1-based position of its value in the result, x's flat shape),
  -- return_counts; size and fill_value give a static length (needed under jit, as JAX): the
  -- values padded with fill_value (default the smallest value), indices with 0, counts with 0
  function hl.unique(x, opts)
    x = as_array(x, "unique")
    opts = util.options("unique", opts, {"return_index", "return_inverse", "return_counts", "size", "fill_value"},
                        "{return_counts = true}")
    local size = opts.size
    if size ~= nil and (not is_intv(size) or size < 0) then fail("unique: size must be a non-negative integer, got %s", tostring(size)) end
    local flat = hl.reshape(x, {x.size})
    local n = flat.size
    if n == 0 then
      local e = hl.zeros({size or 0}, x.dtype)
      local out = {e}
      local z = hl.zeros({size or 0}, "int64")
      if opts.return_index then out[#out + 1] = z end
      if opts.return_inverse then out[#out + 1] = hl.zeros({0}, "int64") end
      if opts.return_counts then out[#out + 1] = z end
      return unpack(out)
    end
    local work = flat.dtype == "bool" and flat:astype("int32") or flat
    local perm = hl.argsort(work)   -- stable: a group's first element is its first occurrence
    local s = core.gather(work, perm - 1, 0)
    local differs = hl.ne(s[{{2, n}}], s[{{1, n - 1}}])
    if has_nan(s) then   -- NaNs are one value
      differs = hl.logical_and(differs, P.logical_not(hl.logical_and(P.isnan(s[{{2, n}}]), P.isnan(s[{{1, n - 1}}]))))
    end
    local first = hl.concatenate({hl.fill_like(differs, true, {1}, "bool"), differs}, 1)
    local group = hl.cumsum(first:astype("int64")) - 1   -- 0-based slot of each sorted element
    if size == nil then
      if is_tracer(group) then
        fail("unique: on traced values (under jit or vmap) the number of distinct values must be static: pass {size = n, fill_value = v}")
      end
      size = group[n]:item() + 1
    end
    local count = group[n] + 1
    local slots = hl.arange(size, "int64")
    if not is_tracer(count) and slots.device ~= count.device then slots = slots:to(count.device) end
    local filled = hl.ge(slots, count)   -- slots past the distinct values
    local at = hl.where(first, group, hl.fill_like(group, -1, {}, "int64"))
    local values = core.scatter_add(hl.where(first, s, hl.zeros_like(s)), at, 0, size)
    local fill = opts.fill_value
    if fill == nil then fill = s[1] end
    values = hl.where(filled, fill, values):astype(work.dtype)
    if x.dtype == "bool" then values = values:astype("bool") end
    local out = {values}
    if opts.return_index then out[#out + 1] = core.scatter_add(perm, at, 0, size) end
    if opts.return_inverse then out[#out + 1] = core.scatter_add(group + 1, perm - 1, 0, n) end
    if opts.return_counts then
      out[#out + 1] = core.scatter_add(hl.fill_like(group, 1, {n}, "int64"), group, 0, size)
    end
    return unpack(out)
  end

  for _, name in ipairs {"searchsorted", "interp", "histogram", "bincount", "unique"} do
    hl[name] = shared.named(name, hl[name])
  end
  shared.methods.searchsorted = hl.searchsorted
end
