-- halua's flagship sample: a two-layer perceptron trained on the real 8x8 digits set (1,797
-- images; the last fifth held out for testing). The whole training step -- forward pass, loss,
-- gradient and Adam update -- is one jitted function, compiled once to one pipeline.
--
--   luajit samples/digits_mlp.lua [--epochs N] [--hidden N] [--batch N] [--lr X] [--seed N]
--                                 [--checkpoint PATH] [--min-accuracy P]
local hl = require "halua"
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local digits = require "digits"

local opts = digits.options("digits_mlp", {
  epochs = 20, hidden = 512, batch = 16, lr = 2e-3, seed = 0, min_accuracy = 0.97,
  checkpoint = (os.getenv("TMPDIR") or "/tmp") .. "/halua_digits_mlp.npz"},
  "[--epochs N] [--hidden N] [--batch N] [--lr X] [--seed N] [--checkpoint PATH] [--min-accuracy P]")

local t_start = digits.now()
local xtr, ytr, xte, yte = digits.load()
local ctr, cte = digits.classes(ytr), digits.classes(yte)
-- standardised pixels (statistics of the training set only; +0.5 keeps the always-blank corners at 0)
local mean, scale = hl.mean(xtr, 1), hl.std(xtr, 1) + 0.5
xtr, xte = (xtr - mean) / scale, (xte - mean) / scale
local ntrain = xtr.shape[1]
print(string.format("digits: %d training and %d test images, %d pixels each; MLP 64-%d-10, Adam lr %g (cosine decay), batch %d",
                    ntrain, xte.shape[1], xtr.shape[2], opts.hidden, opts.lr, opts.batch))

-- parameters: a pytree (a Lua table of arrays); logits(p, x) = relu(x w1 + b1) w2 + b2
local params, logits = digits.mlp(opts.seed, opts.hidden)
-- Adam on minibatches, with progress lines, the test accuracy and a checkpoint round trip
-- (samples/digits.lua): the step, from logits to the updated parameters, is one jitted function
digits.train("digits_mlp", opts, params, logits, {xtr = xtr, ctr = ctr, xte = xte, cte = cte, t_start = t_start})
