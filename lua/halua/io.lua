-- .npy and .npz files: hl.save, hl.load, hl.savez, hl.loadz (installed into hl by init.lua).
-- The formats are NumPy's (engine/formats/hl_npy.c, hl_npz.c, hl_zip_*.c): hl.save writes the same
-- bytes as numpy.save, hl.savez the same as numpy.savez. Paths are used as given (NumPy appends
-- .npy or .npz to a name without it; these do not).
return function(hl, core, shared)
  local util = require "halua.util"
  local is_array = core.is_array

  local fail = util.fail

  local function check_path(op, path)
    if type(path) ~= "string" then fail("%s: the path must be a string, got %s", op, type(path)) end
    if path == "" then fail("%s: the path is empty", op) end
    if path:find("\0", 1, true) then fail("%s: the path holds a NUL byte", op) end
  end

  -- an array, or a number, boolean or nested table made into one (on the host: it is only written)
  local function as_array(op, x, what)
    if is_array(x) then return x end
    local t = type(x)
    if t == "number" or t == "boolean" or t == "table" then
      local ok, r = pcall(core.array, x)
      if ok then return r end
      fail("%s: %s: %s", op, what, (tostring(r):gsub("^halua: array: ", "")))
    end
    fail("%s: %s is a %s, expected an array", op, what, t)
  end

  -- an engine error on the way (a copy from the GPU, say) reported under the file op's name
  local function as_op(op, f, ...)
    local ok, err = pcall(f, ...)
    if ok then return end
    local msg = tostring(err)
    if msg:sub(1, #op + 9) ~= "halua: " .. op .. ":" then msg = msg:gsub("^halua: [%w_]+: ", "halua: " .. op .. ": ", 1) end
    error(msg, 0)
  end

  -- loaded arrays go where arrays made from Lua values go: the default device (a failed copy
  -- there is the load's error)
  local placed = shared.placed

  function hl.save(path, x)
    check_path("save", path)
    if x == nil then fail("save: nothing to save (hl.save(path, array))") end
    as_op("save", core.npy_save, path, as_array("save", x, "the value"))
  end

  function hl.load(path)
    check_path("load", path)
    return placed(core.npy_load(path), "load")
  end

  -- savez(path, {name = array, ...}) or savez(path, {a, b, ...}) (arr_0, arr_1, ...), or both in
  -- one table; savez(path, a, b, ...) as the list. Named arrays come first, sorted by name.
  function hl.savez(path, tbl, ...)
    check_path("savez", path)
    if is_array(tbl) then tbl = {tbl, ...}
    elseif select("#", ...) > 0 then fail("savez: pass one table of arrays, or arrays as separate arguments")
    elseif type(tbl) ~= "table" then
      fail("savez: argument 2 is a %s, expected a table of arrays ({name = array} or {array, ...})", type(tbl))
    end
    local named, npos, maxpos = {}, 0, 0
    for k in pairs(tbl) do
      if type(k) == "string" then
        if k == "" then fail("savez: an array name is empty") end
        if k:find("\0", 1, true) then fail("savez: the array name %q holds a NUL byte", k) end
        named[#named + 1] = k
      elseif type(k) == "number" and k >= 1 and k == math.floor(k) then
        npos, maxpos = npos + 1, math.max(maxpos, k)
      else
        fail("savez: key %s is not a name (use string names, or a list for arr_0, arr_1, ...)", tostring(k))
      end
    end
    if npos ~= maxpos then fail("savez: the list of arrays has holes (%d arrays, numbered up to %d)", npos, maxpos) end
    table.sort(named)
    local names, arrays = {}, {}
    for _, k in ipairs(named) do
      names[#names + 1] = k
      arrays[#arrays + 1] = as_array("savez", tbl[k], "array " .. k)
    end
    for i = 1, npos do
      local k = "arr_" .. (i - 1)
      if tbl[k] ~= nil then fail("savez: the name %s is taken by array %d of the list", k, i) end
      names[#names + 1] = k
      arrays[#arrays + 1] = as_array("savez", tbl[i], "array " .. i)
    end
    as_op("savez", core.npz_save, path, names, arrays)
  end

  -- loadz(path) -> {name = array, ...}, {name, ...} (the second: the names in the archive's order)
  function hl.loadz(path)
    check_path("loadz", path)
    local arrays, names = core.npz_load(path)
    for _, k in ipairs(names) do arrays[k] = placed(arrays[k], "loadz") end
    return arrays, names
  end
end
