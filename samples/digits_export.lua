-- Trains the digits MLP (as digits_mlp.lua does), exports its prediction -- raw pixels in, the
-- class of each image out -- as a standalone C library with hl.export, then builds and runs a C
-- program (samples/export/classify.c) that links the library and classifies the test set. The
-- two accuracies must agree; the program's binary needs no Lua, LLVM or Halide (ldd shows).
--
--   luajit samples/digits_export.lua [--epochs N] [--hidden N] [--out DIR] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = digits.options("digits_export", {
  epochs = 8, hidden = 256, batch = 16, lr = 2e-3, seed = 0, min_accuracy = 0.95,
  checkpoint = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_export.npz",
  out = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_export"},
  "[--epochs N] [--hidden N] [--out DIR] [--min-accuracy P]")

local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
local ctr, cte = digits.classes(ytr), digits.classes(yte)
local mean, scale = hl.mean(xtr, 1), hl.std(xtr, 1) + 0.5
local params, logits = digits.mlp(opts.seed, opts.hidden)
print(string.format("digits_export: training the MLP 64-%d-10 for %d epochs", opts.hidden, opts.epochs))
local trained = digits.train("digits_export", opts, params, logits,
                             {xtr = (xtr - mean) / scale, ctr = ctr, xte = (xte - mean) / scale, cte = cte, t_start = t_start})

-- the exported function: raw pixels in, classes (1-based) out; the trained parameters and the
-- standardisation are captured, so they are embedded in the library as constant data
local function predict(x) return hl.argmax(logits(trained, (x - mean) / scale), 2) end
local t0 = digits.now()
hl.export(predict, {xte}, opts.out, "digits_predict")
print(string.format("exported digits_predict to %s in %.1f s: digits_predict.h, libdigits_predict.a, libdigits_predict.so",
                    opts.out, digits.now() - t0))

local lua_correct = hl.sum(hl.eq(hl.jit(predict)(xte), cte)):item()
local n = xte.shape[1]
print(string.format("Lua: %d of %d test images classified correctly: accuracy %.2f%%", lua_correct, n, 100 * lua_correct / n))

-- the test set beside the library, for the C program
hl.save(opts.out .. "/test_images.npy", xte:astype("float32"))
hl.save(opts.out .. "/test_labels.npy", (cte - 1):astype("int32"))

local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  return ok == true or ok == 0, out
end
local q = function(s) return "'" .. s:gsub("'", "'\\''") .. "'" end
local exe = opts.out .. "/classify"
local build = string.format("cc -O2 %s -I %s %s -lm -lpthread -ldl -o %s", q(here .. "export/classify.c"), q(opts.out),
                            q(opts.out .. "/libdigits_predict.a"), q(exe))
print("$ " .. build)
local ok, out = sh(build)
if not ok then error("halua: digits_export: building the C program failed:\n" .. out, 0) end
local ok2, ldd = sh("ldd " .. q(exe))
local linked = {}
for lib in ldd:gmatch("\n?%s*(%S+)%s+=>") do linked[#linked + 1] = lib end
print("the C program links: " .. table.concat(linked, " "))
if ok2 and (ldd:find("luajit") or ldd:find("Halide") or ldd:find("LLVM") or ldd:find("halua")) then
  error("halua: digits_export: the C program links Lua, LLVM, Halide or halua:\n" .. ldd, 0)
end
print("$ " .. exe .. " " .. opts.out)
local ok3, result = sh(q(exe) .. " " .. q(opts.out))
io.write(result)
local c_correct = tonumber(result:match("C: (%d+) of"))
if not ok3 or c_correct ~= lua_correct then
  error(string.format("halua: digits_export: the C program classified %s images correctly, the Lua run %d",
                      tostring(c_correct), lua_correct), 0)
end
print("digits_export: the C library and the Lua run agree")
