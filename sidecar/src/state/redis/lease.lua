-- A lease of quota units and burst places for one API key, atomically (see KeyStore::lease).
-- KEYS[1] usage counter of the UTC day   KEYS[2] burst window: zset of blocks "<seq>:<places>"
-- scored by their end (ms)   KEYS[3] sequence   KEYS[4] this lease's record ("g:<units>:
-- <places>:<block>"; "x" once settled as lost)   KEYS[5..] records of ended leases (deleted)
-- ARGV[1] daily quota   ARGV[2] burst (0: unlimited, no window kept)   ARGV[3] now (ms)
-- ARGV[4] window (ms)   ARGV[5] usage TTL (s)   ARGV[6], ARGV[7] units min, want
-- ARGV[8], ARGV[9] places min, want   ARGV[10] hold (ms)   ARGV[11] block to close ("": none)
-- ARGV[12] its places spent   ARGV[13] its last spent (ms)   ARGV[14], ARGV[15] shares of what
-- is left that one lease may take (units, places)   ARGV[16] record TTL (ms; 0: no record)
-- Returns {0, units, used, places, block} granted, {1, 0, used} quota exceeded,
-- {2, retry_after_ms} rate limited.
local quota, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local now, window, hold = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[10])
local umin, uwant = tonumber(ARGV[6]), tonumber(ARGV[7])
local pmin, pwant = tonumber(ARGV[8]), tonumber(ARGV[9])
local record_ttl = tonumber(ARGV[16])
for i = 5, #KEYS do redis.call('DEL', KEYS[i]) end
if record_ttl > 0 then
  -- The same lease again (a retry after a lost answer): the first grant, nothing more.
  local rec = redis.call('GET', KEYS[4])
  if rec then
    local used = tonumber(redis.call('GET', KEYS[1]) or '0')
    local u, p, b = string.match(rec, '^g:(%d+):(%d+):(.*)$')
    if u then return {0, tonumber(u), used, tonumber(p), b} end
    return {0, 0, used, 0, ''}
  end
end
close_block(ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13]))
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + umin > quota then
  return {1, 0, used}
end
local places = 0
if burst > 0 and pwant > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local blocks = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local taken = 0
  for i = 1, #blocks, 2 do
    local colon = string.find(blocks[i], ':', 1, true)
    taken = taken + (colon and tonumber(string.sub(blocks[i], colon + 1)) or 1)
  end
  local free = math.max(burst - taken, 0)
  if free < pmin then
    return {2, math.max(1, tonumber(blocks[2] or now) + window - now)}
  end
  places = math.min(math.max(math.min(pwant, math.floor(free / tonumber(ARGV[15]))), pmin), free)
end
local left = quota - used
local units = math.min(math.max(math.min(uwant, math.floor(left / tonumber(ARGV[14]))), umin), left)
if units > 0 then
  used = redis.call('INCRBY', KEYS[1], units)
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
local block = ''
if places > 0 then
  block = redis.call('INCR', KEYS[3]) .. ':' .. places
  -- A lone place the asker needs is spent at once: it ends now (no hold to outlive a crash).
  if places <= pmin then hold = 0 end
  redis.call('ZADD', KEYS[2], now + hold, block)
  redis.call('PEXPIRE', KEYS[2], (window + hold) * 2)
end
if record_ttl > 0 and (units > 0 or places > 0) then
  redis.call('SET', KEYS[4], 'g:' .. units .. ':' .. places .. ':' .. block, 'PX', record_ttl)
end
return {0, units, used, places, block}
