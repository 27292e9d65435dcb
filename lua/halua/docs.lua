-- The text hl.help shows: one entry per public function, keyed by its name under hl ("sum",
-- "random.split", "nn.relu") or, for methods with no hl function, "x:item". Each entry has
-- sig (the call, first line), doc (one paragraph), example (runnable Lua: tests/lua/help_spec.lua
-- runs every one with `hl` in scope) and group (for hl.help()'s overview). An entry {alias = name}
-- stands for a second name of the same function. Semantics follow the code, not just docs/api.md:
-- axes and indices are 1-based, ranges inclusive.
local docs, order = {}, {}
local group

local function G(name) group = name end
local function E(name, sig, doc, example)
  docs[name] = {sig = sig, doc = doc, example = example, group = group}
  order[#order + 1] = name
end
local function alias(name, target) docs[name] = {alias = target, group = group} end

---------------------------------------------------------------- arrays

G "Arrays"
E("array", "hl.array(v [, dtype]) -> array",
  "An array from a number, a boolean, a nested table of them (rows of equal length), or an array " ..
  "(copied to the dtype). Lua numbers give float32 unless dtype says otherwise; booleans give bool. " ..
  "dtypes are strings: float32 float64 float16 bfloat16 int8 int32 int64 uint8 bool complex64 complex128 (also hl.float32 == \"float32\"). " ..
  "Arrays are immutable: ops return new ones. Properties: x.shape (a new table), x.ndim, x.size, " ..
  "x.dtype, x.device, x.T (transpose), #x (first extent). print(x) shows a Lua expression that " ..
  "rebuilds x. Indexing is 1-based: x[i] selects along axis 1, x[{i, {a, b}, {}, {a, b, step}}] " ..
  "takes per axis an index, an inclusive range, the whole axis or a strided range; negatives " ..
  "count from the end. Operators + - * / % ^ and unary - are elementwise (* is not matmul).",
  [[local x = hl.array({{1, 2, 3}, {4, 5, 6}})
print(x, x.dtype, x.ndim, #x)
print(x[2], x[{{}, {2, 3}}], x[{-1, -1}])
print(hl.array({1, 2}, "int32"), x * 2 + 1)]])
E("asarray", "hl.asarray(x [, dtype]) -> array",
  "x itself when it is already an array of that dtype (or dtype is nil); otherwise an array made " ..
  "from x (a number, boolean or nested table) or x converted with astype.",
  [[local x = hl.ones(3)
print(hl.asarray(x) == x, hl.asarray({1, 2}), hl.asarray(x, "int32"))]])
E("zeros", "hl.zeros(shape [, dtype]) -> array",
  "An array of zeros; shape is a table {2, 3} or a number. dtype defaults to float32.",
  [[print(hl.zeros({2, 3}), hl.zeros(4, "int32"))]])
E("ones", "hl.ones(shape [, dtype]) -> array",
  "An array of ones; shape is a table {2, 3} or a number. dtype defaults to float32.",
  [[print(hl.ones({2, 2}), hl.ones(3, "bool"))]])
E("full", "hl.full(shape, value [, dtype]) -> array",
  "An array filled with value (a number or boolean); shape is a table or a number. Without dtype, " ..
  "a number gives float32 and a boolean gives bool.",
  [[print(hl.full({2, 2}, 7), hl.full(3, 1, "int32"), hl.full(2, true))]])
E("zeros_like", "hl.zeros_like(x) -> array",
  "Zeros with x's shape, dtype and device (inside hl.jit, a constant of the trace).",
  [[print(hl.zeros_like(hl.array({{1, 2}, {3, 4}}, "int32")))]])
E("ones_like", "hl.ones_like(x) -> array",
  "Ones with x's shape, dtype and device.",
  [[print(hl.ones_like(hl.arange(3)))]])
E("full_like", "hl.full_like(x, value) -> array",
  "An array of value with x's shape, dtype and device.",
  [[print(hl.full_like(hl.zeros({2, 2}), 3.5))]])
E("fill_like", "hl.fill_like(x, value [, shape] [, dtype]) -> array",
  "An array of value placed like x (x's device, or x's trace under hl.jit), with x's shape and " ..
  "dtype unless shape or dtype are given. The building block of zeros_like and friends.",
  [[print(hl.fill_like(hl.ones(2), 5, {3}, "int32"))]])
E("arange", "hl.arange([start,] stop [, step] [, dtype]) -> array",
  "Evenly spaced values from start (default 0) up to stop, excluded, as NumPy does: these are " ..
  "values, not indices. Integral arguments give int32, others float32, unless dtype is given " ..
  "(it may come after any argument). step may be negative, not 0.",
  [[print(hl.arange(5), hl.arange(1, 2, 0.25), hl.arange(3, "float64"))]])
E("linspace", "hl.linspace(start, stop [, n] [, dtype]) -> array",
  "n (default 50) evenly spaced values from start to stop, both included (the last one exactly). " ..
  "dtype defaults to float32.",
  [[print(hl.linspace(0, 1, 5))]])
E("eye", "hl.eye(n [, m] [, dtype]) -> array",
  "The n x m identity matrix (m defaults to n): ones on the diagonal. dtype defaults to float32.",
  [[print(hl.eye(2), hl.eye(2, 3, "int32"))]])
E("astype", "hl.astype(x, dtype) -> array   (also x:astype(dtype))",
  "x converted to dtype (float32 float64 float16 bfloat16 int8 int32 int64 uint8 bool). Floats to ints truncate toward " ..
  "zero; anything nonzero becomes true.",
  [[local x = hl.array({-1.5, 0, 2.7})
print(x:astype("int32"), hl.astype(x, "bool"))]])
E("tostring", "hl.tostring(x) -> string",
  "What print(x) shows: a Lua expression that rebuilds x exactly (the fewest digits that round-trip), " ..
  "NumPy-style aligned, summarised with ... past 1000 elements; a tracer inside hl.jit shows as " ..
  "<traced float32[3,4]>.",
  [[local s = hl.tostring(hl.array({1.5, 2}))
print(s, load("local hl = ...; return " .. s)(hl))]])
E("x:item", "x:item() -> number or boolean",
  "The value of a one-element array as a Lua number (or boolean for bool). Inside hl.jit this is " ..
  "an error: use hl.where or hl.cond, or make the argument static.",
  [[print(hl.array({{3}}):item(), hl.sum(hl.ones(4)):item())]])
E("x:totable", "x:totable() -> table",
  "The values of x as nested Lua tables (a number for a 0-d array).",
  [[local t = hl.array({{1, 2}, {3, 4}}):totable()
print(t[2][1], #t)]])
E("x:at", "x:at(index):set(v) / :add(v) / :mul(v) / :min(v) / :max(v) -> array",
  "A functional update: a new array equal to x except at index (written as for x[index]: numbers, " ..
  "inclusive ranges {a, b}, {} for a whole axis), where v replaces, is added to, multiplies, or " ..
  "takes the minimum or maximum with the selected values. v is a number or an array broadcasting " ..
  "to the selection. x itself never changes (assigning x[i] = v is an error); updates trace and " ..
  "differentiate like other ops. Index arrays: an axis may take an integer array of 1-based " ..
  "indices (negatives from the end), as JAX's x.at[idx]; the arrays (and numbers beside them) " ..
  "broadcast to one shape B, and the selection is B in place of those axes when they are " ..
  "adjacent, else B first, then the ranged axes (NumPy's rule). Repeated indices accumulate for " ..
  "add, mul, min and max; for set the last write in index order wins. Indices outside the axis " ..
  "(0, or past either end) are dropped, as JAX's default scatter mode does. v is cast to x's " ..
  "dtype. One scatter primitive per update: it runs in the pipeline, differentiates as JAX does " ..
  "(min/max through the winners, ties sharing) and batches under vmap. On complex arrays mul, min " ..
  "and max with index arrays are composed (the updates sorted by target, each run of repeats " ..
  "reduced by a segmented scan): NumPy's np.multiply.at / np.minimum.at / np.maximum.at, min and " ..
  "max in NumPy's order (real part, then imaginary part; the first NaN met wins).",
  [[local x = hl.zeros({2, 3})
print(x:at({1, 2}):set(5), x:at({{}, 3}):add(1), x)
local i = hl.array({1, 3, 3, -1}, "int32")
print(hl.zeros(3):at(i):add(1), x:at({{}, i}):max(hl.array({1, 2, 3, 4})))]])
alias("x:set", "x:at")
E("x:to", "x:to(device) -> array",
  "x copied to device (\"cpu\" or \"cuda\"); the method form of hl.device_put.",
  [[print(hl.ones(2):to("cpu").device)]])

---------------------------------------------------------------- elementwise

G "Elementwise"
local unary = {
  {"neg", "negation, -x (also the unary - operator)", "{1, -2}"},
  {"abs", "|x| (of a complex array, its modulus as a real array, scaled as hypot: no overflow)", "{-1.5, 2}"},
  {"sign", "-1, 0 or 1 by the sign of x (NaN stays NaN; of complex z, z / |z| and 0 at 0, NumPy 2's)", "{-3, 0, 2}"},
  {"square", "x * x", "{-2, 3}"},
  {"floor", "the largest integer not above x", "{-1.5, 1.5}"},
  {"ceil", "the smallest integer not below x", "{-1.5, 1.5}"},
  {"round", "the nearest integer, halves to even (as NumPy)", "{0.5, 1.5, 2.5}"},
  {"reciprocal", "1 / x (integers give float32)", "{2, 4}"},
  {"exp", "e^x", "{0, 1}"},
  {"expm1", "e^x - 1, accurate for small x", "{0, 1e-5}"},
  {"log", "the natural logarithm", "{1, 2.718281828}"},
  {"log1p", "log(1 + x), accurate for small x", "{0, 1e-5}"},
  {"sqrt", "the square root", "{4, 2}"},
  {"rsqrt", "1 / sqrt(x)", "{4, 16}"},
  {"sin", "the sine (radians)", "{0, 1.5707963}"},
  {"cos", "the cosine (radians)", "{0, 3.1415927}"},
  {"tan", "the tangent (radians)", "{0, 0.7853982}"},
  {"asin", "the arcsine, in [-pi/2, pi/2] (of complex z, NumPy's branch: cuts on the real axis past +-1)", "{0, 1}"},
  {"acos", "the arccosine, in [0, pi] (of complex z, NumPy's branch: cuts on the real axis past +-1)", "{1, 0}"},
  {"atan", "the arctangent, in (-pi/2, pi/2) (of complex z, NumPy's branch: cuts on the imaginary axis past +-i)", "{0, 1}"},
  {"asinh", "the inverse hyperbolic sine (of complex z, NumPy's branch: cuts on the imaginary axis past +-i)", "{0, 1}"},
  {"acosh", "the inverse hyperbolic cosine, NaN below 1 (of complex z, NumPy's branch: the cut on the real axis below 1)", "{1, 2}"},
  {"atanh", "the inverse hyperbolic tangent, +-inf at +-1, NaN past them (of complex z, NumPy's branch: cuts on the real axis past +-1)", "{0, 0.5}"},
  {"sinh", "the hyperbolic sine", "{0, 1}"},
  {"cosh", "the hyperbolic cosine", "{0, 1}"},
  {"tanh", "the hyperbolic tangent", "{0, 1}"},
  {"erf", "the error function", "{0, 1}"},
  {"isnan", "true where x is NaN (a bool array)", "{0, 0/0}"},
  {"isinf", "true where x is +inf or -inf (a bool array)", "{1, 1/0}"},
  {"isfinite", "true where x is neither NaN nor infinite (a bool array)", "{1, 1/0}"},
  {"logical_not", "not x, with x taken as bool (nonzero is true)", "{true, false}"},
}
for _, u in ipairs(unary) do
  local name, what, input = u[1], u[2], u[3]
  local float = ({neg = false, abs = false, sign = false, square = false, floor = false, ceil = false, round = false,
                  isnan = false, isinf = false, isfinite = false, logical_not = false})[name] == nil
  E(name, "hl." .. name .. "(x) -> array   (also x:" .. name .. "())",
    "Elementwise " .. what .. ". x is an array or a Lua number; " ..
    (float and "integer inputs are computed in float32, float inputs keep their dtype."
           or "the result has x's shape.") ..
    " Differentiable where the function is (hl.grad).",
    "print(hl." .. name .. "(hl.array(" .. input .. ")))")
end
alias("negative", "neg")
for _, f in ipairs {"sin", "cos", "tan", "sinh", "cosh", "tanh"} do alias("arc" .. f, "a" .. f) end
E("stop_gradient", "hl.stop_gradient(x) -> x",
  "x unchanged, but derivatives see it as a constant: no gradient flows through it. Takes an " ..
  "array, a number or a pytree of them.",
  [[local f = function(x) return (x * hl.stop_gradient(x)):sum() end
print(hl.grad(f)(hl.array({1, 2, 3})))]])

local binary = {
  {"add", "a + b", "{1, 2}", "10"},
  {"sub", "a - b", "{1, 2}", "10"},
  {"mul", "a * b", "{1, 2}", "10"},
  {"div", "a / b (integers give float32, as in JAX)", "{1, 2}", "4"},
  {"pow", "a ^ b (complex: NumPy's values, 0 ^ 0 = 1; z ^ n for a Lua integer n by products, else exp(b log a))", "{2, 3}", "2"},
  {"mod", "the remainder of a / b with the divisor's sign (Python's %; also a % b)", "{-3, 4}", "3"},
  {"floor_divide", "floor(a / b), integer division rounding down (integer division by zero gives 0)", "{-7, 7}", "2"},
  {"maximum", "the larger of a and b (NaN propagates; complex numbers order by real part, then imaginary part, as NumPy's)", "{1, 5}", "3"},
  {"minimum", "the smaller of a and b (NaN propagates; complex numbers order by real part, then imaginary part, as NumPy's)", "{1, 5}", "3"},
  {"atan2", "the angle of the point (b, a): atan(a / b) in the right quadrant", "{1, -1}", "-1"},
}
for _, b in ipairs(binary) do
  local name, what, input, other = b[1], b[2], b[3], b[4]
  E(name, "hl." .. name .. "(a, b) -> array   (also a:" .. name .. "(b))",
    "Elementwise " .. what .. ". a and b are arrays or Lua numbers, broadcast as NumPy does; two " ..
    "arrays promote to a common dtype (bool < ints < floats), a Lua number takes the array's dtype.",
    "print(hl." .. name .. "(hl.array(" .. input .. "), " .. other .. "))")
end

G "Comparison and logic"
local compare = {
  {"eq", "a == b"}, {"ne", "a ~= b (true for NaN)"}, {"lt", "a < b"}, {"le", "a <= b"}, {"gt", "a > b"},
  {"ge", "a >= b"},
}
for _, c in ipairs(compare) do
  E(c[1], "hl." .. c[1] .. "(a, b) -> bool array   (also a:" .. c[1] .. "(b))",
    "Elementwise " .. c[2] .. ", broadcast, as a bool array. Comparisons are functions because Lua " ..
    "turns < and == into a single boolean; comparisons with NaN are false except ne. Complex " ..
    "numbers compare by real part, then imaginary part (NumPy's order).",
    "print(hl." .. c[1] .. "(hl.array({1, 2, 3}), 2))")
end
for _, l in ipairs {{"logical_and", "a and b"}, {"logical_or", "a or b"}, {"logical_xor", "a xor b"}} do
  E(l[1], "hl." .. l[1] .. "(a, b) -> bool array",
    "Elementwise " .. l[2] .. ", with both taken as bool (nonzero is true), broadcast.",
    "print(hl." .. l[1] .. "(hl.array({true, true, false}), hl.array({true, false, false})))")
end
for _, l in ipairs {{"bitwise_and", "&"}, {"bitwise_or", "|"}, {"bitwise_xor", "xor (~)"}} do
  E(l[1], "hl." .. l[1] .. "(a, b) -> array",
    "Elementwise bitwise " .. l[2] .. " of integer (or bool) arrays, as NumPy's.",
    "print(hl." .. l[1] .. "(hl.array({12, 10}, \"int32\"), 6))")
end
E("left_shift", "hl.left_shift(a, n) -> array",
  "a shifted left by n bits, for integer arrays; shifting by the width or more gives 0.",
  [[print(hl.left_shift(hl.array({1, 3}, "int32"), 4))]])
E("right_shift", "hl.right_shift(a, n) -> array",
  "a shifted right by n bits (arithmetic: the sign is kept), for integer arrays; shifting by the " ..
  "width or more gives 0, or -1 for a negative value.",
  [[print(hl.right_shift(hl.array({256, -16}, "int32"), 4))]])
E("where", "hl.where(cond, a, b) -> array",
  "Elementwise choice: a where cond is true (nonzero), b elsewhere; all three broadcast together, " ..
  "a and b promote to one dtype. Derivatives flow only to the chosen side. Use it instead of a " ..
  "Lua `if` on traced values.",
  [[local x = hl.array({-2, 0, 3})
print(hl.where(hl.gt(x, 0), x, 0))]])
E("clip", "hl.clip(x, lo, hi) -> array   (also x:clip(lo, hi))",
  "x limited to [lo, hi] elementwise: maximum(x, lo) then minimum(..., hi); either bound may be nil.",
  [[print(hl.clip(hl.array({-2, 0.5, 3}), -1, 1), hl.clip(hl.array({-2, 5}), 0))]])
E("threefry2x32", "hl.threefry2x32(k0, k1, x0, x1) -> int64 array",
  "The raw Threefry-2x32 primitive (20 rounds) behind hl.random: the key words k0, k1 and counter " ..
  "words x0, x1 (the low 32 bits of integer arrays) give the two result words packed as " ..
  "y0 * 2^32 + y1 in an int64 array. hl.random.threefry2x32 takes a key and returns the words apart.",
  [[local z = hl.array(0, "int64")
print(hl.threefry2x32(z, z, z, z))]])

---------------------------------------------------------------- reductions

G "Reductions and scans"
local reductions = {
  {"sum", "the sum", "bool, uint8 and int8 sum to int32, other dtypes keep theirs"},
  {"prod", "the product", "bool, uint8 and int8 give int32, other dtypes keep theirs (complex ones too)"},
  {"max", "the largest element (NaN propagates; complex numbers order by real part, then imaginary part, as NumPy's)", "the dtype is kept"},
  {"min", "the smallest element (NaN propagates; complex numbers order by real part, then imaginary part, as NumPy's)", "the dtype is kept"},
  {"mean", "the mean", "integers give float32"},
  {"var", "the variance, divided by the count (NumPy's ddof 0)", "integers give float32"},
  {"std", "the standard deviation (sqrt of var, ddof 0)", "integers give float32"},
  {"all", "true where every element is nonzero", "the result is bool"},
  {"any", "true where some element is nonzero", "the result is bool"},
  {"logsumexp", "log(sum(exp(x))), computed stably (max subtracted first)", "integers give float32"},
}
for _, r in ipairs(reductions) do
  E(r[1], "hl." .. r[1] .. "(x [, axes] [, keepdims]) -> array   (also x:" .. r[1] .. "(...))",
    "Reduces x to " .. r[2] .. " over axes: nil for all of them, an axis number or a table of " ..
    "them (1-based; negatives count from the end). keepdims = true keeps the reduced axes with " ..
    "extent 1 (keepdims may also come second: x:" .. r[1] .. "(true)); " .. r[3] .. ".",
    "local x = hl.array({{1, 2, 3}, {4, 5, 6}})\nprint(hl." .. r[1] .. "(x), x:" .. r[1] .. "(2), hl." ..
    r[1] .. "(x, {1, 2}, true))")
end
for _, r in ipairs {{"argmax", "largest"}, {"argmin", "smallest"}} do
  E(r[1], "hl." .. r[1] .. "(x [, axis] [, keepdims]) -> int64 array   (also x:" .. r[1] .. "(...))",
    "The 1-based index of the " .. r[2] .. " element along axis (the first one at ties; a NaN counts " ..
    "as " .. r[2] .. "; complex numbers order by real part, then imaginary part, as NumPy's); " ..
    "without axis, the index into the flattened x.",
    "local x = hl.array({{3, 9, 1}, {7, 2, 8}})\nprint(hl." .. r[1] .. "(x), x:" .. r[1] .. "(2))")
end
E("cumsum", "hl.cumsum(x [, axis]) -> array   (also x:cumsum(axis))",
  "Running sums along axis (1-based; the flattened x when nil): element i is the sum of elements " ..
  "1..i. bool, uint8 and int8 give int32.",
  [[print(hl.cumsum(hl.array({1, 2, 3, 4})), hl.cumsum(hl.ones({2, 3}), 2))]])
E("cumprod", "hl.cumprod(x [, axis]) -> array   (also x:cumprod(axis))",
  "Running products along axis (1-based; the flattened x when nil): element i is the product of " ..
  "elements 1..i.",
  [[print(hl.cumprod(hl.array({1, 2, 3, 4})))]])

---------------------------------------------------------------- linear algebra

G "Linear algebra"
E("matmul", "hl.matmul(a, b) -> array   (also a:matmul(b))",
  "The matrix product with NumPy's rules: 2-D times 2-D is the usual product; a 1-D operand is a " ..
  "row (left) or column (right) vector, its axis dropped from the result; leading axes are batch " ..
  "axes and broadcast. The * operator is elementwise, not matmul.",
  [[local a = hl.array({{1, 2}, {3, 4}})
print(hl.matmul(a, a), hl.matmul(a, hl.array({1, 1})))]])
E("dot", "hl.dot(a, b) -> array   (also a:dot(b))",
  "a * b when either is 0-d, otherwise hl.matmul(a, b) (for 1-D vectors, the inner product).",
  [[print(hl.dot(hl.array({1, 2, 3}), hl.array({4, 5, 6})))]])
E("outer", "hl.outer(a, b) -> array",
  "The outer product of a and b taken as flat vectors: out[i][j] = a[i] * b[j].",
  [[print(hl.outer(hl.array({1, 2}), hl.array({1, 10, 100})))]])
E("einsum", "hl.einsum(spec, a [, b]) -> array",
  "Einstein summation over one or two operands: spec names each operand's axes with letters, " ..
  "\"ij,jk->ik\"; labels missing from the output are summed; a label repeated in one operand takes " ..
  "the diagonal; without \"->\" the output is the labels used once, in alphabetical order. " ..
  "Contractions run as one batched matmul. No \"...\" yet.",
  [[local a, b = hl.ones({2, 3}), hl.arange(6):astype("float32"):reshape({3, 2})
print(hl.einsum("ij,jk->ik", a, b), hl.einsum("ii", hl.eye(3)), hl.einsum("ij->ji", a))]])
E("transpose", "hl.transpose(x [, perm]) -> array   (also x:transpose(perm), x.T)",
  "x with its axes permuted: perm lists, for each axis of the result, the (1-based) axis of x it " ..
  "comes from; without perm the axes are reversed (x.T).",
  [[local x = hl.zeros({2, 3, 4})
print(hl.transpose(x).shape[1], hl.transpose(x, {2, 1, 3}).shape[1], hl.ones({2, 3}).T)]])

G "Shape and indexing"
E("reshape", "hl.reshape(x, shape) or hl.reshape(x, e1, e2, ...) -> array   (also x:reshape(...))",
  "x's elements (in row-major order) with a new shape of the same number of elements: a table " ..
  "{2, 3}, a number, or the extents as separate arguments (x:reshape(2, 3), as NumPy's); one " ..
  "extent may be -1, inferred from the others.",
  [[print(hl.reshape(hl.arange(6), {2, 3}), hl.arange(6):reshape(-1, 2))]])
E("flatten", "hl.flatten(x) -> array   (also x:flatten())",
  "x as a 1-D array of its x.size elements, in row-major order.",
  [[print(hl.flatten(hl.array({{1, 2}, {3, 4}})))]])
E("squeeze", "hl.squeeze(x [, axes]) -> array   (also x:squeeze(axes))",
  "x without axes of extent 1: all of them, or the given axis or axes (1-based; each must have " ..
  "extent 1).",
  [[local x = hl.zeros({1, 3, 1})
print(#hl.squeeze(x).shape, #hl.squeeze(x, 1).shape)]])
E("expand_dims", "hl.expand_dims(x, axis) -> array   (also x:expand_dims(axis))",
  "x with a new axis of extent 1 at position axis of the result (1-based; -1 appends one last).",
  [[local x = hl.array({1, 2, 3})
print(hl.expand_dims(x, 1), hl.expand_dims(x, -1))]])
E("broadcast_to", "hl.broadcast_to(x, shape) -> array   (also x:broadcast_to(shape))",
  "x stretched to shape by NumPy's broadcasting rules (trailing axes aligned, extent-1 axes " ..
  "repeated), without copying.",
  [[print(hl.broadcast_to(hl.array({1, 2, 3}), {2, 3}))]])
E("concatenate", "hl.concatenate(list, axis) -> array",
  "The arrays of list joined along an existing axis (1-based, default 1); the other extents must " ..
  "agree. Dtypes promote to a common one.",
  [[local a, b = hl.ones({2, 2}), hl.zeros({1, 2})
print(hl.concatenate({a, b}, 1), hl.concatenate({a, a}, 2).shape[2])]])
E("stack", "hl.stack(list [, axis]) -> array",
  "The arrays of list (all of one shape) joined along a new axis at position axis (1-based, " ..
  "default 1).",
  [[local a, b = hl.array({1, 2}), hl.array({3, 4})
print(hl.stack({a, b}), hl.stack({a, b}, 2))]])
E("split", "hl.split(x, n_or_positions [, axis]) -> {arrays}   (also x:split(...))",
  "Splits x along axis (1-based, default 1): a number n gives n equal parts (the extent must " ..
  "divide); a table of 1-based positions {i1, i2, ...} gives parts starting at 1, i1, i2, ... " ..
  "(NumPy's np.split(x, [i1 - 1, i2 - 1])). Returns a Lua list of arrays.",
  [[local x = hl.arange(6)
local halves = hl.split(x, 2)
print(halves[1], halves[2], hl.split(x, {3, 5})[2])]])
E("tile", "hl.tile(x, reps) -> array   (also x:tile(reps))",
  "x repeated as a whole reps times along each axis (reps a number or one per axis, aligned with " ..
  "the trailing axes), as NumPy's tile.",
  [[print(hl.tile(hl.array({1, 2}), 2), hl.tile(hl.array({1, 2}), {2, 1}))]])
E("repeat", "hl[\"repeat\"](x, r [, axis]) -> array   (also x[\"repeat\"](x, r, axis))",
  "Each element repeated r times along axis (1-based; the flattened x when nil), as NumPy's " ..
  "repeat. `repeat` is a Lua keyword, so write hl[\"repeat\"](x, r), not hl.repeat.",
  [[local x = hl.array({{1, 2}})
print(hl["repeat"](x, 2), hl["repeat"](x, 2, 1))]])
E("flip", "hl.flip(x [, axes]) -> array   (also x:flip(axes))",
  "x reversed along the given axis or axes (1-based), or along all axes when nil.",
  [[print(hl.flip(hl.arange(4)), hl.flip(hl.array({{1, 2}, {3, 4}}), 2))]])
E("take", "hl.take(x, idx [, axis]) -> array   (also x:take(idx, axis))",
  "The elements of x at the 1-based integer indices idx along axis (the flattened x when nil): " ..
  "x's shape with that axis replaced by idx's shape. Indices outside 1..n are an error on " ..
  "concrete arrays (under jit they select zeros).",
  [[local x = hl.array({10, 20, 30})
print(hl.take(x, hl.array({3, 1}, "int32")), hl.take(hl.eye(3), hl.array({2}, "int32"), 2))]])
E("take_along_axis", "hl.take_along_axis(x, idx, axis) -> array",
  "out[..., j, ...] = x[..., idx[..., j, ...], ...] along axis (1-based, default 1): idx is an " ..
  "integer array with x's rank holding 1-based indices, its other axes broadcasting against x's, " ..
  "as NumPy's take_along_axis (e.g. with the result of argsort). Indices outside 1..n are an " ..
  "error on concrete arrays (under jit they read zeros).",
  [[local x = hl.array({{10, 20}, {30, 40}})
print(hl.take_along_axis(x, hl.array({{2}, {1}}, "int32"), 2))]])
E("one_hot", "hl.one_hot(idx, n [, dtype]) -> array",
  "idx's shape plus a last axis of n: 1 where the 1-based integer index points, 0 elsewhere " ..
  "(indices outside 1..n give all zeros). dtype defaults to float32.",
  [[print(hl.one_hot(hl.array({1, 3}, "int32"), 3))]])
E("segment_sum", "hl.segment_sum(data, segment_ids [, num_segments]) -> array   (also hl.ops.segment_sum)",
  "Sums of data's rows (axis 1) by segment, as jax.ops.segment_sum: row k goes to segment " ..
  "segment_ids[k] (1-based, an integer array with one id per row); the result has num_segments " ..
  "rows. Ids outside 1..num_segments are dropped; an empty segment is 0. num_segments is " ..
  "required under jit and inferred eagerly (the largest id) when omitted. One scatter: it runs in " ..
  "the pipeline, differentiates and batches under vmap.",
  [[print(hl.segment_sum(hl.array({1, 2, 3, 4}), hl.array({1, 3, 1, 3}, "int32"), 3))]])
E("segment_max", "hl.segment_max(data, segment_ids [, num_segments]) -> array   (also hl.ops.segment_max)",
  "The elementwise maximum of data's rows by segment, as jax.ops.segment_max (see segment_sum " ..
  "for the ids): an empty segment holds -inf for floats and the dtype's lowest value for integers. " ..
  "The gradient goes to the rows that won, ties sharing evenly.",
  [[print(hl.segment_max(hl.array({1, 5, 3, 4}), hl.array({1, 1, 3, 3}, "int32"), 3))]])
E("segment_min", "hl.segment_min(data, segment_ids [, num_segments]) -> array   (also hl.ops.segment_min)",
  "The elementwise minimum of data's rows by segment, as jax.ops.segment_min (see segment_sum " ..
  "for the ids): an empty segment holds inf for floats and the dtype's highest value for integers.",
  [[print(hl.segment_min(hl.array({{1, 5}, {3, 4}}), hl.array({2, 2}, "int32"), 2))]])
alias("ops.segment_sum", "segment_sum")
alias("ops.segment_max", "segment_max")
alias("ops.segment_min", "segment_min")
E("dynamic_slice", "hl.dynamic_slice(x, starts, sizes) -> array",
  "The block of x of static shape sizes (a table, one size per axis) at starts, as " ..
  "jax.lax.dynamic_slice: starts is a table of numbers or 0-d integer arrays (traced ones " ..
  "included), or a 1-d integer array, one per axis, 1-based, negatives from the end. Each start " ..
  "is clamped so the block stays inside x (jax.lax's rule: a start of 0, like one past the end, " ..
  "is clamped too, to 1; traced starts cannot be checked). Differentiable in x; batches under " ..
  "vmap with mapped starts.",
  [[local x = hl.arange(12):reshape({3, 4})
print(hl.dynamic_slice(x, {2, hl.array(2, "int32")}, {2, 2}), hl.dynamic_slice(x, {3, 4}, {2, 2}))]])
E("dynamic_update_slice", "hl.dynamic_update_slice(x, update, starts) -> array",
  "x with the block update (x's rank, each extent at most x's) written at starts, as " ..
  "jax.lax.dynamic_update_slice: starts as for dynamic_slice (1-based, traced or numbers), " ..
  "clamped so the block stays inside x. update is cast to x's dtype. Differentiable in x and " ..
  "update; batches under vmap with mapped starts.",
  [[print(hl.dynamic_update_slice(hl.zeros({3, 3}), hl.ones({2, 2}), {hl.array(3, "int32"), 1}))]])
E("sort", "hl.sort(x [, axis]) -> array   (also x:sort(axis))",
  "x sorted in ascending order along axis (1-based, default -1, the last, as NumPy's), stably, " ..
  "with NaN after everything else. Complex numbers sort by real part, then imaginary part, and " ..
  "those with a NaN part last (R + nanj, then nan + Rj, then nan + nanj), as NumPy's. " ..
  "Differentiable: the cotangent goes back through the inverse permutation.",
  [[print(hl.sort(hl.array({3, 1, 2})), hl.array({{2, 1}, {0, 5}}):sort(1))]])
E("argsort", "hl.argsort(x [, axis]) -> int64 array   (also x:argsort(axis))",
  "The 1-based indices that sort x along axis (default -1), stably (equal values keep their " ..
  "order), NaN last, complex numbers in hl.sort's order: hl.take_along_axis(x, hl.argsort(x, a), a) is hl.sort(x, a).",
  [[local x = hl.array({3, 1, 2})
print(hl.argsort(x), hl.take_along_axis(x, hl.argsort(x), 1))]])

---------------------------------------------------------------- transformations

G "NumPy functions"
E("nansum", "hl.nansum(x [, axis or {axes}] [, keepdims]) -> array   (also x:nansum(...))",
  "The sum with NaNs counted as zero (as NumPy's nansum); integer arrays sum as hl.sum.",
  [[print(hl.nansum(hl.array({1, 0 / 0, 2})), hl.nansum(hl.array({{1, 0 / 0}, {3, 4}}), 2))]])
E("nanmean", "hl.nanmean(x [, axis or {axes}] [, keepdims]) -> array   (also x:nanmean(...))",
  "The mean of the non-NaN elements. A slice of only NaNs gives NaN (NumPy also warns; halua does " ..
  "not). Integers give float32, as hl.mean.",
  [[print(hl.nanmean(hl.array({1, 0 / 0, 2})), hl.nanmean(hl.array({{0 / 0, 0 / 0}, {3, 4}}), 2))]])
E("nanmax", "hl.nanmax(x [, axis or {axes}] [, keepdims]) -> array   (also x:nanmax(...))",
  "The maximum ignoring NaNs; an all-NaN slice gives NaN (NumPy warns too; halua does not warn). " ..
  "Complex arrays: NumPy's order (real part, then imaginary part), a NaN in either part ignored; " ..
  "an all-NaN slice gives its first element, as NumPy.",
  [[print(hl.nanmax(hl.array({{1, 0 / 0}, {0 / 0, 0 / 0}}), 2))]])
E("nanmin", "hl.nanmin(x [, axis or {axes}] [, keepdims]) -> array   (also x:nanmin(...))",
  "The minimum ignoring NaNs; an all-NaN slice gives NaN (NumPy warns too; halua does not warn). " ..
  "Complex arrays as hl.nanmax.",
  [[print(hl.nanmin(hl.array({3, 0 / 0, 2})))]])
E("nanvar", "hl.nanvar(x [, axis or {axes}] [, keepdims] [, ddof]) -> array   (also x:nanvar(...))",
  "The variance of the non-NaN elements: the sum of squared deviations from their mean divided by " ..
  "count - ddof (ddof default 0); NaN where count - ddof is not positive, as NumPy (without its warning). " ..
  "Of a complex array, the mean of |x - mean|^2: a real array (float32 for complex64).",
  [[local x = hl.array({{1, 2, 0 / 0, 4}})
print(hl.nanvar(x), hl.nanvar(x, 2, false, 1), hl.nanvar(x, 2, true))]])
E("nanstd", "hl.nanstd(x [, axis or {axes}] [, keepdims] [, ddof]) -> array   (also x:nanstd(...))",
  "The square root of hl.nanvar with the same arguments.",
  [[print(hl.nanstd(hl.array({1, 2, 0 / 0, 4}), 1, false, 1))]])
E("median", "hl.median(x [, axis or {axes}] [, keepdims]) -> array   (also x:median(...))",
  "The middle value along the axes (all when nil), or the mean of the two middle values for an " ..
  "even count; a slice holding a NaN gives NaN, as NumPy. Differentiable (the gradient reaches " ..
  "the middle elements). Complex arrays sort in NumPy's order (real part, then imaginary part).",
  [[local x = hl.array({{3, 1, 2}, {4, 6, 5}})
print(hl.median(x), hl.median(x, 2), hl.median(x, 1, true))]])
E("quantile", "hl.quantile(x, q [, axis or {axes}] [, keepdims] [, method]) -> array   (also x:quantile(...))",
  "The q-th quantiles (q in [0, 1], a number or an array) of x over the axes (all when nil); q's " ..
  "axes come first in the result, as NumPy. method is \"linear\" (default), \"lower\", \"higher\", " ..
  "\"nearest\" (ties to even) or \"midpoint\"; the options may also be a table {axis =, keepdims =, " ..
  "method =}. A slice holding a NaN gives NaN. Integers give float32. Complex arrays sort in NumPy's " ..
  "order and interpolate each part (complex64 stays complex64, where NumPy's float64 q gives complex128).",
  [[local x = hl.array({1, 2, 3, 4, 10})
print(hl.quantile(x, 0.5), hl.quantile(x, hl.array({0.1, 0.9})), hl.quantile(x, 0.3, {method = "lower"}))]])
E("percentile", "hl.percentile(x, q [, axis or {axes}] [, keepdims] [, method]) -> array   (also x:percentile(...))",
  "hl.quantile with q in percent (0 to 100).",
  [[print(hl.percentile(hl.array({1, 2, 3, 4}), {25, 50, 75}))]])
E("diff", "hl.diff(x [, n] [, axis] [, {prepend =, append =}]) -> array   (also x:diff(...))",
  "The n-th (default 1st) forward difference x[i+1] - x[i] along axis (1-based, default the last). " ..
  "prepend and append (numbers or arrays) are joined to x along the axis first. Bool arrays give " ..
  "x[i+1] ~= x[i], as NumPy.",
  [[local x = hl.array({1, 2, 4, 7})
print(hl.diff(x), hl.diff(x, 2), hl.diff(x, {prepend = 0}))]])
E("trapezoid", "hl.trapezoid(y [, x] [, dx] [, axis]) -> array",
  "The integral of y along axis (default the last) by the trapezoidal rule, with sample " ..
  "coordinates x (1-D along the axis, or y's shape) or a spacing dx (default 1); also " ..
  "trapezoid(y, {x =, dx =, axis =}). NumPy's trapezoid (trapz before NumPy 2).",
  [[local y = hl.array({1, 2, 3})
print(hl.trapezoid(y), hl.trapezoid(y, 0.5), hl.trapezoid(y, hl.array({0, 1, 3})))]])
E("select", "hl.select(condlist, choicelist [, default]) -> array",
  "Per element, the value of the choice whose condition (a bool array) is the first true one, " ..
  "else default (0); conditions and choices broadcast together, as NumPy's select.",
  [[local x = hl.arange(6)
print(hl.select({hl.lt(x, 2), hl.gt(x, 3)}, {x, x * 10}, -1))]])
E("searchsorted", "hl.searchsorted(a, v [, side]) -> int64 array   (also a:searchsorted(v, side))",
  "For each element of v, the 1-based position where it would be inserted into the sorted 1-D " ..
  "array a to keep it sorted: 1 + the number of a's elements before it (NumPy's index plus one, " ..
  "so the result can index or split a directly). side \"left\" (default) puts v before equal " ..
  "elements, \"right\" after them; NaN sorts last. A binary search: it traces and batches.",
  [[local a = hl.array({1, 2, 2, 3})
print(hl.searchsorted(a, 2), hl.searchsorted(a, 2, "right"), hl.searchsorted(a, hl.array({0, 5})))]])
E("interp", "hl.interp(x, xp, fp [, left] [, right]) -> array",
  "Piecewise-linear interpolation at x of the points (xp, fp), xp increasing, as NumPy's interp; " ..
  "left and right (default fp's first and last values) outside xp's range. The result has the " ..
  "inputs' float dtype (float32 stays float32, where NumPy gives float64). Differentiable in x, xp and fp. " ..
  "A complex fp (and left, right) interpolates each part.",
  [[print(hl.interp(hl.array({0.5, 1.5, 5}), hl.array({0, 1, 2}), hl.array({0, 10, 20}), nil, -1))]])
E("histogram", "hl.histogram(x [, bins] [, range] [, opts]) -> counts, edges",
  "Counts the elements of x (flattened) in bins: bins is a count (default 10) of equal bins over " ..
  "range {lo, hi} (default x's min and max) or a list of increasing edges. Each bin holds " ..
  "lo <= v < hi, the last one also v == hi; values outside are not counted. counts is int64 (the " ..
  "weights' dtype with opts.weights, a density with opts.density = true); edges has bins + 1 " ..
  "elements. opts: {bins =, range =, weights =, density =}. Without a range, NaN or inf data is an error.",
  [[local counts, edges = hl.histogram(hl.array({1, 2, 2, 3, 5}), 4)
print(counts, edges)
print((hl.histogram(hl.array({0.5, 1.5, 9}), {0, 1, 2})))]])
E("bincount", "hl.bincount(x [, weights] [, minlength | {minlength =, length =}]) -> array",
  "How often each value 0, 1, 2, ... occurs in the 1-D non-negative integer array x: the count of " ..
  "value v is at (1-based) position v + 1, as NumPy's index v. With weights, their sums instead " ..
  "(float weights keep their dtype; NumPy uses float64). The length is max(x) + 1, at least " ..
  "minlength. Under jit or vmap the length must be static: give {length = n} (values from n on are " ..
  "dropped, as JAX's length).",
  [[print(hl.bincount(hl.array({0, 1, 1, 3}, "int32")), hl.bincount(hl.array({2}, "int32"), {minlength = 4}))
print(hl.jit(function(x) return hl.bincount(x, {length = 3}) end)(hl.array({0, 2, 2}, "int32")))]])
E("unique", "hl.unique(x [, opts]) -> values [, index] [, inverse] [, counts]",
  "The sorted distinct values of the flattened x (NaNs count as one, last). opts: return_index " ..
  "(the 1-based position in x of each value's first occurrence), return_inverse (for each element " ..
  "of x, the 1-based position of its value in the result: values:take(inverse) rebuilds x), " ..
  "return_counts; they follow the values in that order. Under jit or vmap the number of values must be " ..
  "static, as JAX: {size = n} pads with fill_value (default the smallest value), indices and counts with 0.",
  [[local v, idx, inv, n = hl.unique(hl.array({3, 1, 3, 2}), {return_index = true, return_inverse = true, return_counts = true})
print(v, idx, inv, n)
print(hl.jit(function(x) return hl.unique(x, {size = 4, fill_value = 0}) end)(hl.array({5, 5, 7})))]])
E("pad", "hl.pad(x, width [, value | mode | {mode =, value =}]) -> array   (also x:pad(...))",
  "x padded along every axis: width is a number (that many on every side of every axis), " ..
  "{before, after} (for every axis) or one {before, after} pair per axis. mode is NumPy's: " ..
  "\"constant\" (default, value default 0), \"edge\" (the end values repeated), \"reflect\" " ..
  "(mirrored without the end value), \"symmetric\" (mirrored with it), \"wrap\" (the other end's " ..
  "values); widths longer than the axis repeat the pattern.",
  [[print(hl.pad(hl.ones(2), 1), hl.pad(hl.ones({1, 2}), {{0, 1}, {1, 0}}, 9))
print(hl.pad(hl.array({1, 2, 3}), 2, "reflect"), hl.pad(hl.array({1, 2, 3}), {1, 2}, {mode = "wrap"}))]])
E("roll", "hl.roll(x, shift [, axis]) -> array   (also x:roll(shift, axis))",
  "x's elements moved shift places along axis (1-based), those leaving one end entering at the " ..
  "other; shift and axis may be lists. Without an axis the flattened x is rolled and reshaped back.",
  [[local x = hl.array({{1, 2, 3}, {4, 5, 6}})
print(hl.roll(x, 1), hl.roll(x, -1, 2), hl.roll(x, {1, 1}, {1, 2}))]])
E("rot90", "hl.rot90(x [, k] [, axes]) -> array   (also x:rot90(k, axes))",
  "x rotated by k (default 1) quarter turns in the plane of axes (default {1, 2}), from the first " ..
  "axis towards the second, as NumPy's rot90.",
  [[local x = hl.array({{1, 2}, {3, 4}})
print(hl.rot90(x), hl.rot90(x, 2), hl.rot90(x, -1))]])
E("meshgrid", "hl.meshgrid(x1, x2, ... [, {indexing = \"xy\" | \"ij\"}]) -> arrays",
  "Coordinate arrays from 1-D ones (also given as one list {x1, x2, ...}), one result per input: with \"xy\" (default, as NumPy) the " ..
  "results have shape {#x2, #x1, ...}, with \"ij\" {#x1, #x2, ...}.",
  [[local X, Y = hl.meshgrid(hl.array({1, 2, 3}), hl.array({10, 20}))
print(X, Y)
print(hl.meshgrid(hl.array({1, 2}), hl.array({5, 6, 7}), {indexing = "ij"}))]])
E("tril", "hl.tril(x [, k]) -> array   (also x:tril(k))",
  "x with the elements above diagonal k (0 the main one, positive above, negative below) zeroed, " ..
  "over the last two axes; a 1-D x becomes a square first, as NumPy.",
  [[local x = hl.ones({3, 3})
print(hl.tril(x), hl.tril(x, -1))]])
E("triu", "hl.triu(x [, k]) -> array   (also x:triu(k))",
  "x with the elements below diagonal k (0 the main one, positive above, negative below) zeroed, " ..
  "over the last two axes.",
  [[print(hl.triu(hl.ones({3, 3})), hl.triu(hl.ones({2, 3}), 1))]])
E("tensordot", "hl.tensordot(a, b [, axes]) -> array",
  "Sums products over pairs of axes: axes a count N (a's last N axes with b's first N, default 2) " ..
  "or a pair of lists {{a's axes}, {b's axes}} (1-based). The result has a's remaining axes then b's.",
  [[local a, b = hl.ones({2, 3, 4}), hl.ones({3, 4, 5})
print(hl.tensordot(a, b).shape[2], hl.tensordot(a, b, {{2}, {1}}).shape[3], hl.tensordot(hl.array({1, 2}), hl.array({3, 4}), 1))]])
E("kron", "hl.kron(a, b) -> array",
  "The Kronecker product: blocks a[i, j] * b laid out in a's pattern (shapes padded with leading " ..
  "1s to one rank).",
  [[print(hl.kron(hl.eye(2), hl.array({{1, 2}, {3, 4}})))]])
E("cross", "hl.cross(a, b [, axis]) -> array",
  "The cross product of 3-vectors along axis (default the last; the other axes broadcast). A " ..
  "2-vector is taken with z = 0; two 2-vectors give only the z component, as NumPy.",
  [[print(hl.cross(hl.array({1, 0, 0}), hl.array({0, 1, 0})), hl.cross(hl.array({1, 2}), hl.array({3, 4})))]])
E("convolve", "hl.convolve(a, v [, mode]) -> array",
  "The discrete linear convolution of two 1-D arrays: mode \"full\" (default, length n + m - 1), " ..
  "\"same\" (length max(n, m), centred as NumPy) or \"valid\" (where they overlap fully).",
  [[print(hl.convolve(hl.array({1, 2, 3}), hl.array({0, 1, 0.5})), hl.convolve(hl.array({1, 2, 3}), hl.array({1, 1}), "valid"))]])
E("correlate", "hl.correlate(a, v [, mode]) -> array",
  "The cross-correlation of two 1-D arrays, c[k] = sum over n of a[n + k] * v[n], as NumPy's: " ..
  "mode \"valid\" (default), \"same\" or \"full\".",
  [[print(hl.correlate(hl.array({1, 2, 3}), hl.array({0, 1, 0.5})), hl.correlate(hl.array({1, 2, 3}), hl.array({1, 1}), "full"))]])

G "Transformations"
E("jit", "hl.jit(f [, opts]) -> jitted function",
  "f traced once per argument signature (the tree structure, dtypes, shapes and devices of its " ..
  "array leaves, and the values of Lua numbers and static arguments) into one fused pipeline, " ..
  "compiled by Halide, cached and reused. f must be pure: inside it arrays are tracers, and Lua " ..
  "control flow on their values is an error (use hl.where, hl.cond, hl.fori_loop). Lua numbers " ..
  "passed in are static (a new value retraces); pass hl.array(v) for a traced scalar. " ..
  "opts.static_argnums = {2} makes argument 2 static (any Lua value, part of the signature); " ..
  "opts.device = \"cuda\" compiles for the GPU; opts.name names it in logs; opts.schedule = \"auto\" " ..
  "uses Halide's autoscheduler; opts.donate_argnums is accepted as JAX takes it (halua never " ..
  "overwrites an input, so it only says the caller is done with the array). " ..
  "opts.dynamic_axes = {1} compiles one program for every size of axis 1 of each array argument " ..
  "(every pytree leaf); {{1}, {}, {1, 2}} names them per argument. Inside f, x.shape holds sizes " ..
  "there: they print as b, c, ..., compute with + - * / (exact), d:floordiv(k) and %, serve as " ..
  "sizes (reshape, zeros, full, arange, broadcast_to, slices, mean's divisor, split), and a " ..
  "comparison that differs between sizes is an error (so is d:value()). Equal sizes at a call are " ..
  "one size; sizes that meet in an op must be equal. grad, vmap and compiled loops work under it " ..
  "(carries of a dynamic size, a scan along a dynamic axis), and so do complex values, FFTs and " ..
  "hl.dist's collectives. " ..
  "CUDA programs are polymorphic too. Programs that cannot serve every size (cumsum along the " ..
  "axis, schedule = \"auto\") are compiled per size, " ..
  "and HALUA_LOG_COMPILES says why (docs/dynamic_axes.md). Any other key is an " ..
  "error, and so is a static argument number past the arguments a call passes. jf:lower(...) gives the " ..
  "compiled form: :ir() (the traced program), :stmt() (Halide's loop nest), :compile_ms(), and " ..
  "for cuda :ptx() (the kernels) and :loop_ptx() (a list: those of its compiled loops). " ..
  "HALUA_LOG_COMPILES=1 prints every compile.",
  [[local f = hl.jit(function(x, y) return hl.tanh(x * y + 1):sum(1) end)
local a = hl.ones({2, 3})
print(f(a, a), f)
print(f:lower(a, a):ir())
local g = hl.jit(function(x) return hl.sum(x, 1) / x.shape[1] end, {dynamic_axes = {1}})
print(g(hl.ones({5, 2})), g(hl.ones({7, 2})))   -- one compile for both sizes]])
E("trace", "hl.trace(f, ...) -> program",
  "The program hl.jit traces for f on these arguments, printable as text (like a jaxpr); f may be " ..
  "a plain or a jitted function. Nothing runs.",
  [[print(hl.trace(function(x) return hl.exp(x) * 2 end, hl.ones(3)))]])
E("grad", "hl.grad(f [, argnums] [, opts]) -> function",
  "A function returning the gradient of f, which must return a float 0-d array (or a number), " ..
  "with respect to argument argnums (1-based, default 1; a table {1, 2} gives a table of " ..
  "gradients). Arguments may be pytrees of float arrays: the gradient has the same shape. " ..
  "opts.has_aux = true: f returns value, aux and the function returns grad, aux. Works eagerly " ..
  "(Lua control flow is followed) and under hl.jit; compose freely (hl.grad(hl.grad(f))).",
  [[local f = function(x) return (x ^ 2):sum() end
print(hl.grad(f)(hl.array({1, 2, 3})))
print(hl.grad(function(x, y) return (x * y):sum() end, {1, 2})(hl.array(2), hl.array(3))[2])]])
E("value_and_grad", "hl.value_and_grad(f [, argnums] [, opts]) -> function",
  "Like hl.grad, but the function returns f's value and the gradient (and aux with " ..
  "opts.has_aux): one forward and one backward pass.",
  [[local vg = hl.value_and_grad(function(w) return hl.sum(w * w) end)
local v, g = vg(hl.array({1, 2}))
print(v, g)]])
E("vjp", "hl.vjp(f, ...) -> out, back",
  "f's output on the arguments and a function back(ct) that returns the vector-Jacobian products: " ..
  "one cotangent per argument, for a cotangent ct shaped like out. Integer inputs get zero " ..
  "cotangents.",
  [[local out, back = hl.vjp(function(x) return hl.sin(x) end, hl.array({0, 1}))
print(out, back(hl.ones(2)))]])
E("jvp", "hl.jvp(f, primals, tangents) -> out, tangent_out",
  "Forward mode: f's output at the arguments in the list primals and the directional derivative " ..
  "along tangents (a list shaped like primals).",
  [[local y, t = hl.jvp(function(x) return x ^ 3 end, {hl.array({1, 2})}, {hl.ones(2)})
print(y, t)]])
E("jacfwd", "hl.jacfwd(f [, argnums]) -> function",
  "A function returning the Jacobian of f by forward mode (one pass per input element): the " ..
  "output's shape followed by the input's.",
  [[local J = hl.jacfwd(function(x) return x * x end)(hl.array({1, 2}))
print(J)]])
E("jacrev", "hl.jacrev(f [, argnums]) -> function",
  "A function returning the Jacobian of f by reverse mode (one pass per output element): the " ..
  "output's shape followed by the input's.",
  [[print(hl.jacrev(function(x) return hl.sin(x) end)(hl.array({0, 1})))]])
E("hessian", "hl.hessian(f [, argnums]) -> function",
  "A function returning the Hessian of a scalar f: hl.jacfwd(hl.jacrev(f)).",
  [[print(hl.hessian(function(x) return (x ^ 3):sum() end)(hl.array({1, 2})))]])
E("custom_vjp", "hl.custom_vjp(f, fwd, bwd) -> function",
  "f with a hand-written derivative: fwd(...) returns f's output and residuals; bwd(residuals, ct) " ..
  "returns one cotangent per argument of f. Reverse mode only (as in JAX); without a derivative " ..
  "being taken, f runs as is.",
  [[local f = hl.custom_vjp(function(x) return hl.sin(x) end,
                         function(x) return hl.sin(x), hl.cos(x) end,
                         function(cos_x, g) return g * cos_x end)
print(hl.grad(function(x) return f(x):sum() end)(hl.array({0, 1})))]])
E("vmap", "hl.vmap(f [, in_axes] [, out_axes]) -> function",
  "f mapped over an axis of its arguments: in_axes gives, per argument, the (1-based) axis to map " ..
  "over, or false for an argument passed whole (default 1 for every argument); out_axes places the " ..
  "mapped axis in the results (default 1).",
  [[local f = hl.vmap(function(row) return row:sum() end)
print(f(hl.ones({3, 4})))]])

G "Control flow"
E("cond", "hl.cond(pred, true_fn, false_fn, ...) -> result",
  "true_fn(...) when pred (a boolean, a number or a 0-d array) is true/nonzero, else false_fn(...). " ..
  "Outside hl.jit only the chosen branch runs; inside, both are traced and joined with hl.where, " ..
  "so both must return the same tree of shapes and dtypes.",
  [[local f = hl.jit(function(x)
  return hl.cond(x:sum():gt(0), function(v) return v * 2 end, function(v) return -v end, x)
end)
print(f(hl.array({1, 2})), f(hl.array({-1, -2})))]])
E("switch", "hl.switch(i, {fn1, fn2, ...}, ...) -> result",
  "branches[i](...) for a 1-based index i (a number or a 0-d integer array); out-of-range i " ..
  "clamps to the first or last branch. Inside hl.jit every branch is traced and chosen with where.",
  [[local fns = {function(x) return x + 1 end, function(x) return x * 10 end}
print(hl.switch(2, fns, hl.array({1, 2})))]])
E("fori_loop", "hl.fori_loop(lo, hi, body_fn, init) -> carry",
  "carry = body_fn(i, carry) for i = lo..hi, inclusive, as Lua's numeric for; i is an int32 0-d " ..
  "array, lo and hi are numbers. The carry is a pytree whose leaves keep their shapes and dtypes. " ..
  "Inside hl.jit the body is compiled once and run from C, whatever the step count (for cuda a " ..
  "GPU pipeline whose carries stay in device memory); hl.grad " ..
  "there differentiates it as a second compiled loop that runs the steps backwards.",
  [[local r = hl.fori_loop(1, 10, function(i, s) return s + i end, hl.array(0, "int32"))
print(r)   -- 1 + 2 + ... + 10]])
E("while_loop", "hl.while_loop(cond_fn, body_fn, init) -> carry",
  "carry = body_fn(carry) while cond_fn(carry) is true (a boolean or a 0-d array). The carry keeps " ..
  "its tree, shapes and dtypes. Inside hl.jit it is compiled; its steps cannot be differentiated " ..
  "there (use fori_loop or scan).",
  [[local r = hl.while_loop(function(c) return c:lt(100) end, function(c) return c * 2 end, hl.array(1))
print(r)]])
E("scan", "hl.scan(f, init, xs) -> carry, ys",
  "Runs carry, y = f(carry, x) for each x along the first axis of xs (a pytree of arrays), " ..
  "returning the last carry and the ys stacked along a new first axis. Inside hl.jit it is " ..
  "compiled like fori_loop, and so is its reverse-mode derivative.",
  [[local total, partial = hl.scan(function(c, row) return c + row, c end, hl.zeros(2), hl.ones({3, 2}))
print(total, partial)]])

---------------------------------------------------------------- pytrees, random

G "lax (hl.lax)"
E("lax.associative_scan", "hl.lax.associative_scan(fn, elems [, {axis = 1, reverse = false}]) -> tree   (also hl.associative_scan)",
  "The inclusive scan of elems (an array or a pytree of arrays, all of one extent along axis) under " ..
  "fn(a, b), an associative function of two trees of elems' structure that returns one: the result's " ..
  "entry i is fn applied over entries 1..i, as jax.lax.associative_scan. Work-efficient: O(n) calls " ..
  "of fn over log2(n) levels of batched slices, so it runs under jit, grad and vmap. axis is " ..
  "1-based (negative from the end); reverse scans from the end (fn then gets the later entry first).",
  [[local x = hl.array({1, 2, 3, 4, 5})
print(hl.lax.associative_scan(hl.add, x), hl.lax.associative_scan(hl.maximum, hl.array({1, 3, 2}), {reverse = true}))
-- a pytree: running sums and products together
local r = hl.lax.associative_scan(function(a, b) return {a[1] + b[1], a[2] * b[2]} end, {x, x})
print(r[1], r[2])]])
alias("associative_scan", "lax.associative_scan")
E("lax.cummax", "hl.cummax(x [, axis] [, reverse]) -> array   (also hl.lax.cummax, x:cummax(axis))",
  "The running maximum along axis (1-based, default 1): NumPy's np.maximum.accumulate and " ..
  "jax.lax.cummax (reverse = true runs from the end). NaN propagates. Built on associative_scan; " ..
  "the gradient goes to the entry that is the running maximum.",
  [[print(hl.cummax(hl.array({1, 3, 2, 5, 4})), hl.cummax(hl.array({{1, 4}, {3, 2}}), 2))]])
alias("cummax", "lax.cummax")
E("lax.cummin", "hl.cummin(x [, axis] [, reverse]) -> array   (also hl.lax.cummin, x:cummin(axis))",
  "The running minimum along axis (1-based, default 1): np.minimum.accumulate, jax.lax.cummin.",
  [[print(hl.cummin(hl.array({5, 3, 4, 1, 2})), hl.cummin(hl.array({5, 3, 4}), 1, true))]])
alias("cummin", "lax.cummin")
E("lax.reduce_window", "hl.lax.reduce_window(x, init, op, window_dims [, strides] [, padding] [, base_dilation] [, window_dilation]) -> array",
  "Reduces every window of x (extents window_dims, one per axis, moved by strides, default 1) with op: " ..
  "\"sum\", \"max\", \"min\" or a function of two arrays (associative and commutative), starting from " ..
  "init (a number; nil for sum, max, min, hl.add, hl.maximum, hl.minimum gives their identity), which also fills the padding. padding " ..
  "is \"VALID\" (default: no padding), \"SAME\" (output extent ceil(n / stride), as JAX pads) or a " ..
  "table of {lo, hi} pairs per axis. window_dilation spaces the window's taps; base_dilation puts " ..
  "holes of init between the entries of x first (SAME then pads the dilated shape). " ..
  "As jax.lax.reduce_window: pooling of any rank, with gradients and vmap.",
  [[local x = hl.arange(16):reshape({4, 4})
print(hl.lax.reduce_window(x, 0, "sum", {2, 2}))                      -- sliding 2x2 sums
print(hl.lax.reduce_window(x, nil, "max", {2, 2}, {2, 2}))            -- 2x2 max pooling
print(hl.lax.reduce_window(x, 0, hl.add, {3, 3}, {1, 1}, "SAME"))]])
alias("reduce_window", "lax.reduce_window")
E("lax.top_k", "hl.lax.top_k(x, k) -> values, indices   (also hl.top_k, x:top_k(k))",
  "The k largest entries along the last axis, largest first (ties in index order, NaN as the " ..
  "largest), and their 1-based int64 indices, as jax.lax.top_k. The gradient flows to the chosen entries.",
  [[local v, i = hl.lax.top_k(hl.array({{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3}}), 2)
print(v, i)]])
alias("top_k", "lax.top_k")
E("checkpoint", "hl.checkpoint(f) -> function   (also hl.remat, hl.lax.checkpoint)",
  "f, rematerialised under differentiation: the values f computes in between are not kept for the " ..
  "backward pass (on the tape of hl.grad they are never recorded) but computed again when the " ..
  "backward pass reaches f, trading compute for memory as jax.checkpoint does. Gradients equal " ..
  "those of f, also under jit, vmap, jvp and for higher orders. Differentiate through f's arguments: " ..
  "a value being differentiated that f only closes over is an error (wrap it in hl.stop_gradient or " ..
  "pass it as an argument); arguments that are not arrays (strings, functions) reach f unchanged.",
  [[local block = hl.checkpoint(function(x) return hl.tanh(hl.sin(x) * 2) end)
print(hl.grad(function(x) return block(block(x)):sum() end)(hl.array({0.1, 0.2})))]])
alias("remat", "checkpoint")
alias("lax.checkpoint", "checkpoint")
alias("lax.remat", "checkpoint")
alias("lax.cond", "cond")
alias("lax.switch", "switch")
alias("lax.fori_loop", "fori_loop")
alias("lax.while_loop", "while_loop")
alias("lax.scan", "scan")
alias("lax.stop_gradient", "stop_gradient")
alias("lax.dynamic_slice", "dynamic_slice")
alias("lax.dynamic_update_slice", "dynamic_update_slice")

G "Pytrees (hl.tree)"
E("tree.map", "hl.tree.map(f, tree, ...) -> tree",
  "A tree of the same structure with f applied to each leaf (and the matching leaves of the other " ..
  "trees, which must have the same structure). Trees are nested Lua tables: the array part, then " ..
  "string keys in sorted order; leaves are anything else.",
  [[local p = {w = hl.ones(2), b = hl.zeros(1)}
print(hl.tree.map(function(a) return a * 3 end, p).w)]])
E("tree.leaves", "hl.tree.leaves(tree) -> {leaves}",
  "The leaves of tree in order: the array part first, then string keys in sorted order.",
  [[local leaves = hl.tree.leaves({hl.ones(1), {b = 2, a = 3}})
print(#leaves, leaves[2], leaves[3])]])
E("tree.flatten", "hl.tree.flatten(tree) -> leaves, def",
  "The leaves in order and def, a string describing the structure (usable as a cache key); " ..
  "hl.tree.unflatten(def, leaves) rebuilds the tree.",
  [[local leaves, def = hl.tree.flatten({x = 1, y = {2, 3}})
print(#leaves, def)]])
E("tree.match", "hl.tree.match(def, tree [, out]) -> leaves or nil",
  "The leaves of tree in hl.tree.flatten's order, appended to out (a new list without it), when " ..
  "tree has the structure def describes (from hl.tree.flatten): the same keys and array lengths " ..
  "at every level. nil (out unchanged) otherwise. Cheaper than flattening and comparing defs: no " ..
  "key sorting and no strings; hl.jit checks each call's tables this way.",
  [[local _, def = hl.tree.flatten({w = hl.ones(2), b = 0})
print(#hl.tree.match(def, {w = hl.zeros(2), b = 1}), hl.tree.match(def, {w = 1}))]])
E("tree.unflatten", "hl.tree.unflatten(def, leaves) -> tree",
  "The tree described by def (from hl.tree.flatten) with the given leaves in order.",
  [[local leaves, def = hl.tree.flatten({x = 1, y = {2, 3}})
print(hl.tree.unflatten(def, {10, 20, 30}).y[2])]])

G "Random numbers (hl.random)"
E("random.key", "hl.random.key(seed) -> key",
  "A key from an integer seed (|seed| < 2^53): an int64[2] array of two 32-bit words, derived as " ..
  "JAX derives them. Keys are values: the same key gives the same numbers; use split or fold_in " ..
  "to make new ones.",
  [[print(hl.random.key(42))]])
E("random.split", "hl.random.split(key [, n]) -> int64[n, 2] array",
  "n (default 2) new independent keys from key, as the rows of an array: split(key)[1] is the " ..
  "first. Same results as jax.random.split.",
  [[local keys = hl.random.split(hl.random.key(0), 3)
print(keys[1], keys.shape[1])]])
E("random.fold_in", "hl.random.fold_in(key, i) -> key",
  "A new key from key and an integer i (a number or integer array): different i give independent " ..
  "keys, e.g. one per step.",
  [[print(hl.random.fold_in(hl.random.key(0), 7))]])
E("random.uniform", "hl.random.uniform(key, shape [, dtype] [, lo, hi]) -> array",
  "Uniform numbers in [lo, hi) (default [0, 1)) with shape (a table or a number); dtype float32 " ..
  "(24 random bits) or float64 (53 bits).",
  [[local k = hl.random.key(1)
print(hl.random.uniform(k, {3}), hl.random.uniform(k, 2, -1, 1))]])
E("random.normal", "hl.random.normal(key, shape [, dtype]) -> array",
  "Standard normal numbers (mean 0, standard deviation 1; Box-Muller) with shape; dtype float32 " ..
  "or float64. Scale and shift for others: mu + sigma * normal(...).",
  [[print(hl.random.normal(hl.random.key(2), {2, 2}))]])
E("random.bernoulli", "hl.random.bernoulli(key [, p] [, shape]) -> bool array",
  "true with probability p (default 0.5; a number or an array broadcast to shape), with shape " ..
  "(default p's shape).",
  [[print(hl.random.bernoulli(hl.random.key(3), 0.9, {5}))]])
E("random.randint", "hl.random.randint(key, shape, lo, hi [, dtype]) -> array",
  "Uniform integers in [lo, hi): hi is excluded, as in NumPy and JAX; dtype defaults to int32.",
  [[print(hl.random.randint(hl.random.key(4), {5}, 1, 7))   -- dice rolls]])
E("random.categorical", "hl.random.categorical(key, logits [, axis] [, shape]) -> int64 array",
  "Samples 1-based categories with probabilities softmax(logits) along axis (default -1, the last): " ..
  "logits's shape without that axis, or shape when given (logits's other axes broadcast to it, as " ..
  "in JAX: hl.random.categorical(key, logits, -1, {1000}) draws 1000 samples of one distribution).",
  [[local logits = hl.log(hl.array({0.1, 0.2, 0.7}))
print(hl.random.categorical(hl.random.key(5), logits))]])
E("random.permutation", "hl.random.permutation(key, n_or_x [, axis]) -> array",
  "The numbers 1..n in a random order (int64[n]); given an array x, x with its entries along axis " ..
  "(default 1) in a random order.",
  [[print(hl.random.permutation(hl.random.key(6), 5), hl.random.permutation(hl.random.key(6), hl.eye(3)))]])
E("random.choice", "hl.random.choice(key, a, shape [, {replace = true, p = probs, axis = 1}]) -> array",
  "Samples with shape (default {}: one) from 1..a when a is a number (1-based, as halua's indices; " ..
  "int64) or from a's entries along axis when a is an array (the result's axis is replaced by shape). " ..
  "p gives the probabilities of the a choices (need not be normalised); replace = false draws distinct " ..
  "choices (Gumbel top-k when p is given), at most a of them.",
  [[local k = hl.random.key(7)
print(hl.random.choice(k, 6, {4}), hl.random.choice(k, 5, {5}, {replace = false}))
print(hl.random.choice(k, hl.array({10, 20, 30}), {2}, {p = hl.array({0.1, 0.1, 0.8})}))]])
E("random.gamma", "hl.random.gamma(key, a [, shape] [, dtype]) -> array",
  "Gamma(a, 1) samples (mean a, variance a) with shape (default a's shape); a is a positive number or " ..
  "an array broadcast to shape. Marsaglia-Tsang with the boost u^(1/a) for a < 1, vectorised: 16 " ..
  "candidates per sample, the first accepted kept (all are rejected with probability below 1e-20). " ..
  "dtype float32 (default) or float64. Divide by a rate for Gamma(a, rate). Differentiable in a " ..
  "(hl.grad, jvp, under jit and vmap) by the implicit derivative dx/da = -(dP(a, x)/da) / pdf(x) " ..
  "(JAX's random_gamma_grad): first derivatives only (a second derivative in a is an error, as in JAX).",
  [[print(hl.random.gamma(hl.random.key(1), 2.5, {4}), hl.random.gamma(hl.random.key(1), hl.array({0.5, 5})))]])
E("random.beta", "hl.random.beta(key, a, b [, shape] [, dtype]) -> array",
  "Beta(a, b) samples in [0, 1] from two gamma samples X / (X + Y), taken in logs so that small a " ..
  "and b stay exact; a and b are positive numbers or arrays broadcast to shape. Differentiable in " ..
  "a and b through the gammas' implicit derivative (see hl.random.gamma).",
  [[print(hl.random.beta(hl.random.key(2), 2, 5, {4}))]])
E("random.dirichlet", "hl.random.dirichlet(key, alpha [, shape] [, dtype]) -> array",
  "Dirichlet(alpha) samples: alpha's last axis holds the K concentrations; the result has shape " ..
  "shape .. {K} (default alpha's shape) and sums to 1 along its last axis (normalised gammas). " ..
  "Differentiable in alpha through the gammas' implicit derivative (see hl.random.gamma).",
  [[print(hl.random.dirichlet(hl.random.key(3), hl.array({1, 2, 3}), {2}))]])
E("random.truncated_normal", "hl.random.truncated_normal(key, lower, upper [, shape] [, dtype]) -> array",
  "Standard normal samples conditioned on lower <= x <= upper (numbers or arrays broadcast to shape; " ..
  "infinite bounds allowed, also far in a tail), by the inverse CDF computed in float64 on the side " ..
  "of 0 where the CDF is precise (a continued fraction below -3), then clipped into the bounds.",
  [[print(hl.random.truncated_normal(hl.random.key(4), -1, 2, {5}))]])
E("random.poisson", "hl.random.poisson(key, lam [, shape] [, dtype]) -> array",
  "Poisson(lam) counts (int32 by default; int64, float32, float64) with shape (default lam's shape); " ..
  "lam >= 0, a number or an array. Knuth's product of uniforms for lam < 10 (48 draws), Hormann's " ..
  "transformed rejection for larger lam (16 candidates, the first accepted kept), as NumPy and JAX.",
  [[print(hl.random.poisson(hl.random.key(5), 3, {6}), hl.random.poisson(hl.random.key(5), hl.array({0.5, 100})))]])
alias("random.randn", "random.normal")
alias("random.rand", "random.uniform")
E("random.bits", "hl.random.bits(key, shape) -> int64 array",
  "Raw random 32-bit words (0 .. 2^32 - 1, in an int64 array) with shape, as jax.random.bits orders " ..
  "them. The other samplers are built on these.",
  [[print(hl.random.bits(hl.random.key(0), {2}))]])
E("random.threefry2x32", "hl.random.threefry2x32(key, x0, x1) -> y0, y1",
  "The Threefry-2x32 block function (20 rounds) of the counter words x0, x1 (int64 arrays of " ..
  "32-bit values) under key: the two result words, as Random123 and JAX define it.",
  [[local k = hl.random.key(0)
print(hl.random.threefry2x32(k, hl.array({0}, "int64"), hl.array({1}, "int64")))]])
E("random.check_key", "hl.random.check_key(op, key) -> {k0, k1}",
  "Checks that key is a key (an int64[2] array) and returns its two words; otherwise raises the " ..
  "error \"halua: random.<op>: expected a key ...\". For code building its own samplers.",
  [[local k = hl.random.check_key("mysampler", hl.random.key(9))
print(k[1], k[2], pcall(hl.random.check_key, "mysampler", 5))]])

---------------------------------------------------------------- neural networks, optimizers

G "Neural networks (hl.nn)"
E("nn.softmax", "hl.nn.softmax(x [, axis]) -> array   (also hl.softmax, x:softmax(axis))",
  "exp(x) normalised to sum to 1 along axis (1-based, default -1, the last), computed stably " ..
  "(the maximum subtracted first).",
  [[print(hl.nn.softmax(hl.array({1, 2, 3})), hl.nn.softmax(hl.zeros({2, 2}), 1))]])
alias("softmax", "nn.softmax")
E("nn.log_softmax", "hl.nn.log_softmax(x [, axis]) -> array",
  "log(softmax(x)) along axis (default -1), computed stably as x - logsumexp(x, axis).",
  [[print(hl.nn.log_softmax(hl.array({1, 2, 3})))]])
E("nn.relu", "hl.nn.relu(x) -> array   (also x:relu())",
  "The activation max(x, 0), elementwise; its derivative is 0 for x <= 0.",
  [[print(hl.nn.relu(hl.array({-1, 0, 2})))]])
E("nn.gelu", "hl.nn.gelu(x [, approximate]) -> array   (also x:gelu())",
  "The Gaussian error linear unit x * Phi(x), elementwise: exact (through erf) by default, as " ..
  "PyTorch; approximate = true uses the tanh approximation.",
  [[print(hl.nn.gelu(hl.array({-1, 0, 2})), hl.nn.gelu(hl.array({1}), true))]])
E("nn.sigmoid", "hl.nn.sigmoid(x) -> array   (also x:sigmoid())",
  "The logistic function 1 / (1 + exp(-x)), elementwise, computed through tanh so it neither " ..
  "overflows nor gives a NaN gradient for large |x|.",
  [[print(hl.nn.sigmoid(hl.array({-100, 0, 2})))]])
E("nn.softplus", "hl.nn.softplus(x) -> array   (also x:softplus())",
  "log(1 + exp(x)) elementwise, a smooth relu, computed without overflow as " ..
  "max(x, 0) + log1p(exp(-|x|)).",
  [[print(hl.nn.softplus(hl.array({-1, 0, 100})))]])
E("nn.silu", "hl.nn.silu(x) -> array   (also x:silu())",
  "x * sigmoid(x) elementwise (also called swish).",
  [[print(hl.nn.silu(hl.array({-1, 0, 2})))]])
E("nn.conv2d", "hl.nn.conv2d(x, w [, opts]) -> array",
  "2-D convolution (cross-correlation, as PyTorch and JAX compute it) of images x [N, C, H, W] " ..
  "with filters w [O, C / groups, kh, kw], giving [N, O, H', W']. opts.stride and opts.dilation " ..
  "are a number or {h, w} (default 1); opts.padding (zeros) is a number, {h, w}, {{lo, hi}, {lo, hi}}, " ..
  "\"valid\" (none, the default) or \"same\" (H' = ceil(H / stride), the odd pixel on the high side); " ..
  "opts.groups splits the channels into groups convolved separately (groups = C: depthwise); " ..
  "opts.bias is an array of O values added per output channel. Runs as one matmul over the windows " ..
  "(im2col); see hl.nn.conv for 1 to 3 spatial axes.",
  [[local x = hl.arange(16):astype("float32"):reshape({1, 1, 4, 4})
local y = hl.nn.conv2d(x, hl.ones({2, 1, 3, 3}), {padding = 1, bias = hl.array({0, 100})})
print(y.shape[2], y.shape[3], y[{1, 1, 1}])]])
E("nn.conv", "hl.nn.conv(x, w [, opts]) -> array",
  "Convolution with 1, 2 or 3 spatial axes, their number taken from the weights: x [N, C, spatial...], " ..
  "w [O, C / groups, k...] -> [N, O, spatial'...]. The options are conv2d's (stride, padding, " ..
  "dilation, groups, bias), each per-axis value given once per spatial axis. conv1d, conv2d and " ..
  "conv3d are this with the rank checked.",
  [[local y = hl.nn.conv(hl.ones({1, 2, 8}), hl.ones({4, 2, 3}), {stride = 2, padding = "same"})
print(y.shape)]])
E("nn.conv1d", "hl.nn.conv1d(x, w [, opts]) -> array",
  "1-D convolution of x [N, C, W] with w [O, C / groups, kw] -> [N, O, W']; options as conv2d, per-axis " ..
  "values a number or {w}, and padding also {lo, hi}.",
  [[print(hl.nn.conv1d(hl.arange(6):astype("float32"):reshape({1, 1, 6}), hl.ones({1, 1, 2}), {dilation = 2}))]])
E("nn.conv3d", "hl.nn.conv3d(x, w [, opts]) -> array",
  "3-D convolution of volumes x [N, C, D, H, W] with w [O, C / groups, kd, kh, kw] -> [N, O, D', H', W']; " ..
  "options as conv2d, per-axis values a number or {d, h, w}.",
  [[print(hl.nn.conv3d(hl.ones({1, 1, 4, 4, 4}), hl.ones({2, 1, 2, 2, 2}), {stride = 2}).shape)]])
E("nn.conv_transpose", "hl.nn.conv_transpose(x, w [, opts]) -> array",
  "Transposed convolution as PyTorch's ConvTranspose1d/2d/3d define it (the gradient of a " ..
  "convolution with respect to its input), spatial axes from the weights: x [N, C, spatial...], " ..
  "w [C, O / groups, k...] -> [N, O, spatial'...], each output extent (L - 1) * stride - 2 * padding + " ..
  "dilation * (k - 1) + output_padding + 1. opts: stride, padding, output_padding (each smaller than " ..
  "the stride or the dilation), dilation (numbers or one per axis), groups, bias [O].",
  [[local y = hl.nn.conv_transpose(hl.ones({1, 1, 3}), hl.ones({1, 1, 2}), {stride = 2})
print(y)]])
E("nn.conv_transpose1d", "hl.nn.conv_transpose1d(x, w [, opts]) -> array",
  "hl.nn.conv_transpose with one spatial axis: x [N, C, W], w [C, O / groups, kw].",
  [[print(hl.nn.conv_transpose1d(hl.ones({1, 2, 4}), hl.ones({2, 3, 3}), {stride = 2, padding = 1, output_padding = 1}).shape)]])
E("nn.conv_transpose2d", "hl.nn.conv_transpose2d(x, w [, opts]) -> array",
  "hl.nn.conv_transpose with two spatial axes: x [N, C, H, W], w [C, O / groups, kh, kw]; upsamples " ..
  "by the stride.",
  [[print(hl.nn.conv_transpose2d(hl.ones({1, 4, 5, 5}), hl.ones({4, 2, 4, 4}), {stride = 2, padding = 1}).shape)]])
E("nn.conv_transpose3d", "hl.nn.conv_transpose3d(x, w [, opts]) -> array",
  "hl.nn.conv_transpose with three spatial axes: x [N, C, D, H, W], w [C, O / groups, kd, kh, kw].",
  [[print(hl.nn.conv_transpose3d(hl.ones({1, 1, 2, 2, 2}), hl.ones({1, 1, 2, 2, 2}), {stride = 2}).shape)]])
E("nn.max_pool2d", "hl.nn.max_pool2d(x, size [, opts]) -> array",
  "The maximum over windows of size (a number or {h, w}) of images x [N, C, H, W]. opts.stride " ..
  "defaults to the window size; opts.padding (a number or {h, w}) pads with -inf.",
  [[local x = hl.arange(16):astype("float32"):reshape({1, 1, 4, 4})
print(hl.nn.max_pool2d(x, 2))]])
E("nn.avg_pool2d", "hl.nn.avg_pool2d(x, size [, opts]) -> array",
  "The mean over windows of size (a number or {h, w}) of images x [N, C, H, W]. opts.stride " ..
  "defaults to the window size; with opts.padding the padding zeros count in the average " ..
  "(PyTorch's default).",
  [[print(hl.nn.avg_pool2d(hl.ones({1, 1, 4, 4}), 2))]])
E("nn.layer_norm", "hl.nn.layer_norm(x [, gamma [, beta]] [, opts]) -> array",
  "(x - mean) / sqrt(var + eps) * gamma + beta, the mean and (biased) variance over opts.axis (a " ..
  "number or a list, default -1: the features), as PyTorch's LayerNorm and Flax's. gamma and beta " ..
  "have the normalised axes' shape (or broadcast to x); either may be nil. opts.eps defaults to 1e-5.",
  [[print(hl.nn.layer_norm(hl.array({{1, 2, 3}, {2, 4, 9}}), hl.ones(3), hl.zeros(3)))]])
E("nn.rms_norm", "hl.nn.rms_norm(x [, gamma] [, opts]) -> array",
  "x / sqrt(mean(x^2) + eps) * gamma over opts.axis (default -1); gamma of the normalised axes' shape " ..
  "or nil; opts.eps defaults to 1e-6 (Flax's RMSNorm).",
  [[print(hl.nn.rms_norm(hl.array({{3, 4}, {1, 1}})))]])
E("nn.batch_norm", "hl.nn.batch_norm(x, gamma, beta, state [, opts]) -> y, new_state",
  "Batch normalisation over every axis but the feature axis opts.axis (default 2, the channels of " ..
  "[N, C, ...] as PyTorch's BatchNorm1d/2d/3d; -1 for features last as Flax). state = {mean =, var =} " ..
  "holds the running statistics, one value per feature (nil: zeros and ones); gamma and beta may be " ..
  "nil. With opts.train (default true) x is normalised by the batch's mean and biased variance and " ..
  "new_state = (1 - momentum) * state + momentum * batch statistics (the variance unbiased; momentum " ..
  "0.1; PyTorch's conventions, no gradient through the statistics kept); with train = false x is " ..
  "normalised by state, returned unchanged. opts.eps defaults to 1e-5. A pure function: carry the " ..
  "state through the training step like the optimizer's.",
  [[local x = hl.array({{1, 10}, {3, 30}})
local y, st = hl.nn.batch_norm(x, nil, nil, nil)
print(y, st.mean)
print((hl.nn.batch_norm(x, nil, nil, st, {train = false})))]])
E("nn.embedding", "hl.nn.embedding(table, ids) -> array",
  "The rows of table [vocab, dim] at the 1-based integer ids (any shape), giving ids' shape + [dim]. " ..
  "One gather: the gradient with respect to the table is a scatter-add of the cotangents into the " ..
  "rows that were read. Concrete ids outside 1..vocab are an error.",
  [[print(hl.nn.embedding(hl.array({{0, 0}, {1, 1}, {2, 2}}), hl.array({3, 1}, "int32")))]])
E("nn.dot_product_attention", "hl.nn.dot_product_attention(q, k, v [, opts]) -> array",
  "softmax(q k^T * scale + bias) v per head, as jax.nn.dot_product_attention: q [batch..., T, N, H], " ..
  "k and v [batch..., S, K, H] (the same batch axes, or none) -> [batch..., T, N, H]; N a multiple of K " ..
  "(grouped-query attention: each key/value head serves N / K query heads). opts.scale (default " ..
  "1 / sqrt(H)); opts.bias added to the logits and opts.mask (bool, true = attend), each broadcast " ..
  "to [batch..., N, T, S]; opts.causal (or is_causal) lets query t attend to keys 1..t. A query whose " ..
  "keys are all masked gets uniform weights (as JAX), not NaN.",
  [[local q = hl.random.normal(hl.random.key(0), {1, 4, 2, 8})
print(hl.nn.dot_product_attention(q, q, q, {causal = true}).shape)]])
E("nn.lstm_cell", "hl.nn.lstm_cell(params, carry, x) -> new_carry, h",
  "One step of PyTorch's LSTMCell: gates i, f, g, o = split(x w_ih^T + b_ih + h w_hh^T + b_hh), " ..
  "c' = sigmoid(f) c + sigmoid(i) tanh(g), h' = sigmoid(o) tanh(c'). params {w_ih [4H, I], " ..
  "w_hh [4H, H], b_ih [4H], b_hh [4H]} (hl.nn.init.lstm); carry {h =, c =} each [B, H] for x [B, I] " ..
  "(or [H] for x [I]). Returns the new carry and h', the form hl.scan(f, init, xs) runs over a sequence.",
  [[local p = hl.nn.init.lstm(hl.random.key(0), 3, 4)
local c0 = {h = hl.zeros({2, 4}), c = hl.zeros({2, 4})}
local last, hs = hl.scan(function(c, x) return hl.nn.lstm_cell(p, c, x) end, c0, hl.ones({5, 2, 3}))
print(hs.shape, last.c.shape)]])
E("nn.gru_cell", "hl.nn.gru_cell(params, h, x) -> new_h, new_h",
  "One step of PyTorch's GRUCell: r = sigmoid(x w_ir + b_ir + h w_hr + b_hr), z likewise, " ..
  "n = tanh(x w_in + b_in + r (h w_hn + b_hn)), h' = (1 - z) n + z h, the gates stacked r, z, n in " ..
  "params {w_ih [3H, I], w_hh [3H, H], b_ih [3H], b_hh [3H]} (hl.nn.init.gru). Returns h' twice, " ..
  "the carry and the output of an hl.scan step.",
  [[local p = hl.nn.init.gru(hl.random.key(0), 3, 4)
local h, hs = hl.scan(function(h, x) return hl.nn.gru_cell(p, h, x) end, hl.zeros(4), hl.ones({6, 3}))
print(h)]])
E("nn.dropout", "hl.nn.dropout(key, x, rate) -> array",
  "x with each element zeroed with probability rate (in [0, 1)) and the others scaled by " ..
  "1 / (1 - rate), so the expectation is unchanged; drawn from the random key. rate 0 returns x.",
  [[print(hl.nn.dropout(hl.random.key(0), hl.ones(6), 0.5))]])
E("nn.cross_entropy", "hl.nn.cross_entropy(logits, labels) -> 0-d array",
  "The mean over examples of -log softmax(logits)[label], classes along the last axis. labels are " ..
  "1-based integer class indices with logits' shape less the last axis, or float probabilities " ..
  "with logits' shape (e.g. one-hot rows). A label outside 1..classes is an error where the labels " ..
  "are concrete; under jit, where they are traced and cannot be checked until the pipeline runs, " ..
  "such a row's loss is NaN, so the result is NaN.",
  [[local logits = hl.array({{2, 0, 0}, {0, 0, 3}})
print(hl.nn.cross_entropy(logits, hl.array({1, 3}, "int32")),
      hl.nn.cross_entropy(logits, hl.one_hot(hl.array({1, 3}, "int32"), 3)))]])
E("nn.mse", "hl.nn.mse(pred, target) -> 0-d array",
  "The mean squared error mean((pred - target)^2), broadcasting like any binary op.",
  [[print(hl.nn.mse(hl.array({1, 2}), hl.array({1, 4})))]])
E("nn.init.glorot", "hl.nn.init.glorot(key, shape [, dtype]) -> array",
  "Glorot (Xavier) uniform initial weights on +-sqrt(6 / (fan_in + fan_out)): the fans are " ..
  "(in, out) for a matmul weight of shape {in, out}, (in * k, out * k) for a convolution weight " ..
  "{out, in, kh, kw} (k = kh * kw). dtype defaults to float32.",
  [[print(hl.nn.init.glorot(hl.random.key(0), {3, 2}))]])
E("nn.init.normal", "hl.nn.init.normal(key, shape [, stddev] [, dtype]) -> array",
  "Initial weights drawn from a normal distribution with mean 0 and standard deviation stddev " ..
  "(default 0.01). dtype defaults to float32.",
  [[print(hl.nn.init.normal(hl.random.key(0), {2, 2}, 0.1))]])
E("nn.init.lstm", "hl.nn.init.lstm(key, input, hidden [, dtype]) -> params",
  "Parameters for hl.nn.lstm_cell, initialised as PyTorch's LSTMCell: {w_ih [4 hidden, input], " ..
  "w_hh [4 hidden, hidden], b_ih, b_hh [4 hidden]}, each uniform on +-1/sqrt(hidden).",
  [[print(hl.nn.init.lstm(hl.random.key(0), 3, 2).w_ih.shape)]])
E("nn.init.gru", "hl.nn.init.gru(key, input, hidden [, dtype]) -> params",
  "Parameters for hl.nn.gru_cell, initialised as PyTorch's GRUCell: {w_ih [3 hidden, input], " ..
  "w_hh [3 hidden, hidden], b_ih, b_hh [3 hidden]}, each uniform on +-1/sqrt(hidden).",
  [[print(hl.nn.init.gru(hl.random.key(0), 3, 2).w_hh.shape)]])

G "Optimizers (hl.optim)"
E("optim.sgd", "hl.optim.sgd(lr [, momentum] [, opts]) -> opt   (opt.init, opt.update)",
  "Stochastic gradient descent over pytrees of parameters: state = opt.init(params); then " ..
  "params, state = opt.update(grads, state, params) takes one step, p - lr * v with " ..
  "v = momentum * v + g (PyTorch's form; plain p - lr * g without momentum). opts.nesterov = true " ..
  "steps by g + momentum * v; opts.weight_decay adds weight_decay * p to each gradient (PyTorch's " ..
  "SGD). lr is a positive number or a schedule (a function of the step count, e.g. " ..
  "hl.optim.cosine_decay). Pure, so a whole training step can run inside hl.jit.",
  [[local opt = hl.optim.sgd(0.1, 0.9)
local params = {w = hl.ones(2)}
local state = opt.init(params)
params, state = opt.update({w = hl.ones(2)}, state, params)
print(params.w)]])
E("optim.adam", "hl.optim.adam(lr [, opts]) -> opt   (opt.init, opt.update)",
  "The Adam optimizer (Kingma and Ba, with bias correction) over pytrees of parameters: " ..
  "state = opt.init(params); params, state = opt.update(grads, state, params). opts.b1 (0.9), " ..
  "opts.b2 (0.999), opts.eps (1e-8); lr is a positive number or a schedule function. Pure, so it " ..
  "can run inside hl.jit.",
  [[local opt = hl.optim.adam(1e-3)
local params = {w = hl.ones(2)}
local state = opt.init(params)
params, state = opt.update({w = hl.ones(2)}, state, params)
print(params.w)]])
E("optim.adamw", "hl.optim.adamw(lr [, opts]) -> opt   (opt.init, opt.update)",
  "Adam with decoupled weight decay (Loshchilov and Hutter; optax.adamw, torch.optim.AdamW): " ..
  "p - lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * p). opts.b1, opts.b2, opts.eps as adam, " ..
  "opts.weight_decay (1e-4).",
  [[local opt = hl.optim.adamw(1e-3, {weight_decay = 0.01})
local params = {w = hl.ones(2)}
local state = opt.init(params)
params, state = opt.update({w = hl.ones(2)}, state, params)
print(params.w)]])
E("optim.rmsprop", "hl.optim.rmsprop(lr [, opts]) -> opt   (opt.init, opt.update)",
  "RMSprop as PyTorch defines it: v = decay * v + (1 - decay) * g^2, p - lr * g / (sqrt(v) + eps); " ..
  "opts.decay (0.9), opts.eps (1e-8), opts.momentum (0: with it, the steps g / (sqrt(v) + eps) " ..
  "accumulate in a velocity).",
  [[local opt = hl.optim.rmsprop(0.01)
local params = {w = hl.ones(2)}
params = opt.update({w = hl.ones(2)}, opt.init(params), params)
print(params.w)]])
E("optim.adagrad", "hl.optim.adagrad(lr [, opts]) -> opt   (opt.init, opt.update)",
  "Adagrad as PyTorch defines it: s = s + g^2, p - lr * g / (sqrt(s) + eps); opts.eps (1e-10), " ..
  "opts.initial (the accumulator's starting value, 0).",
  [[local opt = hl.optim.adagrad(0.1)
local params = {w = hl.ones(2)}
params = opt.update({w = hl.ones(2)}, opt.init(params), params)
print(params.w)]])
E("optim.clip_by_global_norm", "hl.optim.clip_by_global_norm(grads, max_norm) -> grads, norm",
  "Every leaf of the pytree grads scaled by min(1, max_norm / norm), where norm is the 2-norm of " ..
  "all the leaves together (optax.clip_by_global_norm); also returns norm. Apply it to the " ..
  "gradients before opt.update.",
  [[local g, norm = hl.optim.clip_by_global_norm({a = hl.array({3.0}), b = hl.array({4.0})}, 1)
print(g.a, g.b, norm)]])
E("optim.warmup_cosine_decay", "hl.optim.warmup_cosine_decay(peak, warmup, steps [, final]) -> schedule",
  "A schedule rising linearly from 0 to peak over the first warmup steps, then down to final " ..
  "(default 0) along half a cosine by step steps, then constant (optax.warmup_cosine_decay_schedule).",
  [[local s = hl.optim.warmup_cosine_decay(1e-3, 100, 1000)
print(s(hl.array(50, "int32")), s(hl.array(100, "int32")), s(hl.array(1000, "int32")))]])
E("optim.exponential_decay", "hl.optim.exponential_decay(lr, rate, every [, staircase]) -> schedule",
  "lr * rate ^ ((step - 1) / every): the rate multiplies the step size once every `every` steps " ..
  "(with staircase = true in whole jumps, else smoothly).",
  [[local s = hl.optim.exponential_decay(0.1, 0.5, 10, true)
print(s(hl.array(1, "int32")), s(hl.array(11, "int32")))]])
E("optim.piecewise_constant", "hl.optim.piecewise_constant(boundaries, values) -> schedule",
  "values[1] up to step boundaries[1], values[2] up to boundaries[2], ..., the last value after " ..
  "the last boundary (n boundaries, n + 1 values).",
  [[local s = hl.optim.piecewise_constant({100, 200}, {0.1, 0.01, 0.001})
print(s(hl.array(150, "int32")))]])
E("optim.cosine_decay", "hl.optim.cosine_decay(lr, steps [, final]) -> schedule",
  "A learning-rate schedule for sgd and adam: lr at step 1 down to final (default 0) at step " ..
  "steps along half a cosine, then constant. The schedule is a function of the step count (an " ..
  "int32 0-d array).",
  [[local schedule = hl.optim.cosine_decay(0.1, 100)
print(schedule(hl.array(1, "int32")), schedule(hl.array(100, "int32")))
local opt = hl.optim.sgd(schedule)]])

G "Linear algebra (hl.linalg)"
E("linalg.solve", "hl.linalg.solve(a, b) -> array",
  "x with matmul(a, x) = b, for square non-singular a [..., n, n] and b a vector [n] (or a stack " ..
  "[..., n]) or matrix [..., n, k], as numpy.linalg.solve, batched over leading axes. A singular a " ..
  "is an error eagerly and gives NaN inside hl.jit.",
  [[print(hl.linalg.solve(hl.array({{2, 0}, {0, 4}}), hl.array({2, 2})))]])
E("linalg.inv", "hl.linalg.inv(a) -> array",
  "The inverse of square non-singular matrices a [..., n, n] (solve against the identity).",
  [[print(hl.linalg.inv(hl.array({{2, 0}, {0, 4}})))]])
E("linalg.cholesky", "hl.linalg.cholesky(a) -> array",
  "The lower-triangular L with matmul(L, L.T) = a, for symmetric positive-definite a [..., n, n]; " ..
  "one that is not is an error eagerly and gives NaN inside hl.jit.",
  [[print(hl.linalg.cholesky(hl.array({{4, 2}, {2, 3}})))]])
E("linalg.qr", "hl.linalg.qr(a [, mode]) -> q, r (mode \"r\": r)",
  "The QR decomposition of matrices a [..., m, n] (LAPACK geqrf/orgqr), as numpy.linalg.qr: mode " ..
  "\"reduced\" (default: q [..., m, k], r [..., k, n], k = min(m, n)), \"complete\" (q [..., m, m], " ..
  "r [..., m, n]) or \"r\" (r alone). q has orthonormal columns, r is upper triangular, q r = a. " ..
  "Gradients as JAX defines them: for m >= n (\"complete\" only for square a).",
  [[local q, r = hl.linalg.qr(hl.array({{3, 1}, {4, 2}}))
print(q, r)
print(hl.matmul(q, r))]])
E("linalg.svd", "hl.linalg.svd(a [, full_matrices [, compute_uv]]) -> u, s, vh (or s)",
  "The singular value decomposition of matrices a [..., m, n] (LAPACK gesdd), as numpy.linalg.svd: " ..
  "u diag(s) vh = a with s descending. full_matrices (default true) gives u [..., m, m] and vh " ..
  "[..., n, n], false the reduced [..., m, k] and [..., k, n]; compute_uv = false returns s alone. " ..
  "The options also come as a table {full_matrices =, compute_uv =}. NaN or infinite values do not " ..
  "converge: an error eagerly, NaN inside hl.jit. Gradients as JAX's: of s always, of u and vh " ..
  "with full_matrices = false (or a square a); they need distinct singular values.",
  [[local u, s, vh = hl.linalg.svd(hl.array({{3, 0}, {4, 5}}), false)
print(s)
print(hl.matmul(u * s, vh))
print(hl.linalg.svd(hl.array({{3, 0}, {4, 5}}), {compute_uv = false}))]])
E("linalg.eigh", "hl.linalg.eigh(a [, UPLO]) -> w, v",
  "Eigenvalues (ascending) and eigenvectors (the columns of v) of symmetric matrices a [..., n, n] " ..
  "(LAPACK syevd), as numpy.linalg.eigh: matmul(a, v) = v * w. Only one triangle of a is read: " ..
  "UPLO \"L\" (default) the lower, \"U\" the upper; gradients fold onto that triangle. They " ..
  "need distinct eigenvalues.",
  [[local w, v = hl.linalg.eigh(hl.array({{2, 1}, {1, 2}}))
print(w, v)]])
E("linalg.eigvalsh", "hl.linalg.eigvalsh(a [, UPLO]) -> w",
  "The eigenvalues (ascending) of symmetric matrices a [..., n, n], as numpy.linalg.eigvalsh; " ..
  "UPLO as for hl.linalg.eigh.",
  [[print(hl.linalg.eigvalsh(hl.array({{2, 1}, {1, 2}})))]])
E("linalg.slogdet", "hl.linalg.slogdet(a) -> sign, logabsdet",
  "The sign (1, -1, or 0 for a singular matrix) and the natural log of the absolute value of the " ..
  "determinant of square matrices a [..., n, n] (LU, LAPACK getrf), as numpy.linalg.slogdet: " ..
  "det = sign * exp(logabsdet), without overflow. A singular a gives 0 and -inf (not an error).",
  [[local sign, logdet = hl.linalg.slogdet(hl.array({{1, 2}, {3, 4}}))
print(sign, logdet)]])
E("linalg.det", "hl.linalg.det(a) -> array",
  "The determinant of square matrices a [..., n, n], as numpy.linalg.det (the product of LU's " ..
  "pivots). Its gradient is the cofactor matrix det(a) inv(a)^T, also at singular matrices (from the " ..
  "SVD there: rank one at rank n - 1, zero below), where slogdet's log|det| has none.",
  [[print(hl.linalg.det(hl.array({{1, 2}, {3, 4}})))]])
E("linalg.pinv", "hl.linalg.pinv(a [, rcond]) -> array",
  "The Moore-Penrose pseudo-inverse [..., n, m] of matrices a [..., m, n] through the SVD, as " ..
  "numpy.linalg.pinv: singular values at most rcond (default 1e-15) times the largest count as zero.",
  [[print(hl.linalg.pinv(hl.array({{1, 2}, {2, 4}, {3, 6}})))]])
E("linalg.lstsq", "hl.linalg.lstsq(a, b [, rcond]) -> x, residuals, rank, s",
  "The least-squares solution x of a x = b for a matrix a [m, n] and b [m] or [m, k], as " ..
  "numpy.linalg.lstsq with rcond = nil (singular values at most eps * max(m, n) times the largest " ..
  "count as zero): x minimises |b - a x| with the least norm; residuals the squared norms of b - a x " ..
  "per column, empty when m <= n or the rank is below n (under hl.jit the rank is not known when " ..
  "tracing: only m <= n empties them); rank (int64) and the singular values s of a.",
  [[local x, res, rank, s = hl.linalg.lstsq(hl.array({{1, 0}, {1, 1}, {1, 2}}), hl.array({1, 2, 2}))
print(x, res, rank, s)]])
E("linalg.norm", "hl.linalg.norm(x [, ord [, axis [, keepdims]]]) -> array",
  "Vector and matrix norms, as numpy.linalg.norm; the arguments also come as a table {ord =, axis =, " ..
  "keepdims =}. axis nil: the 2-norm of all elements when ord is nil, else x must be 1-D (a vector " ..
  "norm) or 2-D (a matrix norm). An axis (1-based, negative from the end) gives vector norms: ord " ..
  "nil or 2, 1, math.huge, -math.huge, 0 (the count of non-zeros) or any p (sum |x|^p)^(1/p). Two " ..
  "axes {r, c} give matrix norms: nil or \"fro\", \"nuc\" (sum of singular values), 2 and -2 " ..
  "(largest and smallest singular value), 1 and -1 (max and min column sum of |x|), math.huge and " ..
  "-math.huge (row sums). Ints are taken as float32.",
  [[local x = hl.array({{3, 4}, {0, 1}})
print(hl.linalg.norm(x), hl.linalg.norm(x, 2), hl.linalg.norm(x, 1, 2))
print(hl.linalg.norm(x, {ord = math.huge, axis = 1, keepdims = true}))]])
E("linalg.matrix_power", "hl.linalg.matrix_power(a, n) -> array",
  "a multiplied by itself n times for square matrices a [..., n, n] and any integer n, as " ..
  "numpy.linalg.matrix_power: repeated squaring; n = 0 gives the identity (of a's dtype), a " ..
  "negative n the power of hl.linalg.inv(a).",
  [[print(hl.linalg.matrix_power(hl.array({{1, 1}, {1, 0}}, "int32"), 10))
print(hl.linalg.matrix_power(hl.array({{2, 0}, {0, 4}}), -1))]])
E("linalg.solve_triangular", "hl.linalg.solve_triangular(a, b [, {lower =, trans =, unit_diagonal =}]) -> array",
  "x with a x = b (trans 0 or \"N\", the default) or a^T x = b (1, 2, \"T\" or \"C\"), reading only " ..
  "one triangle of the square matrices a [..., n, n]: the upper (lower = false, the default, as " ..
  "scipy.linalg.solve_triangular) or the lower; unit_diagonal = true takes its diagonal as ones. b " ..
  "as for hl.linalg.solve; batched over leading axes (LAPACK trtrs, by substitution). A zero on the " ..
  "diagonal (not a unit one) is an error eagerly and NaN inside hl.jit.",
  [[local a = hl.array({{2, 0}, {1, 4}})
print(hl.linalg.solve_triangular(a, hl.array({2, 9}), {lower = true}))]])

G "Many processes over MPI (hl.dist)"
E("dist.init", "hl.dist.init() -> rank, size",
  "Joins the MPI job this process belongs to and returns its rank and the job's size. Ranks are " ..
  "1-based like every index in halua: rank() is MPI's rank + 1. Idempotent, and implicit: any hl.dist " ..
  "function starts it. A process that mpirun did not start is a job of one rank (no MPI involved). " ..
  "Run jobs as `mpirun -np N scripts/halua script.lua`: an error that escapes the script on one rank " ..
  "then ends the whole job with that rank's message. Needs Open MPI (Debian's openmpi-bin and " ..
  "libopenmpi-dev, which scripts/setup installs); without it every hl.dist function says so.",
  [[local rank, size = hl.dist.init()
print(rank, size)]])
E("dist.rank", "hl.dist.rank() -> integer",
  "This process's rank, 1..size (MPI's rank + 1).",
  [[print(hl.dist.rank())]])
E("dist.size", "hl.dist.size() -> integer",
  "The number of processes in the job (1 without mpirun).",
  [[print(hl.dist.size())]])
E("dist.barrier", "hl.dist.barrier()",
  "Waits until every rank has called it.",
  [[hl.dist.barrier()
print("every rank got here")]])
E("dist.mpi", "hl.dist.mpi() -> boolean",
  "Whether this process talks MPI (false for a job of one rank started without mpirun).",
  [[print(hl.dist.mpi())]])
E("dist.started", "hl.dist.started() -> started, rank, size",
  "Whether hl.dist has started in this process, without starting it (then 1, 1).",
  [[print(hl.dist.started())]])
E("dist.abort", "hl.dist.abort([message [, code]])",
  "Writes message to stderr and ends the whole job (MPI_Abort) with exit code code (default 1). " ..
  "scripts/halua calls it when an error escapes a rank's script.",
  [[-- hl.dist.abort("halua: giving up")   (ends the process)
print(type(hl.dist.abort))]])
E("dist.psum", "hl.dist.psum(x) -> array (or pytree)",
  "The elementwise sum of x over all ranks, on every rank (MPI allreduce). x may be a pytree of " ..
  "arrays. float16 and bfloat16 are summed in float32; bools are counted in int32. Every rank must " ..
  "pass the same dtype and shape, and make its collective calls in the same order as the others: " ..
  "a mismatch is an error on every rank naming both ranks' operands. Works eagerly and inside " ..
  "hl.jit (an extern stage of the pipeline); its gradient is psum of the cotangent (JAX's " ..
  "convention: the gradient of the sum of every rank's loss); hl.vmap batches it.",
  [[print(hl.dist.psum(hl.array({1, 2, 3})))   -- x times the number of ranks]])
E("dist.pmean", "hl.dist.pmean(x) -> array (or pytree)",
  "The elementwise mean over ranks (psum / size); integers give float32.",
  [[print(hl.dist.pmean(hl.array({1, 2})))]])
E("dist.pmax", "hl.dist.pmax(x) -> array (or pytree)",
  "The elementwise maximum over ranks, on every rank. Its derivative goes to the ranks holding the " ..
  "maximum (shared equally among ties).",
  [[print(hl.dist.pmax(hl.array({1, 5})))]])
E("dist.pmin", "hl.dist.pmin(x) -> array (or pytree)",
  "The elementwise minimum over ranks, on every rank.",
  [[print(hl.dist.pmin(hl.array({1, 5})))]])
E("dist.broadcast", "hl.dist.broadcast(x [, root]) -> array (or pytree)",
  "Rank root's x (default 1) on every rank. Its gradient sums every rank's cotangent onto root " ..
  "(zeros elsewhere).",
  [[print(hl.dist.broadcast(hl.array({hl.dist.rank()}), 1))]])
E("dist.all_gather", "hl.dist.all_gather(x [, axis]) -> array",
  "Every rank's x concatenated along axis (default 1) in rank order, on every rank (JAX's " ..
  "all_gather with tiled=True): that axis grows size-fold. Its gradient is reduce_scatter.",
  [[print(hl.dist.all_gather(hl.array({{1, 2}}), 1))]])
E("dist.reduce_scatter", "hl.dist.reduce_scatter(x [, axis]) -> array",
  "The sum over ranks of x, of which rank r keeps block r of axis (default 1): the axis must split " ..
  "into size equal blocks. Its gradient is all_gather.",
  [[print(hl.dist.reduce_scatter(hl.array({1, 2, 3, 4}), 1))]])
E("dist.ppermute", "hl.dist.ppermute(x, pairs) -> array",
  "Sends x along pairs {{from, to}, ...} (1-based ranks, each at most once as a source and once as " ..
  "a destination): each rank gets the x of the rank that sends to it, or zeros when none does. Its " ..
  "gradient sends the cotangent back along the inverse pairs.",
  [[local n = hl.dist.size()
local ring = {}
for r = 1, n do ring[r] = {r, r % n + 1} end
print(hl.dist.ppermute(hl.array({hl.dist.rank()}), ring))]])
E("dist.all_to_all", "hl.dist.all_to_all(x, split_axis [, concat_axis]) -> array",
  "Splits x along split_axis into size equal blocks and sends block r to rank r; the blocks each " ..
  "rank receives are concatenated along concat_axis (default split_axis) in rank order. Its " ..
  "gradient is all_to_all with the axes swapped.",
  [[print(hl.dist.all_to_all(hl.array({{1, 2}, {3, 4}}), 1, 2))]])
E("dist.shard", "hl.dist.shard(batch [, axis]) -> batch",
  "This rank's block of a global batch: axis (default 1) of every leaf of the pytree batch split " ..
  "into size equal parts (the batch must be a multiple of size).",
  [[print(hl.dist.shard(hl.arange(4)))]])
E("dist.allreduce_grads", "hl.dist.allreduce_grads(grads [, opts]) -> grads",
  "Every leaf of the pytree grads averaged (opts.mean = false: summed) over the ranks, with one " ..
  "collective per bucket: the small leaves (under 1 MB) of one dtype are flattened into buckets " ..
  "of up to opts.bucket_mb megabytes (default 16), so the biases and small layers of a model take " ..
  "one allreduce, not one each; a leaf of 1 MB or more is reduced in place by a call of its own " ..
  "(copying it into a bucket would cost more than the call). Inside hl.jit it is part of the " ..
  "compiled step.",
  [[local g = hl.dist.allreduce_grads({w = hl.ones({2, 2}), b = hl.zeros(2)})
print(g.w, g.b)]])
E("dist.sync", "hl.dist.sync(params [, opts]) -> params",
  "Rank opts.root's (default 1) values of every leaf of params on every rank, bucketed as " ..
  "allreduce_grads: identical parameters to start data-parallel training from.",
  [[local p = hl.dist.sync({w = hl.ones(2)})
print(p.w)]])
E("dist.value_and_grad", "hl.dist.value_and_grad(f [, argnums] [, opts]) -> function",
  "hl.value_and_grad(f) with the value averaged over ranks (pmean) and the gradient averaged by " ..
  "allreduce_grads (opts: has_aux, mean, bucket_mb). When each rank passes its shard of a global " ..
  "batch (hl.dist.shard) and f is a mean loss, this is the whole batch's loss and gradient: a " ..
  "data-parallel step is hl.jit of it plus an optimizer update (samples/digits_dp.lua).",
  [[local vg = hl.dist.value_and_grad(function(w, x) return hl.mean((x * w) ^ 2) end)
print(vg(hl.array(2.0), hl.array({1, 2})))]])
E("dist.save", "hl.dist.save(path, x)",
  "hl.save on rank 1 only; every rank waits for it, and raises if rank 1 failed.",
  [[local path = os.tmpname()
hl.dist.save(path, hl.ones(2))
print(hl.dist.load(path))
os.remove(path)]])
E("dist.savez", "hl.dist.savez(path, tbl)",
  "hl.savez on rank 1 only (a checkpoint of a pytree of parameters); every rank waits for it.",
  [[local path = os.tmpname()
hl.dist.savez(path, {w = hl.ones(2)})
print(hl.dist.loadz(path).w)
os.remove(path)]])
E("dist.load", "hl.dist.load(path) -> array",
  "hl.load on every rank (the file system is shared, or each node has a copy).",
  [[print(type(hl.dist.load))]])
E("dist.loadz", "hl.dist.loadz(path) -> tbl, names",
  "hl.loadz on every rank.",
  [[print(type(hl.dist.loadz))]])
E("dist.print", "hl.dist.print(...)",
  "print on rank 1 only.",
  [[hl.dist.print("loss", 0.5)   -- on rank 1
print("rank " .. hl.dist.rank() .. " goes on")]])

---------------------------------------------------------------- files, devices, caching

G "Complex numbers"
E("complex", "hl.complex(re [, im]) -> array",
  "The complex array re + i im (im defaults to 0), the parts broadcast together. float64 parts give " ..
  "complex128; any other real parts (float32, ints, bool, Lua numbers) give complex64. complex64 and " ..
  "complex128 arrays work with + - * / (Smith's division) ^ and unary -, eq, ne, where, abs (as " ..
  "hypot), sign, exp, expm1, log, log1p, sqrt (NumPy's principal branches), sin, cos, tan, sinh, " ..
  "cosh, tanh, asin, acos, atan, asinh, acosh, atanh (NumPy's branch cuts), isnan, isinf, " ..
  "isfinite, square, reciprocal, sum, prod, mean, var, std, cumsum, cumprod, max, min, argmax, " ..
  "nansum, nanmean, nanvar, nanstd, nanmax, nanmin, median, quantile, percentile, trapezoid, " ..
  "interp, x:at(index arrays):set/add/mul/min/max, segment_sum/max/min, " ..
  "argmin, sort, argsort, lt, le, gt, ge, maximum, minimum (NumPy's order: real part, then " ..
  "imaginary part), matmul, shape ops, " ..
  "hl.save/hl.load (.npy '<c8', '<c16'), jit, " ..
  "grad (JAX's convention: for real-valued f, grad gives df/dx - i df/dy) and vmap; " ..
  "other ops raise an error saying complex is not supported yet (docs/complex.md). Lua has no " ..
  "complex numbers: x:item() and x:totable() give an element as the pair {re, im}, and print(z) " ..
  "shows hl.complex(re, im). Real arrays with complex ones promote to complex (float64 with " ..
  "complex64 gives complex128). astype(\"complex64\") converts a real array; a complex array " ..
  "converts to a real dtype only through hl.real or hl.abs.",
  [[local z = hl.complex(hl.array({1, 0}), hl.array({2, -1}))
print(z, z.dtype, z[1]:item()[2])
print(z * z, hl.abs(z), hl.exp(z) + 1)
print(hl.grad(function(u) return hl.sum(hl.abs(u) ^ 2) end)(z))]])
E("real", "hl.real(x) -> array",
  "The real part of a complex array, as a float32 (complex64) or float64 (complex128) array; a real " ..
  "array is returned as it is. Also x:real().",
  [[print(hl.real(hl.complex(hl.array({1.5, -2}), 3)), hl.real(hl.array({4, 5})))]])
E("imag", "hl.imag(x) -> array",
  "The imaginary part of a complex array, as float32 or float64; zeros for a real array. Also x:imag().",
  [[print(hl.imag(hl.complex(1, hl.array({2, -3}))), hl.imag(hl.array({4, 5})))]])
E("conj", "hl.conj(x) -> array",
  "The complex conjugate re - i im; a real array is returned as it is. Also x:conj().",
  [[print(hl.conj(hl.complex(hl.array({1, 2}), hl.array({3, -4}))))]])
E("angle", "hl.angle(x) -> array",
  "The argument atan2(im, re) of each element, in (-pi, pi], as a float array (NumPy's angle): " ..
  "0 or pi for real numbers. Its modulus is hl.abs(x). Also x:angle().",
  [[print(hl.angle(hl.complex(hl.array({1, 0, -1}), hl.array({1, 2, 0}))), hl.angle(hl.array({-2, 3})))]])

G "Fourier transforms (hl.fft)"
E("fft.fft", "hl.fft.fft(x [, n] [, axis] [, norm]) -> complex array",
  "The discrete Fourier transform along one axis (default the last), as numpy.fft.fft: " ..
  "X[k] = sum_j x[j] exp(-2 pi i j k / n). A real x is made complex first (float64 gives complex128, " ..
  "other real dtypes complex64). n crops the axis or pads it with zeros at the end. norm " ..
  "\"backward\" (default: no scaling forward, 1/n backward), \"ortho\" (1/sqrt(n) both ways) or " ..
  "\"forward\" (1/n forward). Options may come as a table {n =, axis =, norm =}. Any length: " ..
  "radices 2, 3, 4, 5 and primes to 31 by a Stockham FFT, larger prime factors by Bluestein's " ..
  "algorithm, O(n log n) always (engine/host/hl_fft.c, an extern stage inside hl.jit). On cuda, " ..
  "cuFFT where it loads (HALUA_NO_CUFFT=1: the host FFT through copies). jit, grad " ..
  "(JAX's convention for complex values, docs/complex.md), vmap.",
  [[local X = hl.fft.fft(hl.array({1, 2, 3, 4}))
print(X)                                   -- {10, -2+2i, -2, -2-2i}
print(hl.real(hl.fft.ifft(X)))]])
E("fft.ifft", "hl.fft.ifft(x [, n] [, axis] [, norm]) -> complex array",
  "The inverse transform along one axis, x[j] = (1/n) sum_k X[k] exp(2 pi i j k / n) with the " ..
  "default norm \"backward\"; n, axis, norm and the options table as hl.fft.fft.",
  [[print(hl.fft.ifft(hl.fft.fft(hl.array({1, 2, 3}))))]])
E("fft.rfft", "hl.fft.rfft(x [, n] [, axis] [, norm]) -> complex array",
  "The transform of real values, its first n // 2 + 1 entries (the others are their conjugates), as " ..
  "numpy.fft.rfft. A complex x is an error (use hl.fft.fft).",
  [[print(hl.fft.rfft(hl.array({1, 2, 3, 4, 5})))]])
E("fft.irfft", "hl.fft.irfft(x [, n] [, axis] [, norm]) -> real array",
  "The inverse of rfft: n real values (default 2 (m - 1) from m given) whose rfft is x, the missing " ..
  "half taken as conjugates; the imaginary parts of the first entry and, for an even n, the last are " ..
  "ignored (NumPy's rule). Give n for an odd length.",
  [[local x = hl.array({1, 2, 3, 4, 5})
print(hl.fft.irfft(hl.fft.rfft(x), 5))]])
E("fft.hfft", "hl.fft.hfft(x [, n] [, axis] [, norm]) -> real array",
  "The transform of a signal with Hermitian symmetry given by its first n // 2 + 1 values (so its " ..
  "spectrum is real), as numpy.fft.hfft: irfft of conj(x) with the norm's direction swapped (no " ..
  "scaling by default). n defaults to 2 (m - 1).",
  [[print(hl.fft.hfft(hl.complex(hl.array({1, 2, 3}), hl.array({0, -1, 0}))))]])
E("fft.ihfft", "hl.fft.ihfft(x [, n] [, axis] [, norm]) -> complex array",
  "The inverse of hfft for real x, as numpy.fft.ihfft: conj(rfft(x)) with the norm's direction " ..
  "swapped (1/n by default), the first n // 2 + 1 values.",
  [[print(hl.fft.ihfft(hl.array({1, 2, 3, 4})))]])
E("fft.fft2", "hl.fft.fft2(x [, s] [, axes] [, norm]) -> complex array",
  "The transform over two axes (default the last two): hl.fft.fftn with axes {-2, -1}.",
  [[print(hl.fft.fft2(hl.array({{1, 2}, {3, 4}})))]])
E("fft.ifft2", "hl.fft.ifft2(x [, s] [, axes] [, norm]) -> complex array",
  "The inverse transform over two axes (default the last two).",
  [[print(hl.real(hl.fft.ifft2(hl.fft.fft2(hl.array({{1, 2}, {3, 4}})))))]])
E("fft.fftn", "hl.fft.fftn(x [, s] [, axes] [, norm]) -> complex array",
  "The transform over several axes, as numpy.fft.fftn: axes (1-based, negatives from the end) default " ..
  "to all, or to the last #s when only s is given; s gives each axis's length (crop or zero-pad). " ..
  "norm scales by the product of the lengths. Options as a table {s =, axes =, norm =}.",
  [[print(hl.fft.fftn(hl.ones({2, 2, 2})))]])
E("fft.ifftn", "hl.fft.ifftn(x [, s] [, axes] [, norm]) -> complex array",
  "The inverse transform over several axes (see hl.fft.fftn for s and axes).",
  [[print(hl.fft.ifftn(hl.fft.fftn(hl.array({{1, 2}, {3, 4}}))))]])
E("fft.rfft2", "hl.fft.rfft2(x [, s] [, axes] [, norm]) -> complex array",
  "rfftn over two axes (default the last two).",
  [[print(hl.fft.rfft2(hl.array({{1, 2, 3}, {4, 5, 6}})))]])
E("fft.irfft2", "hl.fft.irfft2(x [, s] [, axes] [, norm]) -> real array",
  "irfftn over two axes (default the last two).",
  [[local x = hl.array({{1, 2, 3}, {4, 5, 6}})
print(hl.fft.irfft2(hl.fft.rfft2(x), {2, 3}))]])
E("fft.rfftn", "hl.fft.rfftn(x [, s] [, axes] [, norm]) -> complex array",
  "The transform of real values over several axes: rfft over the last of the axes (keeping n // 2 + 1 " ..
  "entries), then full transforms over the others, as numpy.fft.rfftn.",
  [[print(hl.fft.rfftn(hl.ones({2, 4})))]])
E("fft.irfftn", "hl.fft.irfftn(x [, s] [, axes] [, norm]) -> real array",
  "The inverse of rfftn: inverse transforms over all but the last of the axes, then irfft over it " ..
  "(its length s[#s], default 2 (m - 1)).",
  [[local x = hl.array({{1, 2, 3}, {4, 5, 6}})
print(hl.fft.irfftn(hl.fft.rfftn(x), {2, 3}))]])
E("fft.fftfreq", "hl.fft.fftfreq(n [, d] [, dtype]) -> array",
  "The sample frequencies of a length-n transform with sample spacing d (default 1): " ..
  "{0, 1, ..., -2, -1} / (d n), as numpy.fft.fftfreq; float32 unless dtype is \"float64\". " ..
  "Options as a table {d =, dtype =}.",
  [[print(hl.fft.fftfreq(5), hl.fft.fftfreq(4, 0.1))]])
E("fft.rfftfreq", "hl.fft.rfftfreq(n [, d] [, dtype]) -> array",
  "The n // 2 + 1 non-negative frequencies of rfft: {0, 1, ..., n // 2} / (d n).",
  [[print(hl.fft.rfftfreq(6, 0.5))]])
E("fft.fftshift", "hl.fft.fftshift(x [, axes]) -> array",
  "x rolled by n // 2 along each of the axes (default all), so the zero frequency comes to the centre.",
  [[print(hl.fft.fftshift(hl.fft.fftfreq(5)))]])
E("fft.ifftshift", "hl.fft.ifftshift(x [, axes]) -> array",
  "The inverse of fftshift (a roll by -(n // 2)): they differ for odd lengths.",
  [[print(hl.fft.ifftshift(hl.fft.fftshift(hl.arange(5))))]])

G "Files"
E("save", "hl.save(path, x)",
  "Writes x to path as a .npy file, the bytes numpy.save writes (the path is used as given: no " ..
  ".npy is added). GPU arrays are copied to the host first.",
  [[local path = os.tmpname()
hl.save(path, hl.arange(3))
print(hl.load(path))
os.remove(path)]])
E("load", "hl.load(path) -> array",
  "Reads a .npy file (any halua dtype, either byte order, C or Fortran order, format 1.0 to 3.0) " ..
  "onto the default device. A corrupt file or a dtype halua lacks is an error naming the file.",
  [[local path = os.tmpname()
hl.save(path, hl.eye(2))
print(hl.load(path))
os.remove(path)]])
E("savez", "hl.savez(path, {name = array, ...} | {array, ...})",
  "Writes a table of arrays as a .npz archive (numpy.savez's bytes, uncompressed): named arrays " ..
  "under their names, a list as arr_0, arr_1, ... (also hl.savez(path, a, b, ...)).",
  [[local path = os.tmpname()
hl.savez(path, {w = hl.ones(2), b = hl.zeros(1)})
local t, names = hl.loadz(path)
print(t.w, names[1], names[2])
os.remove(path)]])
E("loadz", "hl.loadz(path) -> {name = array, ...}, {names}",
  "Reads a .npz archive (also numpy.savez_compressed's): a table of its arrays by name, and the " ..
  "names in the archive's order.",
  [[local path = os.tmpname()
hl.savez(path, {hl.arange(2), hl.ones(1)})
local t = hl.loadz(path)
print(t.arr_0, t.arr_1)
os.remove(path)]])

G "Devices and caching"
E("devices", "hl.devices() -> {names}",
  "The devices present: {\"cpu\"}, and \"cuda:1\" where there is a GPU.",
  [[print(table.concat(hl.devices(), ", "))]])
E("device_put", "hl.device_put(x, device) -> array   (also x:to(device))",
  "x copied to device: \"cpu\", \"cuda\" (or \"cuda:1\"). Ops run where their inputs are; mixing " ..
  "devices in one op is an error.",
  [[print(hl.device_put(hl.ones(2), "cpu").device)]])
E("default_device", "hl.default_device([name]) -> name",
  "The device new arrays start on (\"cpu\" unless HALUA_DEVICE or a call says otherwise); with a " ..
  "name, sets it first.",
  [[print(hl.default_device())]])
E("cache_info", "hl.cache_info() -> {entries, hits, misses, compile_ms, disk_hits, disk_misses, disk_bytes, disk_load_ms, disk_dir, mem_bytes, mem_limit, evictions}",
  "Statistics of the compiled-kernel cache (eager kernels and jit pipelines): entries cached in " ..
  "memory, hits, misses (kernels not yet in memory: compiled, or loaded from disk) and the " ..
  "milliseconds spent compiling; mem_bytes (the memory the cached kernels keep), mem_limit (its " ..
  "bound in bytes: HALUA_CACHE_MEM_MB megabytes, default 512) and evictions (least recently used " ..
  "entries let go to stay within it; their code is freed once no jitted function holds it); and of the disk cache " ..
  "that keeps compiled CPU pipelines between processes: disk_hits (pipelines loaded from disk), " ..
  "disk_misses (looked up on disk and not found, or found damaged), disk_bytes (the entries' " ..
  "total size on disk now, the shared runtime excluded), disk_load_ms (the milliseconds spent " ..
  "loading entries) and disk_dir (the directory in use: $HALUA_CACHE_DIR, else " ..
  "$XDG_CACHE_HOME/halua, else ~/.cache/halua; nil when HALUA_CACHE_DIR=off or the directory " ..
  "is unusable). The table prints readably.",
  [[local info = hl.cache_info()
print(info, info.misses, info.disk_dir)]])
E("cache_clear", "hl.cache_clear([{disk = true}])",
  "Empties the in-memory cache of compiled kernels, freeing the code of those no jitted function " ..
  "holds, and zeroes hl.cache_info()'s counters: later " ..
  "calls look the kernels up again (on disk, then by compiling). With {disk = true} it also removes every entry of the disk cache directory " ..
  "(keeping the shared Halide runtime), so the next calls compile. Deleting the directory does " ..
  "the same between runs. An unknown option is an error.",
  [[hl.cache_clear()                  -- hl.cache_clear({disk = true}) also empties the disk cache
print(hl.cache_info().entries)]])
E("export", "hl.export(f, args, dir [, name])",
  "Writes f (a function or a jitted function), for the shapes and dtypes of args (a list of its " ..
  "arguments; pytrees are flattened in order, numbers and static arguments are baked in), as a " ..
  "standalone C library: dir/NAME.h declares int NAME(const void *const *inputs, void *const *outputs) " ..
  "and the macros NAME_NUM_INPUTS and NAME_NUM_OUTPUTS (NAME in capitals), with dir/libNAME.a and " ..
  "dir/libNAME.so beside it. Each pointer is one array's contiguous row-major data; the call returns 0 " ..
  "on success. Arrays f captures are embedded as constant data; matmuls, sort, linalg (link -llapack) and " ..
  "compiled loops go in with the pipeline, so the library needs no Lua, LLVM or Halide (libc, libm, " ..
  "pthread). The code is compiled for this machine's CPU. name defaults to dir's last component as a " ..
  "C identifier. Needs a C compiler and binutils (cc, ld, objcopy, ar) while exporting.",
  [[local dir = os.tmpname() .. ".d"
hl.export(function(x, w) return hl.tanh(hl.matmul(x, w)) end, {hl.ones({2, 3}), hl.ones({3, 4})}, dir, "layer")
print(io.open(dir .. "/layer.h"):read("*a"):match("#define LAYER_NUM_INPUTS %d"))
os.execute("rm -rf '" .. dir .. "'")]])
E("help", "hl.help([fn_or_name] [, opts]) -> nothing, or the text",
  "Prints the signature, a paragraph and a runnable example for a function, given as a value " ..
  "(hl.help(hl.sum)) or a name (\"sum\", \"random.split\", \"nn.relu\", method names like " ..
  "\"astype\" or \"item\"). Without an argument, an overview by group. With opts.print = false it " ..
  "returns the text instead of printing it. An unknown name is an error listing close matches.",
  [[local text = hl.help("sum", {print = false})
print(text:sub(1, 40))]])

-- lookups that are not function names
local topics = {
  shape = "array", ndim = "array", size = "array", dtype = "array", device = "array", T = "array",
  index = "array", indexing = "array", operators = "array", dtypes = "array",
  ["x.shape"] = "array", ["x.ndim"] = "array", ["x.size"] = "array", ["x.dtype"] = "array",
  ["x.device"] = "array", ["x.T"] = "array",
}
for k, v in pairs(topics) do
  if not docs[k] then docs[k] = {alias = v, topic = true} end
end

return {entries = docs, order = order}
