-- Shared by lease.lua and give_back.lua (prepended): closes a place block of KEYS[2] (the
-- burst window), its unspent places leaving the window and its spent ones staying as one
-- block taken at the last of them (a new name from KEYS[3]). Closing twice does nothing.
local function close_block(block, spent, last)
  if block ~= '' and redis.call('ZREM', KEYS[2], block) == 1 and spent > 0 then
    local seq = redis.call('INCR', KEYS[3])
    redis.call('ZADD', KEYS[2], last, seq .. ':' .. spent)
  end
end
