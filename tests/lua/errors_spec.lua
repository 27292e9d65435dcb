-- Every error a script can cause is a Lua error that starts "halua: ", names the op and the
-- shapes or dtypes, and says what to do instead. None crashes the process.
local hl = require "halua"

local function fails(pattern, f, ...)
  local ok, err = pcall(f, ...)
  assert.is_false(ok, "expected an error matching " .. pattern)
  assert.are.equal("string", type(err))
  assert.truthy(err:find("^halua: "), "no halua: prefix in: " .. err)
  assert.truthy(err:find(pattern), "'" .. err .. "' does not match '" .. pattern .. "'")
end

describe("errors", function()
  local a, b = hl.ones({2, 3}), hl.ones({4})
  it("unbroadcastable operands name the op and both shapes", function()
    fails("^halua: add: cannot broadcast shapes %[2,3%] and %[4%]", function() return a + b end)
    fails("^halua: where: cannot broadcast", function() return hl.where(hl.ones({2}, "bool"), a, b) end)
  end)
  it("a value given the array metatable (debug.setmetatable) is not taken for an array", function()
    local mt = getmetatable(hl.ones(2))
    for _, v in ipairs {newproxy(), io.stdout} do
      local saved = debug.getmetatable(v)
      debug.setmetatable(v, mt)
      local ok, err = pcall(function()   -- (io.stdout gets its own metatable back whatever happens)
        fails("^halua: add: argument 1 is a userdata, expected an array or a number", function() return v + 1 end)
        fails("^halua: mul: argument 2 is a userdata, expected an array or a number", hl.mul, a, v)
        fails("^halua: len: argument 1 is a userdata, expected an array", function() return #v end)
        fails("^halua: no field or method 'shape' on an array", function() return v.shape end)
      end)
      debug.setmetatable(v, saved)
      assert(ok, err)
    end
    -- and its finalizer leaves such a value alone when it is collected
    debug.setmetatable(newproxy(), mt)
    collectgarbage()
    collectgarbage()
    assert.are.equal(12, (a + 1):sum():item())
  end)
  it("matmul mismatches name both shapes", function()
    fails("^halua: matmul: inner dimensions of %[2,3%] and %[2,3%] differ %(3 vs 2%)", hl.matmul, a, a)
    fails("^halua: matmul: operands must have at least one dimension", hl.matmul, hl.array(2), a)
    fails("^halua: matmul: batch dimensions of %[2,3,4%] and %[3,4,5%] do not broadcast", hl.matmul, hl.ones({2, 3, 4}), hl.ones({3, 4, 5}))
  end)
  it("bad axes", function()
    fails("^halua: sum: axis 3 is out of range for 2 dimensions", hl.sum, a, 3)
    fails("^halua: max: axis %-3 is out of range", hl.max, a, -3)
    fails("^halua: sum: axis %-2 repeated", hl.sum, a, {1, -2})
    fails("^halua: argmax: axis must be an integer", hl.argmax, a, 1.5)
    fails("^halua: concatenate: axis 3 is out of range", hl.concatenate, {a, a}, 3)
    fails("^halua: transpose: permutation must list 2 axes", hl.transpose, a, {1})
    fails("^halua: squeeze: axis 2 has extent 3, not 1", hl.squeeze, a, 2)
  end)
  it("reshape's shape: one table or the extents, not both", function()
    fails("^halua: reshape: pass the shape as one table {3, 4} or as extents 3, 4, not a table followed by more",
          hl.reshape, hl.arange(12), {3, 4}, 2)
    fails("^halua: reshape: cannot reshape %[12%] %(12 elements%) to %[5,2%]", hl.reshape, hl.arange(12), 5, 2)
  end)

  it("reshape sizes and holes", function()
    fails("^halua: reshape: cannot reshape %[2,3%] %(6 elements%) to %[4,2%]", hl.reshape, a, {4, 2})
    fails("^halua: reshape: only one %-1 is allowed in shape %[%-1,%-1%]", hl.reshape, a, {-1, -1})
    fails("^halua: reshape: cannot reshape %[2,3%] %(6 elements%) to %[%-1,4%]", hl.reshape, a, {-1, 4})
    fails("^halua: reshape: bad extent", hl.reshape, a, {2, "x"})
  end)
  it("shapes whose element count overflows are refused, eagerly and under jit", function()
    local huge = "has more elements than an array can hold %(2%^59%)"
    fails("^halua: reshape: shape %[4294967296,4294967296%] " .. huge, hl.reshape, hl.zeros({0}), {2^32, 2^32})
    fails("^halua: broadcast_to: shape %[4294967296,4294967296%] " .. huge, hl.broadcast_to, hl.ones({1}), {2^32, 2^32})
    fails("^halua: full: shape %[4294967296,4294967296%] " .. huge, hl.zeros, {2^32, 2^32})
    fails("^halua: reshape: shape %[4294967296,4294967296%] " .. huge,
          hl.jit(function(x) return hl.reshape(x, {2^32, 2^32}) end), hl.zeros({0}))
    -- empty arrays of large but countable shapes stay fine
    local e = hl.reshape(hl.zeros({0}), {0, 2^40, 2^10})
    assert.are.same({0, 2^40, 2^10}, e.shape)
    assert.are.equal(0, e.size)
    assert.are.same({}, e:totable())
  end)
  it("values that would be dropped, wrapped or pinned without a word are errors", function()
    fails("^halua: array: not a sequence: the table has a hole or a named key", hl.array, {1, nil, 3})
    fails("^halua: array: not a sequence: the table has a hole or a named key", hl.array, {a = 1})
    fails("^halua: array: not a sequence", hl.array, {{1, 2}, {3, 4, x = 5}})
    fails("^halua: array: 9%.2233720368547758e%+18 is out of range for int64", hl.array, {2 ^ 63}, "int64")
    fails("^halua: array: 300 is out of range for uint8", hl.array, {300}, "uint8")
    fails("^halua: array: %-129 is out of range for int8", hl.array, {-129}, "int8")
    fails("^halua: array: NaN cannot be stored in int32", hl.array, {0 / 0}, "int32")
    fails("^halua: array: an infinity cannot be stored in int64", hl.array, {1 / 0}, "int64")
    -- the edges of each range, and fractions, convert as NumPy converts them
    assert.are.same({-9223372036854775808}, hl.array({-2 ^ 63}, "int64"):totable())
    assert.are.same({-128, 127, 255}, {hl.array({-128.5}, "int8"):item(), hl.array({127.9}, "int8"):item(),
                                       hl.array({255}, "uint8"):item()})
    fails("^halua: astype: expected a dtype name such as \"float32\", got nothing", function() return a:astype(nil) end)
    fails("^halua: split: position 0 does not exist: positions are 1%-based", hl.split, hl.ones(4), {0})
    assert.are.same({3, 1}, {hl.split(hl.arange(4), {-1})[1].size, hl.split(hl.arange(4), {-1})[2].size})
    fails("^halua: pad: 2 pairs of widths for an array of 1 axes", hl.pad, hl.ones(4), {{1, 1}, {1, 1}})
  end)
  it("errors name the function the user called and say what went wrong", function()
    local c = {}
    c.self = c
    fails("^halua: tree: the table contains itself %(a cycle%)", hl.tree.map, function(x) return x end, c)
    fails("^halua: tree: the table contains itself %(a cycle%)", hl.jit(function(x) return x end), c)
    fails("^halua: random%.categorical: logits of shape %[0%] have no categories along axis 1",
          hl.random.categorical, hl.random.key(0), hl.zeros({0}))
    local opt = hl.optim.sgd(0.1)
    fails("^halua: optim%.sgd%.update: cannot broadcast shapes %[3%] and %[2%]",
          opt.update, {w = hl.ones(2)}, opt.init({w = hl.ones(3)}), {w = hl.ones(3)})
    fails("^halua: optim%.sgd: unknown option 'dampening' %(the options are nesterov, weight_decay%)", hl.optim.sgd, 0.1, 0,
          {dampening = 0.1})
    fails("^halua: optim%.sgd: takes %(lr %[, momentum %[, opts%]%]%)", hl.optim.sgd, 0.1, 0, {}, 1)
    fails("^halua: optim%.adam: unknown option 'beta1' %(the options are b1, b2, eps%)", hl.optim.adam, 0.1, {beta1 = 0.9})
    fails("^halua: nn%.init%.glorot: dtype must be float32", hl.nn.init.glorot, hl.random.key(0), {2, 2}, "int32")
    fails("^halua: ==: Lua compares arrays by identity, not by value; use hl%.eq%(a, b%)",
          hl.jit(function(x, y) return x == y end), hl.ones(1), hl.ones(1))
    -- outside jit, == stays Lua's identity: the same array is equal to itself, another never
    local x = hl.ones(2)
    assert.is_true(x == x)
    assert.is_false(hl.ones(2) == hl.ones(2))
  end)
  it("an option a function does not have is an error naming it and the accepted ones, never ignored", function()
    local x, w = hl.ones({1, 1, 4, 4}), hl.ones({1, 1, 2, 2})
    fails("^halua: conv2d: unknown option 'padding_mode' %(the options are bias, stride, padding, dilation, groups%)", hl.nn.conv2d, x, w, {padding_mode = "zeros"})
    fails("^halua: max_pool2d: unknown option 'ceil_mode' %(the options are stride, padding%)", hl.nn.max_pool2d, x, 2,
          {ceil_mode = true})
    fails("^halua: avg_pool2d: unknown option 'strides' %(the options are stride, padding%)", hl.nn.avg_pool2d, x, 2, {strides = 1})
    local f = function(a) return a:sum() end
    fails("^halua: grad: unknown option 'hasaux' %(the options are has_aux%)", hl.grad, f, 1, {hasaux = true})
    fails("^halua: value_and_grad: unknown option 'reduce_axes' %(the options are has_aux%)", hl.value_and_grad, f, 1,
          {reduce_axes = {1}})
    fails("^halua: value_and_grad: options must be a table such as {has_aux = true}, got a string", hl.value_and_grad, f, 1, "x")
    fails("^halua: help: unknown option 'quiet' %(the options are print%)", hl.help, "sum", {quiet = true})
    fails("^halua: cache_clear: unknown option 'memory' %(the options are disk%)", hl.cache_clear, {memory = true})
    fails("^halua: dist%.sync: unknown option 'src' %(the options are bucket_mb, root%)", hl.dist.sync, {hl.ones(1)}, {src = 1})
    -- the ones they have still work
    assert.are.same({1, 1, 3, 3}, hl.nn.conv2d(x, w, {stride = 1, padding = 0}).shape)
    assert.are.equal(3, select(2, hl.grad(function(a) return a:sum(), 3 end, 1, {has_aux = true})(hl.ones(2))))
  end)

  it("cross_entropy's out-of-range labels: an error eagerly, a NaN loss under jit (traced labels)", function()
    fails("^halua: cross_entropy: label 7 is out of range 1%.%.3", hl.nn.cross_entropy, hl.zeros({2, 3}), hl.array({7, 1}, "int32"))
    local ce = hl.jit(hl.nn.cross_entropy)
    local bad = ce(hl.zeros({2, 3}), hl.array({7, 1}, "int32")):item()
    assert.is_true(bad ~= bad, "a NaN loss")
    assert.is_true(math.abs(ce(hl.zeros({2, 3}), hl.array({3, 1}, "int32")):item() - math.log(3)) < 1e-6)
  end)
  it("custom_vjp: a cotangent of the wrong shape is an error, not a wrong-shaped gradient", function()
    local f = hl.custom_vjp(function(x) return x * 2 end, function(x) return x * 2, x end, function(_, _) return hl.ones(5) end)
    local loss = function(x) return hl.sum(f(x)) end
    fails("^halua: custom_vjp: bwd returned a cotangent of shape %[5%] for input 1 of shape %[3%]", hl.grad(loss), hl.ones(3))
    fails("^halua: custom_vjp: bwd returned a cotangent of shape %[5%] for input 1 of shape %[3%]", hl.jit(hl.grad(loss)), hl.ones(3))
  end)
  it("host stages fed by reductions compile under jit and grad; loop bodies returning nothing or another structure", function()
    local x = hl.array({{3, 1, 2}, {0, 5, 1}, {1, 1, 1}})
    assert.are.same(hl.sort(x:sum(2)):totable(), hl.jit(function(v) return hl.sort(v:sum(2)) end)(x):totable())
    assert.are.same(hl.argsort(x:max(2)):totable(), hl.jit(function(v) return hl.argsort(v:max(2)) end)(x):totable())
    local m = hl.array({{{2, 1}, {0, 1}}, {{1, 0}, {1, 3}}})
    assert.are.same(hl.linalg.inv(m:sum(3)):totable(), hl.jit(function(v) return hl.linalg.inv(v:sum(3)) end)(m):totable())
    local loss = function(v) return hl.sum(hl.sort(v:sum(2)) ^ 2) end
    assert.are.same(hl.grad(loss)(x):totable(), hl.jit(hl.grad(loss))(x):totable())
    fails("^halua: fori_loop: body_fn's result is nothing %(nil%): return the new value",
          hl.jit(function(v) return hl.fori_loop(1, 3, function() end, v) end), hl.ones(2))
    fails("^halua: scan: f's carry is nothing %(nil%)", hl.jit(function(v) return hl.scan(function() end, v, hl.ones({3, 2})) end), hl.ones(2))
  end)
  it("a loop body returning another structure than its carry's: both structures drawn", function()
    local two = hl.ones(2)
    local function both(pattern, f, ...)   -- under jit (a compiled loop) and eagerly
      fails(pattern, hl.jit(f), ...)
      fails(pattern, f, ...)
    end
    both("^halua: fori_loop: body_fn's result is {%*} %(a table of 1 leaf%), but the initial carry is a single value: " ..
         "they must have the same structure %(%* is a leaf: an array or a number%)",
         function(v) return hl.fori_loop(1, 3, function(_, c) return {c} end, v) end, two)
    both("^halua: while_loop: body_fn's result is {%*} %(a table of 1 leaf%), but the initial carry is a single value",
         function(v) return hl.while_loop(function(c) return hl.lt(hl.sum(c), 10) end, function(c) return {c * 2} end, v) end, two)
    both("^halua: scan: f's carry is {%*} %(a table of 1 leaf%), but the initial carry is a single value",
         function(v) return hl.scan(function(c, x) return {c + x}, x end, v, hl.ones({3, 2})) end, two)
    both("^halua: fori_loop: body_fn's result is {{%*}, %*} %(a table of 2 leaves%), but the initial carry is " ..
         "{%*, {%*}} %(a table of 2 leaves%)",
         function(a, b) return hl.fori_loop(1, 3, function(_, c) return {{c[1]}, c[2][1]} end, {a, {b}}) end, two, two)
    both("^halua: fori_loop: body_fn's result is {%*, %*, %*} %(a table of 3 leaves%), but the initial carry is " ..
         "{%*, %*} %(a table of 2 leaves%)",
         function(a, b) return hl.fori_loop(1, 3, function(_, c) return {c[1], c[2], c[1]} end, {a, b}) end, two, two)
    both("^halua: fori_loop: body_fn's result is {w = %*, x = %*} %(a table of 2 leaves%), but the initial carry is " ..
         "{b = %*, w = %*} %(a table of 2 leaves%)",
         function(a, b) return hl.fori_loop(1, 3, function(_, c) return {w = c.w, x = c.b} end, {w = a, b = b}) end, two, two)
  end)
  it("a nil operand says that tonumber() of an array gives nil", function()
    local hint = "%(tonumber%(%) of an array gives nil; use x:item%(%) outside hl%.jit, or keep it an array%)$"
    -- LuaJIT's tonumber gives nil for any array (there is no __tonumber), traced or not
    fails("^halua: mul: argument 2 is nil, expected an array or a number " .. hint,
          hl.jit(function(x, y) return x * tonumber(y) end), hl.ones(2), hl.array(3))
    fails("^halua: mul: argument 2 is nil, expected an array or a number " .. hint, function() return hl.ones(2) * tonumber(hl.array(3)) end)
    fails("^halua: add: argument 1 is nil, expected an array or a number " .. hint, hl.add, nil, hl.ones(2))
    fails("^halua: matmul: argument 2 is nil, expected an array " .. hint, hl.matmul, hl.ones({2, 2}), nil)
    fails("^halua: sum: argument 1 is nil, expected an array " .. hint, hl.sum, nil)
    fails("^halua: expand_dims: argument 1 is nil, expected an array " .. hint, hl.expand_dims, nil, 1)
    -- other types keep their words, and a table says how to make an array
    fails("^halua: add: argument 2 is a table, expected an array or a number %(make one with hl%.array%)$", hl.add, hl.ones(2), {1})
    fails("^halua: sum: argument 1 is a table, expected an array %(make one with hl%.array%)$", hl.sum, {1, 2})
  end)
  it("every use of a leaked tracer (kept past the end of its hl.jit function) says so, under the op's name", function()
    local leak
    hl.jit(function(x) leak = x return x end)(hl.ones({2, 2}))
    local says = ": this value is a leaked tracer: it escaped the hl%.jit function that traced it, whose trace has ended; " ..
                 "return it from the function and use the result instead$"
    local uses = {
      item = function() return leak:item() end, totable = function() return leak:totable() end,
      sum = function() return leak:sum() end, argmax = function() return leak:argmax() end,
      astype = function() return leak:astype("int32") end, reshape = function() return leak:reshape({4}) end,
      flatten = function() return leak:flatten() end, squeeze = function() return leak:squeeze() end,
      expand_dims = function() return leak:expand_dims(1) end, transpose = function() return leak.T end,
      add = function() return leak + 1 end, mul = function() return 2 * leak end, exp = function() return hl.exp(leak) end,
      dot = function() return hl.dot(leak, leak) end, matmul = function() return hl.matmul(leak, leak) end,
      index = function() return leak[1] end, concatenate = function() return hl.concatenate({leak, leak}, 1) end,
      zeros_like = function() return hl.zeros_like(leak) end, device_put = function() return leak:to("cpu") end,
      save = function() return hl.save(os.tmpname(), leak) end, savez = function() return hl.savez(os.tmpname(), {leak}) end,
      jit = function() return hl.jit(function(x) return x + 1 end)(leak) end,
      vmap = function() return hl.vmap(function(x) return x + 1 end)(leak) end,
      grad = function() return hl.grad(function(x) return hl.sum(x) end)(leak) end,
      fori_loop = function() return hl.fori_loop(1, 2, function(_, c) return c + 1 end, leak) end,
      ["random.categorical"] = function() return hl.random.categorical(hl.random.key(0), leak) end,
      ["linalg.inv"] = function() return hl.linalg.inv(leak) end, sort = function() return hl.sort(leak) end,
      ["nn.softmax"] = function() return hl.nn.softmax(leak) end,
    }
    for op, f in pairs(uses) do
      fails("^halua: " .. op:gsub("^nn%.", ""):gsub("%.", "%%.") .. says, f)
    end
    -- inside another jit it is captured as the traced values of that function are: still an error
    fails("^halua: add" .. says, hl.jit(function(x) return x + leak end), hl.ones({2, 2}))
    -- what needs no values stays readable
    assert.are.same({2, 2}, leak.shape)
    assert.are.equal("float32", leak.dtype)
    assert.are.equal("<traced float32[2,2]>", tostring(leak))
  end)
  it("jit's options: unknown keys and argument numbers out of range", function()
    local id = function(x) return x end
    fails("^halua: jit: unknown option 'statc_argnums' %(the options are static_argnums, donate_argnums, device, schedule, name, dynamic_axes%)",
          hl.jit, id, {statc_argnums = 1})
    fails("^halua: jit: options must be a table", hl.jit, id, 3)
    fails("^halua: jit: static_argnums must hold 1%-based argument numbers", hl.jit, id, {static_argnums = {0}})
    fails("^halua: jit: donate_argnums must hold 1%-based argument numbers", hl.jit, id, {donate_argnums = "x"})
    fails("^halua: jit: static_argnums names argument 5, but f was called with 1 argument$",
          hl.jit(id, {static_argnums = 5, name = "f"}), hl.ones(1))
    assert.are.same({6}, hl.jit(function(x, k) return x * k end, {static_argnums = 2, donate_argnums = {1}})(hl.ones(1), 6):totable())
  end)
  it("broadcast_to and concatenate shape mismatches", function()
    fails("^halua: broadcast_to: cannot broadcast %[2,3%] to %[3,3%]", hl.broadcast_to, a, {3, 3})
    fails("^halua: concatenate: shapes %[2,3%] and %[4%] do not match", hl.concatenate, {a, b}, 1)
    fails("^halua: concatenate: needs a non%-empty list", hl.concatenate, {}, 1)
  end)
  it("dtypes", function()
    fails('^halua: full: unknown dtype float17', hl.zeros, {2}, "float17")
    fails('^halua: full: unknown dtype int16 %(use float32 float64 float16 bfloat16 int8 int32 int64 uint8 bool%)', hl.zeros, {2}, "int16")
    fails('^halua: astype: unknown dtype', function() return a:astype("complex") end)
    fails('^halua: array: unknown dtype', hl.array, {1, 2}, "int128")
  end)
  it("non-array arguments", function()
    fails("^halua: add: argument 2 is a string, expected an array or a number", function() return a + "x" end)
    fails("^halua: exp: argument 1 is a function, expected an array or a number", hl.exp, print)
    fails("^halua: matmul: argument 2 is a table, expected an array", hl.matmul, a, {})
    fails("^halua: array: cannot make an array from a function", hl.array, print)
    fails("^halua: concatenate: element 2 is a number", hl.concatenate, {a, 3}, 1)
  end)
  it("ragged and mixed nested tables", function()
    fails("^halua: array: ragged nested table", hl.array, {{1, 2}, {3}})
    fails("^halua: array: ragged nested table", hl.array, {1, {2}})
    fails("^halua: array: ragged nested table", hl.array, {{1}, 2})
    fails("^halua: array: mixes booleans and numbers", hl.array, {true, 1})
  end)
  it("shapes must be non-negative integers", function()
    fails("^halua: full: shape entries must be non%-negative integers", hl.zeros, {2, -1})
    fails("^halua: full: shape entries must be non%-negative integers", hl.zeros, 2.5)
    fails("^halua: full: shape must be a number or a table", hl.zeros, "2")
    -- a number for the shape is checked as a table's entries are: NaN, infinities and huge values
    -- are refused before an array is made (full(inf) made an array of extent -2^63 on the host;
    -- placing it on a GPU then failed under another op's name)
    for _, v in ipairs {0 / 0, 1 / 0, -1 / 0, 1e300, 2 ^ 62, 9.1e15} do
      fails("^halua: full: shape entries must be non%-negative integers", hl.full, v, 1)
      fails("^halua: full: shape entries must be non%-negative integers", hl.zeros, {2, v})
      fails("^halua: reshape: ", hl.reshape, a, v)
    end
  end)
  it("assignment names x:at", function()
    fails("arrays are immutable: use x:at%(index%):set%(value%)", function() a[1] = 2 end)
    fails("arrays are immutable", function() a.foo = 2 end)
  end)
  it("item, len and indexing", function()
    fails("^halua: item: needs a one%-element array, got shape %[2,3%]", function() return a:item() end)
    fails("^halua: index: index 3 is out of range for axis 1 of shape %[2,3%]", function() return a[3] end)
    fails("^halua: index: index %-4 is out of range for axis 2", function() return a[{1, -4}] end)
    fails("^halua: index: 3 indices for shape %[2,3%]", function() return a[{1, 1, 1}] end)
    fails("^halua: index: axis 2: step must not be 0", function() return a[{{}, {1, 3, 0}}] end)
    fails("^halua: len: a 0%-d array has no length", function() return #hl.array(1) end)
    fails("^halua: no field or method 'nope' on an array", function() return a.nope end)
  end)
  it("comparison operators point to the functions", function()
    fails("^halua: compare: < and <= on arrays cannot give an array in Lua; use hl.lt%(a, b%)", function() return a < a end)
  end)
  it("reductions with no identity over empty axes", function()
    fails("^halua: max: zero%-size axis 1 of shape %[0%] has no identity", hl.max, hl.zeros({0}))
    fails("^halua: argmin: zero%-size axis", hl.argmin, hl.zeros({2, 0}), 2)
  end)
  if hl.default_device() == "cpu" then   -- elsewhere hl.ones would fill 8 GiB of device memory first
    it("arrays too long for one axis of a pipeline", function()
      fails("^halua: sum: axis 1 of shape %[2147483648%] is too long for one pipeline", hl.sum, hl.ones({2 ^ 31}))
    end)
  end
  it("arange, linspace, devices", function()
    fails("^halua: arange: step must not be 0", hl.arange, 0, 5, 0)
    fails("^halua: arange: needs a stop value", hl.arange, "int32")
    fails("^halua: arange: start, stop and step must be numbers", hl.arange, {}, 2)
    fails("^halua: linspace: n must be a non%-negative integer", hl.linspace, 0, 1, -2)
    fails('^halua: device_put: unknown device tpu %(use "cpu" or "cuda"%)', hl.device_put, a, "tpu")
  end)
  it("leave the process and later ops working", function()
    assert.are.same({{2, 2, 2}, {2, 2, 2}}, (a * 2):totable())
  end)
end)

describe("more errors", function()
  local a = hl.ones({2, 3})
  it("every binary op and operator names itself and both shapes when shapes do not broadcast", function()
    for _, op in ipairs {"add", "sub", "mul", "div", "pow", "mod", "maximum", "minimum", "atan2", "floor_divide", "eq",
                         "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor"} do
      fails("^halua: " .. op .. ": .*%[2,3%].*%[2%]", hl[op], a, hl.ones({2}))
      fails("^halua: " .. op .. ": .*%[3,1,4%].*%[2,3%]", function() return a[op](hl.ones({3, 1, 4}), a) end)
    end
    for op, f in pairs {sub = function(p, q) return p - q end, mul = function(p, q) return p * q end,
                        div = function(p, q) return p / q end, mod = function(p, q) return p % q end,
                        pow = function(p, q) return p ^ q end} do
      fails("^halua: " .. op .. ": cannot broadcast shapes %[2,3%] and %[2%]", f, a, hl.ones({2}))
    end
    fails("^halua: where: .*%[2,3%].*%[5%]", hl.where, hl.gt(a, 0), a, hl.ones({5}))
    fails("^halua: add: cannot broadcast shapes %[2,0%] and %[3%]", hl.add, hl.zeros({2, 0}), hl.ones({3}))
  end)
  it("clip names itself when its bounds do not broadcast", function()
    fails("^halua: clip: .*%[2,3%].*%[4%]", hl.clip, a, hl.ones({4}), 1)
  end)
  it("matmul mismatches in every form name both shapes", function()
    fails("^halua: matmul: .*%[3%].*%[4%]", hl.matmul, hl.ones({3}), hl.ones({4}))
    fails("^halua: matmul: .*%[2,3,4%].*%[2,5,6%]", hl.matmul, hl.ones({2, 3, 4}), hl.ones({2, 5, 6}))
    fails("^halua: matmul: .*%[3%].*%[4,2%]", hl.matmul, hl.ones({3}), hl.ones({4, 2}))
    fails("^halua: matmul: .*%[2,3%].*%[2%]", hl.matmul, a, hl.ones({2}))
    fails("^halua: matmul: .*%[2,3%]", function() return a:matmul(a) end)
  end)
  for _, op in ipairs {"sum", "prod", "max", "min", "argmax", "argmin", "mean", "logsumexp"} do
    it("bad axes to " .. op .. " name " .. op, function()
      fails("^halua: " .. op .. ": axis 3 is out of range for 2 dimensions", hl[op], a, 3)
      fails("^halua: " .. op .. ": axis %-3 is out of range", hl[op], a, -3)
      fails("^halua: " .. op .. ": axis 0 is out of range", hl[op], a, 0)
    end)
  end
  it("bad axes to the other ops", function()
    fails("^halua: sum: axis 5 is out of range", hl.sum, a, {1, 5})
    fails("^halua: expand_dims: axis 5 is out of range", hl.expand_dims, a, 5)
    fails("^halua: transpose: ", hl.transpose, a, {1, 1})
    fails("^halua: transpose: ", hl.transpose, a, {1, 3})
    fails("^halua: concatenate: axis %-3 is out of range", hl.concatenate, {a, a}, -3)
  end)
  it("bad axes to softmax name softmax", function()
    fails("^halua: softmax: axis 3 is out of range", hl.nn.softmax, a, 3)
  end)
  it("reshape errors show the shapes", function()
    fails("^halua: reshape: cannot reshape %[2,3%] %(6 elements%) to %[7%]", hl.reshape, a, {7})
    fails("^halua: reshape: only one %-1 is allowed", hl.reshape, a, {-1, 3, -1})
    fails("^halua: reshape: .*%-2", hl.reshape, a, {-2, -3})
    fails("^halua: reshape: .*%[0,3%]", hl.reshape, hl.zeros({0, 3}), {-1, 0})
    fails("^halua: reshape: cannot reshape %[2,3%] %(6 elements%) to %[4%]", function() return a:reshape({4}) end)
  end)
  it("wrong dtype strings and non-string dtypes", function()
    fails("^halua: .*unknown dtype float17", hl.ones, {2}, "float17")
    fails("^halua: .*unknown dtype float17", hl.full, {2}, 1, "float17")
    fails("^halua: .*unknown dtype flt", hl.arange, 0, 3, 1, "flt")
    fails("^halua: .*unknown dtype", hl.eye, 2, 2, "x")
    fails("^halua: astype: unknown dtype Float32", function() return a:astype("Float32") end)
    fails("^halua: astype: ", function() return a:astype(3) end)
    fails("^halua: array: ", hl.array, {1}, 3)
  end)
  for _, c in ipairs {
    {"sum", "string", hl.sum, "x"}, {"mean", "string", hl.mean, "x"}, {"argmax", "function", hl.argmax, print},
    {"reshape", "string", hl.reshape, "x", {1}}, {"transpose", "function", hl.transpose, print},
    {"broadcast_to", "string", hl.broadcast_to, "x", {2}}, {"where", "string", hl.where, "x", a, a},
    {"clip", "table", hl.clip, {}, 0, 1}, {"sub", "function", function() return a - print end},
    {"mul", "string", function() return "x" * a end}, {"matmul", "string", hl.matmul, "x", a},
    {"astype", "string", hl.astype, "x", "float32"}, {"item", "string", hl.methods.item, "x"},
    {"exp", "string", hl.exp, "x"}, {"add", "function", hl.add, a, print}, {"concatenate", "", hl.concatenate, "x", 1},
  } do
    it(c[1] .. " says a " .. c[2] .. " is not an array", function()
      fails("^halua: " .. c[1] .. ": .*" .. c[2], c[3], unpack(c, 4))
    end)
  end
  it("item on arrays that do not hold one element", function()
    fails("^halua: item: needs a one%-element array, got shape %[0%]", function() return hl.zeros({0}):item() end)
    fails("^halua: item: needs a one%-element array, got shape %[2%]", function() return hl.ones({2}):item() end)
  end)
  it("assigning through an index or a field names x:at(", function()
    for _, f in ipairs {
      function() a[1] = 2 end, function() a[{1, 2}] = 0 end, function() a.shape = {3, 2} end,
      function() hl.ones({3})[2] = hl.array(1) end,
    } do
      fails("x:at%(", f)
    end
  end)
  it("jit errors start with halua: and name the op inside the traced function", function()
    fails("^halua: matmul: inner dimensions of %[2,3%] and %[2,3%]", hl.jit(function(p) return hl.matmul(p, p) end), a)
    fails("^halua: reshape: cannot reshape %[2,3%]", hl.jit(function(p) return hl.reshape(p, {5}) end), a)
    fails("^halua: sum: axis 4 is out of range", hl.jit(function(p) return hl.sum(p, 4) end), a)
  end)
end)

-- Every op in scope called with arguments a script could pass by mistake: strings, functions,
-- coroutines, nil, booleans, ragged tables, NaN and huge numbers, wrong shapes and axes.
-- Run in a separate process so a crash is a failure, not the end of the suite.
describe("odd arguments to every op", function()
  local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
  local p = io.popen("luajit " .. here .. "support/error_fuzz.lua 2>&1")
  local out = p:read("*a")
  p:close()
  local by_op, done = {}, false
  for line in out:gmatch("[^\n]+") do
    if line == "DONE" then done = true end
    local kind, op, call, msg = line:match("^(%u+)\t([^\t]+)\t([^\t]+)\t(.*)$")
    if kind then
      by_op[op] = by_op[op] or {}
      table.insert(by_op[op], string.format("%s %s -> %s", kind == "BAD" and "raw Lua error:" or "names another op:", call, msg))
    end
  end
  it("never crash the process", function()
    assert.is_true(done, "the process ended early; its last output:\n" .. out:sub(-600))
  end)
  local ops = {"neg", "exp", "add", "lt", "sum", "prod", "max", "min", "argmax", "argmin", "mean", "logsumexp", "matmul",
               "transpose", "reshape", "broadcast_to", "concatenate", "where", "clip", "array", "full", "arange",
               "linspace", "eye", "astype", "expand_dims", "squeeze", "softmax", "index", "item", "linalg.solve", "linalg.inv",
               "linalg.cholesky", "linalg.qr", "linalg.svd", "linalg.eigh", "linalg.eigvalsh", "linalg.slogdet", "linalg.det",
               "linalg.pinv", "linalg.norm", "linalg.matrix_power", "linalg.lstsq", "linalg.solve_triangular", "sort", "argsort",
               "lax.associative_scan", "cummax", "cummin", "lax.top_k", "lax.reduce_window", "checkpoint", "random.gamma",
               "random.poisson", "random.beta", "random.dirichlet", "random.truncated_normal", "random.choice",
               "random.categorical", "random.permutation"}
  for _, op in ipairs(ops) do
    it("give errors from " .. op .. " that start 'halua: " .. op .. ":'", function()
      local bad = by_op[op]
      if bad then
        local shown = {}
        for i = 1, math.min(#bad, 6) do shown[i] = bad[i] end
        error(#bad .. " calls, e.g.\n  " .. table.concat(shown, "\n  "), 0)
      end
    end)
  end
end)
