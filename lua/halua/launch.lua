-- Runs a script as luajit would (scripts/halua script.lua args...), with one difference that
-- matters under mpirun: an error that escapes the script on one rank ends the whole job with
-- that rank's message (hl.dist.abort), where the other ranks would otherwise wait for it in
-- their next collective for ever.
--   luajit -e 'require("halua.launch").run()' script.lua args...   (what scripts/halua runs)
-- A script that calls os.exit itself exits as it asks.
local M = {}

local function report(msg)
  local hl = package.loaded.halua
  local started, rank, size = false, 0, 1
  if hl and rawget(hl, "dist") then started, rank, size = hl.dist.started() end   -- (never loaded: never started)
  if started and size > 1 then
    hl.dist.abort(string.format("halua: rank %d of %d failed: %s", rank, size, msg), 1)
  end
  io.stderr:write("luajit: ", msg, "\n")
  io.stderr:flush()
  os.exit(1)
end

-- Called from luajit's -e before it would run the script itself: arg is already the script's
-- (arg[0] the script, arg[1..] its arguments). Runs it, then exits (with the state closed, so
-- finalizers run), so luajit never gets to it.
function M.run()
  local script = arg and arg[0]
  if not script then report("halua.launch: no script given") end
  local chunk, err = loadfile(script)
  if not chunk then report(err) end
  local n = #arg
  local ok, msg = xpcall(function() return chunk(unpack(arg, 1, n)) end, function(e)
    if type(e) ~= "string" then
      local mt = getmetatable(e)
      e = mt and mt.__tostring and tostring(e) or "(error object is a " .. type(e) .. " value)"
    end
    return debug.traceback(e, 2)
  end)
  if not ok then report(msg) end
  os.exit(0, true)
end

return M
