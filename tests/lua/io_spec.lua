-- .npy and .npz files: round trips of every dtype and rank, NumPy reading what halua writes and
-- the reverse, byte-identical output against numpy.save and numpy.savez, big-endian and
-- Fortran-order files, compressed archives, and every error for bad arguments and corrupt or
-- truncated files (each names the file; none crashes or returns part of an array).
local hl = require "halua"
local files = require "support.files"

local PYTHON = os.getenv("HALUA_NUMPY_PYTHON") or "/usr/bin/python3"
local DTYPES = {"float32", "float64", "int32", "int64", "uint8", "bool"}
local DESCR = {float32 = "<f4", float64 = "<f8", int32 = "<i4", int64 = "<i8", uint8 = "|u1", bool = "|b1"}
local SHAPES = {{}, {0}, {5}, {2, 3}, {3, 0, 2}, {2, 1, 3, 2}, {1, 2, 1, 3, 2}, {2, 2, 1, 2, 1, 3}}

-- ---------------------------------------------------------------- helpers

local temps = {}
local function tmp()
  local p = os.tmpname()
  temps[#temps + 1] = p
  return p
end
local function cleanup()
  for _, p in ipairs(temps) do os.remove(p) end
  temps = {}
end

local read_bytes, write_bytes = files.read_bytes, files.write_bytes

-- run a Python script with NumPy; it prints a Lua chunk (or nothing) and then a last line "ok"
local function python(script)
  local path = tmp()
  write_bytes(path, "import sys, warnings, zipfile, numpy as np\nwarnings.simplefilter('ignore')\n" ..
    "def lua(v):\n" ..
    "    if isinstance(v, (list, tuple)): return '{' + ', '.join(lua(x) for x in v) + '}'\n" ..
    "    if isinstance(v, bool): return 'true' if v else 'false'\n" ..
    "    if isinstance(v, float):\n" ..
    "        if v != v: return '0/0'\n" ..
    "        if v in (float('inf'), float('-inf')): return ('-' if v < 0 else '') + '1/0'\n" ..
    "        return repr(v)\n" ..
    "    if isinstance(v, str): return repr(v)\n" ..
    "    return str(v)\n" ..
    "def described(a): return '{dtype = %s, shape = %s, values = %s}' % (lua(a.dtype.str), lua(list(a.shape)), lua(a.ravel(order='C').tolist()))\n" ..
    script .. "\nprint('ok')\n")
  local p = assert(io.popen(PYTHON .. " " .. path .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  -- the last line must be "ok" (no pattern over the whole output: it can be megabytes)
  assert(out == "ok\n" or out:sub(-4) == "\nok\n", "the NumPy script failed:\n" .. out:sub(-4000))
  local body = out:sub(1, -4)
  if body:match("%S") then return assert(loadstring(body))() end
end

-- a Python list literal of an array's values (C order)
local function py_values(x)
  local vals = {}
  for i, v in ipairs(hl.flatten(x):totable()) do
    if type(v) == "boolean" then vals[i] = v and "True" or "False"
    elseif v ~= v then vals[i] = "float('nan')"
    elseif v == math.huge then vals[i] = "float('inf')"
    elseif v == -math.huge then vals[i] = "float('-inf')"
    else vals[i] = string.format("%.17g", v) end
  end
  return "[" .. table.concat(vals, ", ") .. "]"
end
local function py_shape(shape)
  return "(" .. table.concat(shape, ", ") .. (#shape == 1 and ",)" or ")")
end

local function size_of(shape)
  local n = 1
  for _, e in ipairs(shape) do n = n * e end
  return n
end

-- deterministic values of each dtype, specials included; `plain` leaves out NaN, inf and -0
local function sample(dtype, shape, plain)
  local n = size_of(shape)
  local v = {}
  for i = 1, n do
    if dtype == "bool" then v[i] = i % 3 == 1
    elseif dtype == "uint8" then v[i] = (i * 37) % 256
    elseif dtype == "int32" then v[i] = (i * 7919 % 20001 - 10000) * 1000
    elseif dtype == "int64" then v[i] = (i % 2 == 0 and -1 or 1) * (2 ^ 40 + i * 12345)
    else v[i] = (i - n / 2) * 0.375 + (dtype == "float64" and 1 / 3 or 0.25) end
  end
  if not plain and dtype:match("^float") and n >= 4 then v[1], v[2], v[3], v[4] = 0 / 0, 1 / 0, -1 / 0, -0.0 end
  if #shape == 0 then return hl.array(v[1], dtype) end
  if n == 0 then return hl.zeros(shape, dtype) end
  return hl.reshape(hl.array(v, dtype), shape)
end

-- same dtype, shape and values; NaN equals NaN and the sign of zero counts
local function assert_same(want, got)
  assert.are.equal(want.dtype, got.dtype)
  assert.are.same(want.shape, got.shape)
  local a, b = hl.flatten(want):totable(), hl.flatten(got):totable()
  assert.are.equal(#a, #b)
  for i = 1, #a do
    local x, y = a[i], b[i]
    if x ~= x then assert(y ~= y, "element " .. i .. ": NaN became " .. tostring(y))
    else
      assert(x == y, "element " .. i .. ": " .. tostring(x) .. " became " .. tostring(y))
      if x == 0 and type(x) == "number" then assert.are.equal(1 / x, 1 / y) end
    end
  end
end

-- a described array (from `python`) against a halua array
local function assert_matches(desc, got, dtype)
  assert.are.equal(dtype, got.dtype)
  assert.are.same(desc.shape, got.shape)
  local vals = hl.flatten(got):totable()
  assert.are.equal(#desc.values, #vals)
  for i, w in ipairs(desc.values) do
    local g = vals[i]
    if w ~= w then assert(g ~= g, "element " .. i .. ": expected NaN, got " .. tostring(g))
    else assert(g == w, "element " .. i .. ": expected " .. tostring(w) .. ", got " .. tostring(g)) end
  end
end

local err_of = require("support.errors").err_of

-- a .npy file from parts: header text (padded as NumPy pads it unless raw), version, data
local function npy_bytes(header, data, version, raw)
  version = version or 1
  local prefix = 10 + (version == 1 and 0 or 2)
  if not raw then
    local hlen = #header + 1
    header = header .. string.rep(" ", 64 - (prefix + hlen) % 64) .. "\n"
  end
  local n = #header
  local len = version == 1 and string.char(n % 256, math.floor(n / 256))
              or string.char(n % 256, math.floor(n / 256) % 256, math.floor(n / 65536) % 256, 0)
  return "\147NUMPY" .. string.char(version, 0) .. len .. header .. (data or "")
end

-- ---------------------------------------------------------------- round trips

describe("hl.save and hl.load", function()
  after_each(cleanup)

  for _, dtype in ipairs(DTYPES) do
    it("round-trip " .. dtype .. " arrays of rank 0 to 6, empty ones included", function()
      for _, shape in ipairs(SHAPES) do
        local x = sample(dtype, shape)
        local p = tmp()
        hl.save(p, x)
        assert_same(x, hl.load(p))
      end
    end)
  end

  it("save non-contiguous views as the values they show", function()
    local x = sample("float64", {4, 6})
    local views = {
      hl.transpose(x),
      x[{{1, -1, 2}, {2, 5}}],
      x[{{-1, 1, -1}}],
      hl.broadcast_to(sample("int32", {3}), {2, 3}),
      hl.transpose(sample("uint8", {2, 3, 4}), {3, 1, 2}),
      x[{{2, 1}}],   -- empty
    }
    for _, v in ipairs(views) do
      local p = tmp()
      hl.save(p, v)
      assert_same(v, hl.load(p))
    end
  end)

  it("save Lua numbers, booleans and tables as hl.array makes them", function()
    local p = tmp()
    hl.save(p, 2.5)
    assert_same(hl.array(2.5), hl.load(p))
    hl.save(p, true)
    assert_same(hl.array(true), hl.load(p))
    hl.save(p, {{1, 2}, {3, 4}})
    assert_same(hl.array({{1, 2}, {3, 4}}), hl.load(p))
  end)

  it("load onto the default device, where hl.array puts arrays", function()
    local p, q = tmp(), tmp()
    hl.save(p, sample("float32", {3}))
    hl.savez(q, {w = sample("float32", {3})})
    -- the host unless HALUA_DEVICE says otherwise (scripts/test-gpu: the GPU)
    if (os.getenv("HALUA_DEVICE") or "") == "" then assert.are.equal("cpu", hl.default_device()) end
    assert.are.equal(hl.default_device(), hl.load(p).device)
    assert.are.equal(hl.default_device(), hl.loadz(q).w.device)
    assert.are.equal(hl.array(1).device, hl.load(p).device)
  end)

  it("read a large array (more than one read buffer)", function()
    local x = hl.reshape(hl.arange(300000, "float64") * 0.5 - 7, {600, 500})
    local p = tmp()
    hl.save(p, x)
    assert_same(x, hl.load(p))
  end)

  it("overwrite an existing file", function()
    local p = tmp()
    hl.save(p, sample("float64", {50}))
    hl.save(p, sample("uint8", {2}))
    assert_same(sample("uint8", {2}), hl.load(p))
  end)

  it("work inside hl.jit on values that are not traced", function()
    local p = tmp()
    local c = sample("float32", {2})
    local f = hl.jit(function(x)
      hl.save(p, c)
      return x + 1
    end)
    f(hl.ones({2}))
    assert_same(c, hl.load(p))
  end)
end)

describe("hl.savez and hl.loadz", function()
  after_each(cleanup)

  it("round-trip every dtype and rank in one archive", function()
    local t = {}
    for _, dtype in ipairs(DTYPES) do
      for r, shape in ipairs(SHAPES) do t[dtype .. "_" .. r] = sample(dtype, shape) end
    end
    local p = tmp()
    hl.savez(p, t)
    local got, names = hl.loadz(p)
    local n = 0
    for k, v in pairs(t) do
      assert_same(v, got[k])
      n = n + 1
    end
    assert.are.equal(n, #names)
    for i = 2, #names do assert.is_true(names[i - 1] < names[i]) end   -- sorted, as written
  end)

  it("name a list's arrays arr_0, arr_1, ... and take arrays as separate arguments", function()
    local a, b, c = sample("float32", {2}), sample("int64", {}), sample("bool", {2, 2})
    local p = tmp()
    hl.savez(p, {a, b, c})
    local got, names = hl.loadz(p)
    assert.are.same({"arr_0", "arr_1", "arr_2"}, names)
    assert_same(a, got.arr_0)
    assert_same(b, got.arr_1)
    assert_same(c, got.arr_2)
    hl.savez(p, a, b)
    got, names = hl.loadz(p)
    assert.are.same({"arr_0", "arr_1"}, names)
    assert_same(b, got.arr_1)
  end)

  it("put named arrays first, then the list's", function()
    local p = tmp()
    hl.savez(p, {sample("uint8", {3}), zeta = sample("float32", {1}), alpha = sample("int32", {2})})
    local got, names = hl.loadz(p)
    assert.are.same({"alpha", "zeta", "arr_0"}, names)
    assert_same(sample("uint8", {3}), got.arr_0)
  end)

  it("write and read an empty archive", function()
    local p = tmp()
    hl.savez(p, {})
    local got, names = hl.loadz(p)
    assert.are.same({}, got)
    assert.are.same({}, names)
  end)

  it("keep names with slashes, dots and non-ASCII letters", function()
    local p = tmp()
    local t = {["layer1/w"] = sample("float32", {2, 2}), ["b.0"] = sample("int32", {1}), ["größe"] = sample("uint8", {2})}
    hl.savez(p, t)
    local got = hl.loadz(p)
    for k, v in pairs(t) do assert_same(v, got[k]) end
  end)

  it("save views and broadcasts as their values", function()
    local x = sample("float64", {3, 4})
    local p = tmp()
    hl.savez(p, {t = hl.transpose(x), s = x[{{1, -1, 2}}], b = hl.broadcast_to(hl.array(1.5), {2, 2})})
    local got = hl.loadz(p)
    assert_same(hl.transpose(x) * 1, got.t)
    assert_same(x[{{1, -1, 2}}] * 1, got.s)
    assert_same(hl.full({2, 2}, 1.5), got.b)
  end)
end)

-- ---------------------------------------------------------------- NumPy reads what halua writes

describe("NumPy reading halua's files", function()
  after_each(cleanup)

  it("loads every dtype and rank with the same dtype, shape and values", function()
    local cases, paths = {}, {}
    for _, dtype in ipairs(DTYPES) do
      for _, shape in ipairs(SHAPES) do
        local x = sample(dtype, shape)
        local p = tmp()
        hl.save(p, x)
        cases[#cases + 1] = {x = x, dtype = dtype}
        paths[#paths + 1] = string.format("%q", p)
      end
    end
    local got = python("print('return {' + ', '.join(described(np.load(p)) for p in [" .. table.concat(paths, ", ") .. "]) + '}')")
    for i, c in ipairs(cases) do
      assert.are.equal(DESCR[c.dtype], got[i].dtype)
      assert_matches(got[i], c.x, c.dtype)
    end
  end)

  it("loads an archive's arrays under their names", function()
    local t = {w = sample("float32", {2, 3}), n = sample("int64", {4}), m = sample("bool", {2}), e = sample("uint8", {0, 2})}
    local p = tmp()
    hl.savez(p, t)
    local got = python(string.format([[
z = np.load(%q)
print('return {' + ', '.join('[%%s] = %%s' %% (repr(k), described(z[k])) for k in z.files) + '}')
print('-- files: ' + ','.join(z.files))]], p))
    for k, x in pairs(t) do
      assert.are.equal(DESCR[x.dtype], got[k].dtype)
      assert_matches(got[k], x, x.dtype)
    end
  end)
end)

-- ---------------------------------------------------------------- byte-identical files

describe("bytes", function()
  after_each(cleanup)

  it("hl.save writes what numpy.save writes, for every dtype and rank", function()
    local lines, pairs_ = {}, {}
    for _, dtype in ipairs(DTYPES) do
      for _, shape in ipairs(SHAPES) do
        local x = sample(dtype, shape, true)
        local mine, theirs = tmp(), tmp()
        hl.save(mine, x)
        lines[#lines + 1] = string.format("with open(%q, 'wb') as f: np.save(f, np.array(%s, dtype=%q).reshape(%s))",
                                          theirs, py_values(x), dtype, py_shape(shape))
        pairs_[#pairs_ + 1] = {mine, theirs, dtype, shape}
      end
    end
    -- long shapes and extents of many digits change the header's padding
    for _, shape in ipairs {{123456, 0}, {0, 7, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 2}, {10000000000, 0}} do
      local x = hl.zeros(shape, "float32")
      local mine, theirs = tmp(), tmp()
      hl.save(mine, x)
      lines[#lines + 1] = string.format("with open(%q, 'wb') as f: np.save(f, np.zeros(%s, dtype='float32'))", theirs, py_shape(shape))
      pairs_[#pairs_ + 1] = {mine, theirs, "float32", shape}
    end
    python(table.concat(lines, "\n"))
    for _, c in ipairs(pairs_) do
      assert(read_bytes(c[1]) == read_bytes(c[2]), "hl.save and numpy.save differ for " .. c[3] .. " [" .. table.concat(c[4], ",") .. "]")
    end
  end)

  it("hl.save of a view writes what numpy.save of the same values writes", function()
    local x = sample("int32", {3, 4}, true)
    local v = hl.transpose(x)
    local mine, theirs = tmp(), tmp()
    hl.save(mine, v)
    python(string.format("with open(%q, 'wb') as f: np.save(f, np.ascontiguousarray(np.array(%s, dtype='int32').reshape(3, 4).T))",
                         theirs, py_values(x)))
    assert.is_true(read_bytes(mine) == read_bytes(theirs))
  end)

  -- numpy.savez's bytes depend on the Python under it: zipfile opens each member with
  -- force_zip64, and since CPython's fix for gh-103861 (3.12, 3.13, and 3.11 from a bug-fix
  -- release on: 3.11.7 has it, 3.11.2 not) such a member's local header holds 0xffffffff for its
  -- sizes and version 4.5, as does its directory entry. halua writes that. Before the fix the
  -- local header kept the sizes and said version 2.0 (in the directory entry too): an archive from
  -- such a Python is checked to be exactly that layout and moved to the current one, every other
  -- byte untouched, before the comparison
  local PY_CURRENT_ZIP = [[
import struct
def current_layout(path):
    b = bytearray(open(path, 'rb').read())
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
    e = b.rfind(b'PK\x05\x06')
    pos = struct.unpack('<I', b[e + 16:e + 20])[0]
    for i in infos:
        h = i.header_offset
        if struct.unpack('<H', b[h + 4:h + 6])[0] == 45: return
        assert struct.unpack('<HII', b[h + 4:h + 6] + b[h + 18:h + 26]) == (20, i.compress_size, i.file_size)
        b[h + 4:h + 6] = struct.pack('<H', 45)
        b[h + 18:h + 26] = b'\xff' * 8
        assert b[pos:pos + 4] == b'PK\x01\x02' and b[pos + 4] == 20 and b[pos + 6] == 20
        b[pos + 4] = b[pos + 6] = 45
        n, x, c = struct.unpack('<HHH', b[pos + 28:pos + 34])
        pos += 46 + n + x + c
    open(path, 'wb').write(bytes(b))
]]

  it("hl.savez writes what numpy.savez writes", function()
    local a, b, c = sample("float32", {2, 3}, true), sample("bool", {4}, true), sample("int64", {}, true)
    local mine1, mine2, mine3, theirs1, theirs2, theirs3 = tmp(), tmp(), tmp(), tmp(), tmp(), tmp()
    hl.savez(mine1, {weights = a, mask = b, step = c})
    hl.savez(mine2, {a, b, c})
    hl.savez(mine3, {})
    python(PY_CURRENT_ZIP .. string.format([[
a = np.array(%s, dtype='float32').reshape(2, 3)
b = np.array(%s, dtype='bool')
c = np.array(%s, dtype='int64').reshape(())
with open(%q, 'wb') as f: np.savez(f, mask=b, step=c, weights=a)
with open(%q, 'wb') as f: np.savez(f, a, b, c)
with open(%q, 'wb') as f: np.savez(f)
for p in (%q, %q, %q): current_layout(p)]], py_values(a), py_values(b), py_values(c), theirs1, theirs2, theirs3,
                                              theirs1, theirs2, theirs3))
    assert.is_true(read_bytes(mine1) == read_bytes(theirs1), "named arrays")
    assert.is_true(read_bytes(mine2) == read_bytes(theirs2), "a list of arrays")
    assert.is_true(read_bytes(mine3) == read_bytes(theirs3), "no arrays")
  end)

  it("numpy.save of what hl.load read gives the same bytes back (cmp)", function()
    local mine, again = tmp(), tmp()
    hl.save(mine, sample("float64", {3, 5}))
    python(string.format("with open(%q, 'wb') as f: np.save(f, np.load(%q))", again, mine))
    assert.are.equal(0, os.execute("cmp -s " .. mine .. " " .. again))
  end)
end)

-- ---------------------------------------------------------------- halua reads what NumPy writes

describe("reading NumPy's files", function()
  after_each(cleanup)

  -- each case: a dtype, a shape, and how the file is written; Python writes the file and
  -- describes the array it holds
  local function numpy_files(cases)
    local lines = {"out = []"}
    for _, c in ipairs(cases) do
      c.path = tmp()
      local n = size_of(c.shape)
      local expr = string.format("(np.arange(%d) * 0.375 - %d).astype(%q).reshape(%s)", n, math.floor(n / 2), c.dtype, py_shape(c.shape))
      if c.dtype == "bool" then expr = string.format("(np.arange(%d) %% 3 == 1).reshape(%s)", n, py_shape(c.shape)) end
      if c.dtype == "uint8" then expr = string.format("(np.arange(%d) * 37 %% 256).astype('u1').reshape(%s)", n, py_shape(c.shape)) end
      lines[#lines + 1] = "a = " .. expr
      if c.how == "big" then lines[#lines + 1] = "b = a.astype(a.dtype.newbyteorder('>'))"
      elseif c.how == "fortran" then lines[#lines + 1] = "b = np.asfortranarray(a)"
      elseif c.how == "big fortran" then lines[#lines + 1] = "b = np.asfortranarray(a.astype(a.dtype.newbyteorder('>')))"
      else lines[#lines + 1] = "b = a" end
      local version = c.version and string.format("(%d, 0)", c.version) or "None"
      lines[#lines + 1] = string.format("with open(%q, 'wb') as f: np.lib.format.write_array(f, b, version=%s)", c.path, version)
      lines[#lines + 1] = "out.append(described(a))"
    end
    lines[#lines + 1] = "print('return {' + ', '.join(out) + '}')"
    local got = python(table.concat(lines, "\n"))
    for i, c in ipairs(cases) do c.want = got[i] end
    return cases
  end

  it("little-endian, every dtype and rank", function()
    local cases = {}
    for _, dtype in ipairs(DTYPES) do
      for _, shape in ipairs(SHAPES) do cases[#cases + 1] = {dtype = dtype, shape = shape} end
    end
    for _, c in ipairs(numpy_files(cases)) do assert_matches(c.want, hl.load(c.path), c.dtype) end
  end)

  it("big-endian ('>f4', '>i8', ...): byte-swapped on reading", function()
    local cases = {}
    for _, dtype in ipairs(DTYPES) do
      for _, shape in ipairs {{}, {0}, {7}, {3, 4}, {2, 3, 2}} do cases[#cases + 1] = {dtype = dtype, shape = shape, how = "big"} end
    end
    for _, c in ipairs(numpy_files(cases)) do assert_matches(c.want, hl.load(c.path), c.dtype) end
    local header = read_bytes(cases[1].path):sub(11, 60)
    assert.truthy(header:find("'>f4'", 1, true), "the file is not big-endian: " .. header)
  end)

  it("Fortran order: transposed into C order", function()
    local cases = {}
    for _, dtype in ipairs(DTYPES) do
      for _, shape in ipairs {{3, 4}, {2, 3, 4}, {2, 1, 3, 1, 2}, {4, 0, 2}, {1, 5}, {2, 2, 2, 2, 2, 2}} do
        cases[#cases + 1] = {dtype = dtype, shape = shape, how = "fortran"}
      end
      cases[#cases + 1] = {dtype = dtype, shape = {3, 5}, how = "big fortran"}
    end
    for _, c in ipairs(numpy_files(cases)) do assert_matches(c.want, hl.load(c.path), c.dtype) end
    assert.truthy(read_bytes(cases[1].path):find("'fortran_order': True", 1, true))
  end)

  it("format versions 2.0 and 3.0", function()
    local cases = {}
    for _, v in ipairs {1, 2, 3} do
      for _, dtype in ipairs {"float32", "int64", "bool"} do cases[#cases + 1] = {dtype = dtype, shape = {2, 3}, version = v} end
    end
    for _, c in ipairs(numpy_files(cases)) do
      assert.are.equal(c.version, read_bytes(c.path):byte(7))
      assert_matches(c.want, hl.load(c.path), c.dtype)
    end
  end)

  it("archives from numpy.savez, numpy.savez_compressed and both at once", function()
    local p1, p2 = tmp(), tmp()
    local got = python(string.format([[
x = np.linspace(-3, 3, 7).astype('float32')
y = (np.arange(24).reshape(2, 3, 4) * 1000003).astype('>i8')
z = np.asfortranarray(np.arange(12, dtype='<f8').reshape(3, 4))
w = np.random.default_rng(5).random(100000)   # deflated over more than one read buffer
with open(%q, 'wb') as f: np.savez(f, x, y=y, z=z, empty=np.zeros((0, 3), 'u1'))
with open(%q, 'wb') as f: np.savez_compressed(f, x, y=y, z=z, w=w, b=np.array(True))
print('return {x = %%s, y = %%s, z = %%s, w = %%s}' %% (described(x), described(y), described(np.ascontiguousarray(z)), described(w)))]], p1, p2))
    for _, p in ipairs {p1, p2} do
      local t, names = hl.loadz(p)
      assert_matches(got.x, t.arr_0, "float32")
      assert_matches(got.y, t.y, "int64")
      assert_matches(got.z, t.z, "float64")
      assert.are.equal(p == p1 and 4 or 5, #names)
    end
    local t = hl.loadz(p2)
    assert_matches(got.w, t.w, "float64")
    assert.are.equal(true, t.b:item())
    assert.are.same({0, 3}, hl.loadz(p1).empty.shape)
  end)

  it("zip64 records everywhere, and members written with data descriptors (an unseekable stream)", function()
    local src, z64, dd = tmp(), tmp(), tmp()
    local got = python(string.format([[
import struct
a = np.arange(6, dtype='<i8').reshape(2, 3)
b = np.linspace(0, 1, 5)
with open(%q, 'wb') as f: np.savez(f, a=a, b=b)
# the same archive with every size and offset in zip64 extra fields and a zip64 end record
d = open(%q, 'rb').read()
e = len(d) - 22
count, cd_size, cd_off = struct.unpack('<HII', d[e + 10:e + 20])
cd, p = bytearray(), cd_off
for i in range(count):
    h = bytearray(d[p:p + 46])
    nlen, xlen, clen = struct.unpack('<HHH', h[28:34])
    crc, cs, us = struct.unpack('<III', h[16:28])
    off = struct.unpack('<I', h[42:46])[0]
    extra = struct.pack('<HHQQQ', 1, 24, us, cs, off)
    h[20:28] = struct.pack('<II', 0xffffffff, 0xffffffff)
    h[30:32] = struct.pack('<H', len(extra))
    h[42:46] = struct.pack('<I', 0xffffffff)
    cd += h + d[p + 46:p + 46 + nlen] + extra
    p += 46 + nlen + xlen + clen
end64 = cd_off + len(cd)
tail = struct.pack('<4sQHHIIQQQQ', b'PK\x06\x06', 44, 45, 45, 0, 0, count, count, len(cd), cd_off)
tail += struct.pack('<4sIQI', b'PK\x06\x07', 0, end64, 1)
tail += struct.pack('<4sHHHHIIH', b'PK\x05\x06', 0, 0, 0xffff, 0xffff, 0xffffffff, 0xffffffff, 0)
open(%q, 'wb').write(d[:cd_off] + cd + tail)
assert (np.load(%q)['b'] == b).all()
class Unseekable:
    def __init__(self, f): self.f = f
    def write(self, s): return self.f.write(s)
    def flush(self): self.f.flush()
    def read(self, n=-1): raise OSError('write-only')   # np.savez takes objects with read as files
with open(%q, 'wb') as f: np.savez(Unseekable(f), a=a, b=b)
print('return {a = %%s, b = %%s}' %% (described(a), described(b)))]], src, src, z64, z64, dd))
    for _, p in ipairs {src, z64, dd} do
      local t = hl.loadz(p)
      assert_matches(got.a, t.a, "int64")
      assert_matches(got.b, t.b, "float64")
    end
    assert.are.equal(8, read_bytes(dd):byte(7))   -- the data-descriptor flag is set
  end)

  it("bools stored as bytes other than 0 and 1 read as true (1)", function()
    local p = tmp()
    write_bytes(p, npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", "\0\2\255\1"))
    local x = hl.load(p)
    assert.are.same({false, true, true, true}, x:totable())
    assert.are.same({0, 1, 1, 1}, hl.astype(x, "uint8"):totable())
  end)

  it("headers in other spellings: Python 2 longs, double quotes, any key order, '=' and '|' byte orders", function()
    local p = tmp()
    local data = string.rep("\0\0\128\63", 6)   -- six float32 1.0
    for _, h in ipairs {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
      '{"shape": (2, 3), "descr": "<f4", "fortran_order": False}',
      "{ 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , 'descr' : '=f4' }",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}\n",
    } do
      write_bytes(p, npy_bytes(h, data))
      assert_same(hl.ones({2, 3}), hl.load(p))
    end
    write_bytes(p, npy_bytes("{'descr': '<u1', 'fortran_order': False, 'shape': (2,), }", "\7\9"))
    assert_same(hl.array({7, 9}, "uint8"), hl.load(p))
    write_bytes(p, npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "\7\9extra bytes after the data are ignored"))
    assert_same(hl.array({7, 9}, "uint8"), hl.load(p))
  end)
end)

-- ---------------------------------------------------------------- errors

describe("errors", function()
  after_each(cleanup)

  -- a real file: a (2, 3) float64 array: a 128-byte header and 48 bytes of data
  local function real_npy()
    local p = tmp()
    hl.save(p, sample("float64", {2, 3}))
    return p, read_bytes(p)
  end

  it("a missing file or a directory", function()
    local p = tmp()
    os.remove(p)
    assert.are.equal("halua: load: cannot open " .. p .. ": No such file or directory", err_of(hl.load, p))
    assert.are.equal("halua: loadz: cannot open " .. p .. ": No such file or directory", err_of(hl.loadz, p))
    assert.are.equal("halua: load: cannot open /: Is a directory", err_of(hl.load, "/"))
    assert.are.equal("halua: loadz: cannot open /: Is a directory", err_of(hl.loadz, "/"))
    assert.are.equal("halua: save: cannot open /nonexistent-halua-dir/x.npy: No such file or directory",
                     err_of(hl.save, "/nonexistent-halua-dir/x.npy", hl.ones({2})))
    assert.are.equal("halua: savez: cannot open /nonexistent-halua-dir/x.npz: No such file or directory",
                     err_of(hl.savez, "/nonexistent-halua-dir/x.npz", {hl.ones({2})}))
  end)

  it("a file truncated anywhere: the header or the data, naming the file and the sizes", function()
    local p, bytes = real_npy()
    assert.are.equal(176, #bytes)
    local want = {
      [0] = "empty file (not a .npy file)",
      [3] = "truncated header (the file ends after 3 bytes)",
      [8] = "truncated header (the file ends after 8 bytes)",
      [9] = "truncated header (the file ends after 9 bytes)",
      [10] = "truncated header (expected 118 bytes, got 0)",
      [60] = "truncated header (expected 118 bytes, got 50)",
      [127] = "truncated header (expected 118 bytes, got 117)",
      [128] = "truncated data (expected 48 bytes, got 0)",
      [148] = "truncated data (expected 48 bytes, got 20)",
      [175] = "truncated data (expected 48 bytes, got 47)",
    }
    for len, msg in pairs(want) do
      write_bytes(p, bytes:sub(1, len))
      assert.are.equal("halua: load: " .. p .. ": " .. msg, err_of(hl.load, p))
    end
  end)

  it("bad magic, an unknown version, a .npz given to hl.load", function()
    local p, bytes = real_npy()
    for _, bad in ipairs {"\146" .. bytes:sub(2), bytes:sub(1, 1) .. "numpy" .. bytes:sub(7), "hello, world", "\147NUX"} do
      write_bytes(p, bad)
      assert.are.equal("halua: load: " .. p .. ": bad magic (not a .npy file)", err_of(hl.load, p))
    end
    write_bytes(p, bytes:sub(1, 6) .. "\4\0" .. bytes:sub(9))
    assert.are.equal("halua: load: " .. p .. ": unsupported .npy format version 4.0", err_of(hl.load, p))
    write_bytes(p, bytes:sub(1, 6) .. "\1\1" .. bytes:sub(9))
    assert.are.equal("halua: load: " .. p .. ": unsupported .npy format version 1.1", err_of(hl.load, p))
    hl.savez(p, {hl.ones({2})})
    assert.are.equal("halua: load: " .. p .. ": this is a zip archive (a .npz file: read it with hl.loadz)", err_of(hl.load, p))
  end)

  it("bad headers, each saying what is wrong", function()
    local p = tmp()
    local cases = {
      {"garbage garbage garbage", "not a Python dict"},
      {"[1, 2, 3]", "not a Python dict"},
      {"{descr: '<f4'}", "expected a quoted key"},
      {"{'descr' '<f4'}", "expected ':' after 'descr'"},
      {"{'descr': '<f4' 'shape': ()}", "expected ',' or '}' after the value of 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4'}", "key 'descr' repeated"},
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape' key"},
      {"{'shape': (), 'fortran_order': False}", "no 'descr' key"},
      {"{'descr': '<f4', 'shape': ()}", "no 'fortran_order' key"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': ()}", "fortran_order is not True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsehood, 'shape': ()}", "fortran_order is not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}", "shape is not a tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative extent in shape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "shape extent too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "shape [4294967296,4294967296] is too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "text after the dict"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "expected ',' or '}' after the value of 'descr'"},
      {"{'descr': '<f4", "unterminated string"},
      {"{'descr': 'a\\b', 'fortran_order': False, 'shape': ()}", "unsupported string literal (an escape)"},
      {"{'descr': , 'fortran_order': False, 'shape': ()}", "'descr' has no value"},
    }
    for _, c in ipairs(cases) do
      write_bytes(p, npy_bytes(c[1], string.rep("\0", 64)))
      assert.are.equal("halua: load: " .. p .. ": bad header: " .. c[2], err_of(hl.load, p))
    end
    write_bytes(p, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }\0\0", "", 1, true))
    assert.are.equal("halua: load: " .. p .. ": bad header: text after the dict", err_of(hl.load, p))
    write_bytes(p, "\147NUMPY\2\0\255\255\255\127")
    assert.are.equal("halua: load: " .. p .. ": bad header: its length 2147483647 is implausible", err_of(hl.load, p))
  end)

  it("a garbage header in a real file", function()
    local p, bytes = real_npy()
    write_bytes(p, bytes:sub(1, 10) .. string.rep("?", 117) .. "\n" .. bytes:sub(129))
    assert.are.equal("halua: load: " .. p .. ": bad header: not a Python dict", err_of(hl.load, p))
    write_bytes(p, bytes:sub(1, 8) .. "\200\0" .. bytes:sub(11))   -- a header length past the end
    assert.are.equal("halua: load: " .. p .. ": truncated header (expected 200 bytes, got 166)", err_of(hl.load, p))
  end)

  it("dtypes halua does not have, written by NumPy, name the dtype", function()
    local cases = {
      {"np.zeros(3, 'complex256')", "'<c32'"},
      {"np.array([1, 'a'], dtype=object)", "'|O'"},
      {"np.array(['abc', 'de'])", "'<U3'"},
      {"np.zeros(3, 'uint32')", "'<u4'"},
      {"np.zeros(3, 'int16')", "'<i2'"},
      {"np.zeros(3, [('a', '<i4'), ('b', '<f8')])", "[('a', '<i4'), ('b', '<f8')]"},
      {"np.zeros(3, 'datetime64[s]')", "'<M8[s]'"},
    }
    local lines = {}
    for i, c in ipairs(cases) do
      c.path = tmp()
      lines[i] = string.format("with open(%q, 'wb') as f: np.save(f, %s)", c.path, c[1])
    end
    python(table.concat(lines, "\n"))
    for _, c in ipairs(cases) do
      assert.are.equal("halua: load: " .. c.path .. ": unsupported dtype " .. c[2] ..
                       " (halua reads float32 float64 float16 int32 int64 int8 uint8 bool complex64 complex128: '<f4' '<f8' '<f2' '<i4' '<i8' '|i1' '|u1' '|b1' '<c8' '<c16')",
                       err_of(hl.load, c.path))
    end
    local p = tmp()
    write_bytes(p, npy_bytes("{'descr': '|f4', 'fortran_order': False, 'shape': (), }", "\0\0\0\0"))
    assert.truthy(err_of(hl.load, p):find(": unsupported dtype '|f4' (", 1, true))
  end)

  it("more than 8 dimensions", function()
    local p = tmp()
    python(string.format("with open(%q, 'wb') as f: np.save(f, np.zeros((1,) * 9, 'float32'))", p))
    assert.are.equal("halua: load: " .. p .. ": the array has 9 dimensions; halua arrays have at most 8", err_of(hl.load, p))
  end)

  it("a truncated archive, at any length", function()
    local p = tmp()
    hl.savez(p, {a = sample("float32", {3, 4}), b = sample("int32", {5})})
    local bytes = read_bytes(p)
    for _, len in ipairs {0, 1, 4, 30, 100, 200, math.floor(#bytes / 2), #bytes - 30, #bytes - 22, #bytes - 1} do
      write_bytes(p, bytes:sub(1, len))
      local msg = len == 0 and "empty file (not a .npz archive)"
                  or "not a zip archive (no end of central directory record; truncated or not a .npz file)"
      assert.are.equal("halua: loadz: " .. p .. ": " .. msg, err_of(hl.loadz, p))
    end
  end)

  it("a .npy given to hl.loadz", function()
    local p = real_npy()
    assert.are.equal("halua: loadz: " .. p .. ": this is a .npy file, not a .npz archive (read it with hl.load)", err_of(hl.loadz, p))
  end)

  it("corrupt members: CRC-32, bad .npy contents, sizes and offsets", function()
    local p = tmp()
    hl.savez(p, {a = sample("float32", {3, 4}), b = sample("int32", {5})})
    local bytes = read_bytes(p)
    local a_start = 30 + #"a.npy" + 20   -- local header, name, zip64 extra field
    local function patch(at, s) return bytes:sub(1, at - 1) .. s .. bytes:sub(at + #s) end
    local function loadz_err(s)
      write_bytes(p, s)
      return err_of(hl.loadz, p)
    end
    -- a flipped data byte
    local got = loadz_err(patch(a_start + 128 + 5, "X"))
    assert.truthy(got:find("^halua: loadz: " .. p:gsub("%p", "%%%0") .. ": member a%.npy: CRC%-32 mismatch %(recorded %x+, computed %x+%): the data is corrupt$"), got)
    -- a flipped magic byte: the CRC explains it
    got = loadz_err(patch(a_start + 1, "N"))
    assert.truthy(got:find(": member a.npy: CRC-32 mismatch", 1, true), got)
    -- the same with a matching CRC: the .npy error, naming the member
    write_bytes(p, patch(a_start + 1, "N"))
    python(string.format([[
import zlib, struct
b = bytearray(open(%q, 'rb').read())
cd = b.find(b'PK\x01\x02')   # a.npy's central directory entry
size = struct.unpack('<I', b[cd + 20:cd + 24])[0]
b[cd + 16:cd + 20] = struct.pack('<I', zlib.crc32(bytes(b[%d:%d + size])))
open(%q, 'wb').write(bytes(b))]], p, a_start, a_start, p))
    assert.are.equal("halua: loadz: " .. p .. ": member a.npy: bad magic (not a .npy file)", err_of(hl.loadz, p))
    -- a local header offset past the end of the file
    local cd = bytes:find("PK\1\2", 1, true)
    got = loadz_err(patch(cd + 42, "\255\255\0\0"))
    assert.are.equal("halua: loadz: " .. p .. ": member a.npy: corrupt archive: the local header lies outside the file", got)
    -- a stored member whose sizes disagree
    got = loadz_err(patch(cd + 20, "\1\0\0\0"))
    assert.truthy(got:find("^halua: loadz: .*: member a%.npy: corrupt archive: a stored member's sizes differ %(1 and %d+ bytes%)$"), got)
    -- sizes running past the end of the file
    got = loadz_err(patch(cd + 20, "\0\0\1\0\0\0\1\0"))
    assert.truthy(got:find(": member a.npy: truncated archive: the member's data (65536 bytes at offset 55) runs past the end of the file (", 1, true), got)
    -- a central directory entry that is not one
    got = loadz_err(patch(cd, "XX"))
    assert.are.equal("halua: loadz: " .. p .. ": corrupt archive: bad central directory entry 1", got)
    -- a central directory that claims to lie past the end
    local eocd = #bytes - 21
    got = loadz_err(patch(eocd + 16, "\255\255\255\0"))
    assert.are.equal("halua: loadz: " .. p .. ": corrupt archive: the central directory lies outside the file", got)
    got = loadz_err(patch(eocd + 8, "\200\0\200\0"))
    assert.truthy(got:find("corrupt archive: 200 members cannot fit a", 1, true), got)
    got = loadz_err(patch(eocd + 4, "\1\0"))
    assert.are.equal("halua: loadz: " .. p .. ": multi-disk zip archives are not supported", got)
  end)

  it("compressed members: corrupt or truncated deflate data", function()
    local p = tmp()
    python(string.format("with open(%q, 'wb') as f: np.savez_compressed(f, w=np.arange(5000, dtype='float64'))", p))
    local bytes = read_bytes(p)
    local start = 30 + #"w.npy" + 20
    local cd = bytes:find("PK\1\2", 1, true)
    local function patch(at, s) return bytes:sub(1, at - 1) .. s .. bytes:sub(at + #s) end
    write_bytes(p, patch(start + 40, "\255\255\255\255\255\255"))
    local got = err_of(hl.loadz, p)
    assert.truthy(got:find("^halua: loadz: .*: member w%.npy: ") and
                  (got:find("corrupt compressed data (zlib: ", 1, true) or got:find("CRC-32 mismatch", 1, true)), got)
    -- the member's recorded compressed size cut short: the deflate stream ends early
    local csize = bytes:byte(cd + 20) + 256 * bytes:byte(cd + 21) + 65536 * bytes:byte(cd + 22)
    local short = csize - 20
    write_bytes(p, patch(cd + 20, string.char(short % 256, math.floor(short / 256) % 256, math.floor(short / 65536))))
    assert.are.equal("halua: loadz: " .. p .. ": member w.npy: truncated compressed data", err_of(hl.loadz, p))
  end)

  it("a deflated member that records more bytes than its compressed bytes can hold is refused before reading", function()
    -- a few hundred bytes whose .npy header claims 4 GB, the zip entry agreeing: the reader sized
    -- the array by them and allocated 4 GB before finding the data short (found by fuzz/npz_fuzz.c)
    local p = tmp()
    python(string.format([[
import struct, zlib
npy = b"\x93NUMPY\x01\x00" + struct.pack('<H', 118) + b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000,), }".ljust(117) + b"\n"
with zipfile.ZipFile(%q, 'w', compression=zipfile.ZIP_DEFLATED) as z:
    z.writestr('w.npy', npy + bytes(64))
b = bytearray(open(%q, 'rb').read())
for at in (22, b.find(b'PK\x01\x02') + 24):   # the local header's and the directory's sizes
    b[at:at + 4] = struct.pack('<I', 4000000128)
open(%q, 'wb').write(bytes(b))]], p, p, p))
    local got = err_of(hl.loadz, p)
    assert.truthy(got:find("^halua: loadz: .*: member w%.npy: corrupt archive: %d+ deflated bytes cannot hold the recorded 4000000128 bytes$"), got)
  end)

  it("members that are not .npy arrays, or not stored or deflated", function()
    local p1, p2, p3 = tmp(), tmp(), tmp()
    python(string.format([[
with zipfile.ZipFile(%q, 'w') as z:
    z.writestr('a.npy', b'')
    z.writestr('notes.txt', 'hello')
import io
buf = io.BytesIO(); np.save(buf, np.arange(3))
with zipfile.ZipFile(%q, 'w', compression=zipfile.ZIP_BZIP2) as z:
    z.writestr('x.npy', buf.getvalue())
with zipfile.ZipFile(%q, 'w') as z:
    z.writestr('x.npy', buf.getvalue())
    z.writestr('x.npy', buf.getvalue())]], p1, p2, p3))
    assert.are.equal("halua: loadz: " .. p1 .. ": member a.npy: empty file (not a .npy file)", err_of(hl.loadz, p1))
    assert.are.equal("halua: loadz: " .. p2 .. ": member x.npy: compression method 12 is not supported (only stored and deflated members are read)",
                     err_of(hl.loadz, p2))
    assert.are.equal("halua: loadz: " .. p3 .. ": member x.npy: the archive holds it twice", err_of(hl.loadz, p3))
    python(string.format([[
with zipfile.ZipFile(%q, 'w') as z:
    z.writestr('notes.txt', 'hello')]], p1))
    assert.are.equal("halua: loadz: " .. p1 .. ": member notes.txt: not a .npy member (an .npz file holds only name.npy members)",
                     err_of(hl.loadz, p1))
  end)

  it("unsupported dtypes inside an archive name the member", function()
    local p = tmp()
    python(string.format("with open(%q, 'wb') as f: np.savez(f, ok=np.zeros(2), c=np.zeros(2, 'uint16'))", p))
    assert.are.equal("halua: loadz: " .. p .. ": member c.npy: unsupported dtype '<u2' (halua reads float32 float64 float16 int32 int64 int8 uint8 bool complex64 complex128: '<f4' '<f8' '<f2' '<i4' '<i8' '|i1' '|u1' '|b1' '<c8' '<c16')",
                     err_of(hl.loadz, p))
  end)

  it("randomly damaged files never crash: each gives an array or an error naming the file", function()
    local npy, fnpy, npz, cnpz = tmp(), tmp(), tmp(), tmp()
    hl.save(npy, sample("float64", {3, 4}))
    write_bytes(fnpy, npy_bytes("{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }", string.rep("\0\0\0\7", 6)))
    hl.savez(npz, {a = sample("float32", {2, 3}), b = sample("bool", {5}), c = sample("int64", {})})
    python(string.format("with open(%q, 'wb') as f: np.savez_compressed(f, a=np.arange(300.0), b=np.ones((4, 5), 'u1'))", cnpz))
    math.randomseed(20240611)
    local p = tmp()
    local function damage(bytes)
      local n, op = #bytes, math.random(4)
      if op == 1 then return bytes:sub(1, math.random(0, n - 1)) end   -- truncated
      if op == 2 then                                                   -- a few bytes changed
        for _ = 1, math.random(3) do
          local at = math.random(n)
          bytes = bytes:sub(1, at - 1) .. string.char(math.random(0, 255)) .. bytes:sub(at + 1)
        end
        return bytes
      end
      local at = math.random(n)
      if op == 3 then return bytes:sub(1, at) .. bytes:sub(math.random(n)) end                -- spliced
      return bytes:sub(1, at) .. string.rep(string.char(math.random(0, 255)), math.random(8)) .. bytes:sub(at + 1)
    end
    local seen = {ok = 0, err = 0}
    for _, base in ipairs {{npy, hl.load, "load"}, {fnpy, hl.load, "load"}, {npz, hl.loadz, "loadz"}, {cnpz, hl.loadz, "loadz"}} do
      local bytes = read_bytes(base[1])
      for _ = 1, 300 do
        write_bytes(p, damage(bytes))
        local ok, r = pcall(base[2], p)
        if ok then
          seen.ok = seen.ok + 1
          if base[3] == "load" then assert.is_true(hl.core.is_array(r)) else assert.are.equal("table", type(r)) end
        else
          seen.err = seen.err + 1
          local prefix = "halua: " .. base[3] .. ": " .. p .. ": "
          assert(tostring(r):sub(1, #prefix) == prefix, "the error does not name the file: " .. tostring(r))
        end
      end
    end
    assert.is_true(seen.ok > 0 and seen.err > 600)
  end)

  it("bad arguments", function()
    local x = hl.ones({2})
    assert.are.equal("halua: save: the path must be a string, got number", err_of(hl.save, 1, x))
    assert.are.equal("halua: save: the path is empty", err_of(hl.save, "", x))
    assert.are.equal("halua: save: the path holds a NUL byte", err_of(hl.save, "a\0b", x))
    assert.are.equal("halua: save: nothing to save (hl.save(path, array))", err_of(hl.save, tmp()))
    assert.are.equal("halua: save: the value is a function, expected an array", err_of(hl.save, tmp(), print))
    assert.are.equal("halua: save: the value: ragged nested table (rows of different lengths)", err_of(hl.save, tmp(), {{1, 2}, {3}}))
    assert.are.equal("halua: load: the path must be a string, got nil", err_of(hl.load))
    assert.are.equal("halua: loadz: the path must be a string, got table", err_of(hl.loadz, {}))
    assert.are.equal("halua: savez: the path must be a string, got boolean", err_of(hl.savez, true, {}))
    assert.are.equal("halua: savez: argument 2 is a string, expected a table of arrays ({name = array} or {array, ...})",
                     err_of(hl.savez, tmp(), "x"))
    assert.are.equal("halua: savez: pass one table of arrays, or arrays as separate arguments", err_of(hl.savez, tmp(), {x}, x))
    assert.are.equal("halua: savez: key true is not a name (use string names, or a list for arr_0, arr_1, ...)",
                     err_of(hl.savez, tmp(), {[true] = x}))
    assert.are.equal("halua: savez: key 1.5 is not a name (use string names, or a list for arr_0, arr_1, ...)",
                     err_of(hl.savez, tmp(), {[1.5] = x}))
    assert.are.equal("halua: savez: an array name is empty", err_of(hl.savez, tmp(), {[""] = x}))
    assert.are.equal('halua: savez: the array name "a\\0" holds a NUL byte', err_of(hl.savez, tmp(), {["a\0"] = x}))
    assert.are.equal("halua: savez: the list of arrays has holes (2 arrays, numbered up to 3)", err_of(hl.savez, tmp(), {x, nil, x}))
    assert.are.equal("halua: savez: the name arr_0 is taken by array 1 of the list", err_of(hl.savez, tmp(), {x, arr_0 = x}))
    assert.are.equal("halua: savez: array w is a function, expected an array", err_of(hl.savez, tmp(), {w = print}))
    assert.are.equal("halua: savez: array 2 is a string, expected an array", err_of(hl.savez, tmp(), {x, "y"}))
  end)

  it("an engine error while making the copy to write is reported under save and savez", function()
    local p = tmp()
    os.remove(p)
    local want = "axis 1 of shape [2147483748] is too long for one pipeline (at most 2^31-1 elements per axis)"
    -- a broadcast: one element on the host until it is copied. Placing it on a GPU copies it, so
    -- under a GPU default device hl.zeros meets the error itself (under its own name); the
    -- broadcast for save is then made on the host
    local before = hl.default_device()
    if before ~= "cpu" then
      assert.are.equal("halua: full: " .. want, err_of(hl.zeros, {2 ^ 31 + 100}, "uint8"))
      hl.default_device("cpu")
    end
    local ok, huge = pcall(hl.zeros, {2 ^ 31 + 100}, "uint8")
    hl.default_device(before)
    assert(ok, huge)
    assert.are.equal("halua: save: " .. want, err_of(hl.save, p, huge))
    assert.are.equal("halua: savez: " .. want, err_of(hl.savez, p, {huge}))
    assert.is_nil(io.open(p, "rb"))
  end)

  it("an .npz whose local header names a member otherwise than the central directory is refused", function()
    local p = tmp() .. ".npz"
    hl.savez(p, {w = hl.ones(3)})
    local f = assert(io.open(p, "rb"))
    local bytes = f:read("*a")
    f:close()
    local at = bytes:find("w.npy", 1, true)   -- the local header comes first
    f = assert(io.open(p, "wb"))
    f:write(bytes:sub(1, at - 1) .. "x" .. bytes:sub(at + 1))
    f:close()
    local ok, e = pcall(hl.loadz, p)
    os.remove(p)
    assert.is_false(ok)
    assert.truthy(tostring(e):find("corrupt archive: the member's local header names it 'x.npy', the central directory 'w.npy'", 1, true),
                  tostring(e))
  end)

  it("a save replaces the previous file only once the new one is whole (write errors, SIGKILL)", function()
    local root = debug.getinfo(1, "S").source:match("^@(.*/)tests/lua/") or "./"
    local function q(x) return "'" .. x:gsub("'", "'\\''") .. "'" end
    local function ls_tmp(p)
      local d, base = p:match("^(.*)/([^/]*)$")
      local pipe = io.popen("ls -A " .. q(d) .. " | grep -c -F " .. q(base .. ".tmp-") .. " || true")
      local n = tonumber(pipe:read("*a")) or 0
      pipe:close()
      return n
    end
    for _, kind in ipairs({"save", "savez"}) do
      local p = tmp() .. (kind == "save" and ".npy" or ".npz")
      local good = hl.arange(10):astype("float32")
      if kind == "save" then hl.save(p, good) else hl.savez(p, {w = good}) end
      -- a write error part way (the file size limit): reported, and the previous file stays
      local code = string.format([[local hl = require "halua"
        local big = hl.ones({1024, 1024})
        local ok, e = pcall(%s, %q, %s)
        print(ok, e)]], kind == "save" and "hl.save" or "hl.savez", p, kind == "save" and "big" or "{w = big}")
      local pipe = io.popen(string.format("cd %s && trap '' XFSZ && ulimit -f 200 && luajit -e %s 2>&1", q(root), q(code)))
      local out = pipe:read("*a")
      pipe:close()
      assert.truthy(out:find("false\thalua: " .. kind .. ": " .. p .. ": write error", 1, true) or
                    out:find("false\thalua: " .. kind .. ": write error", 1, true), out)
      local back = kind == "save" and hl.load(p) or hl.loadz(p).w
      assert.are.same(good:totable(), back:totable())
      assert.are.equal(0, ls_tmp(p))
      -- killed (SIGKILL) at times spread over a large save: the previous file always loads whole
      for i = 1, 4 do
        local writer = string.format([[local hl = require "halua"
          local big = hl.ones({2048, 2048})
          io.stdout:write("ready\n") io.stdout:flush()
          while true do %s(%q, %s) end]], kind == "save" and "hl.save" or "hl.savez", p, kind == "save" and "big" or "{w = big}")
        os.execute(string.format("cd %s && (luajit -e %s > /dev/null 2>&1 & pid=$!; sleep 0.%d; kill -9 $pid; wait $pid) 2>/dev/null",
                                 q(root), q(writer), 2 + 2 * i))
        local ok, v = pcall(kind == "save" and hl.load or hl.loadz, p)
        assert.is_true(ok, tostring(v))
        v = kind == "save" and v or v.w
        assert.is_true(v.size == 10 or v.size == 2048 * 2048, "a loaded checkpoint of " .. v.size .. " elements")
        os.execute("rm -f " .. q(p) .. ".tmp-*")
      end
      os.remove(p)
    end
  end)

  it("traced values cannot be saved, and a failed save leaves no file", function()
    local p = tmp()
    os.remove(p)
    local f = hl.jit(function(x)
      hl.save(p, x)
      return x
    end)
    assert.are.equal("halua: save: cannot save a traced value inside hl.jit (return it from the function and save the result)",
                     err_of(f, hl.ones({2})))
    assert.is_nil(io.open(p, "rb"))
    local g = hl.jit(function(x)
      hl.savez(p, {ok = hl.ones({2}), t = x})
      return x
    end)
    assert.are.equal("halua: savez: cannot save a traced value inside hl.jit (return it from the function and save the result)",
                     err_of(g, hl.ones({2})))
    assert.is_nil(io.open(p, "rb"))
  end)
end)

-- ---------------------------------------------------------------- GPU arrays

describe("arrays on a GPU", function()
  after_each(cleanup)
  local have_cuda = #hl.devices() > 1

  it("are copied to the host to be saved, and loaded arrays follow the default device" ..
     (have_cuda and "" or " (skipped: no CUDA device here)"), function()
    if not have_cuda then return end
    local x = sample("float32", {3, 4})
    local g = hl.device_put(x, "cuda")
    local p, q = tmp(), tmp()
    hl.save(p, hl.transpose(g))
    hl.savez(q, {g = g})
    assert_same(hl.transpose(x) * 1, hl.load(p))
    assert_same(x, hl.loadz(q).g)
    local before = hl.default_device()
    hl.default_device("cuda")
    local ok, err = pcall(function()
      assert.are.equal("cuda:1", hl.load(p).device)
      assert.are.equal("cuda:1", hl.loadz(q).g.device)
      assert_same(x, hl.loadz(q).g:to("cpu"))
    end)
    hl.default_device(before)
    assert(ok, err)
  end)
end)
