-- Ends leases of one API key, atomically and once (see KeyStore::give_back).
-- KEYS[1] usage counter of the day   KEYS[2] burst window   KEYS[3] sequence   KEYS[4] this
-- give-back's record ("b")   KEYS[5 .. 4 + ARGV[2]] records of leases whose answer was lost
-- KEYS[5 + ARGV[2] ..] records of ended leases
-- ARGV[1] unspent units   ARGV[2] lost leases   ARGV[3] block to close ("": none)
-- ARGV[4] its places spent   ARGV[5] its last spent (ms)   ARGV[6] record TTL (ms)
-- Returns the units given back (0 when this give-back was already applied).
if redis.call('EXISTS', KEYS[4]) == 1 then return 0 end
local back, lost, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[6]
for i = 5, #KEYS do
  local rec = redis.call('GET', KEYS[i])
  if i < 5 + lost then
    local u = rec and string.match(rec, '^g:(%d+):')
    if u then back = back + tonumber(u) end
    -- Settled: a late run of that lease grants nothing.
    redis.call('SET', KEYS[i], 'x', 'PX', ttl)
  elseif rec then
    redis.call('DEL', KEYS[i])
  end
end
close_block(ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]))
if back > 0 then
  local n = math.min(back, tonumber(redis.call('GET', KEYS[1]) or '0'))
  if n > 0 then redis.call('DECRBY', KEYS[1], n) end
end
redis.call('SET', KEYS[4], 'b', 'PX', ttl)
return back
