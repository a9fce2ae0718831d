-- A lease of quota units and burst places for one API key, atomically (see KeyStore::lease).
-- KEYS[1] usage counter of the UTC day   KEYS[2] burst window: zset of blocks "<seq>:<places>"
-- scored by their end (ms)   KEYS[3] sequence   KEYS[4] this lease's record ("g:<units>:
-- <places>:<block>"; "x" once settled as lost)   KEYS[5..] records of ended leases (deleted)
-- ARGV[1] daily quota   ARGV[2] burst (0: unlimited, no window kept)   ARGV[3] now (ms)
-- ARGV[4] window (ms)   ARGV[5] usage TTL (s)   ARGV[6], ARGV[7] units min, want
-- ARGV[8], ARGV[9] places min, want   ARGV[10] hold (ms)   ARGV[11] block to close ("": none)
-- ARGV[12] its places spent   ARGV[13] its last spent (ms)   ARGV[14], ARGV[15] shares of what
-- is left that one lease may take (units, places)   ARGV[16] record TTL (ms; 0: no record)
-- ARGV[17] 1: the places granted renew ARGV[11] (replace it, counted as at least its places
-- spent until their end), else it is closed first
-- Returns {0, units, used, places, block} granted, {1, 0, used} quota exceeded,
-- {2, retry_after_ms} rate limited.
local quota, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local now, window, hold = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[10])
local umin, uwant = tonumber(ARGV[6]), tonumber(ARGV[7])
local pmin, pwant = tonumber(ARGV[8]), tonumber(ARGV[9])
local old, spent, last = ARGV[11], tonumber(ARGV[12]), tonumber(ARGV[13])
local record_ttl, renew = tonumber(ARGV[16]), ARGV[17] == '1'
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
-- The block a renewal replaces, while the window still counts it; any other is closed now.
local renewed = false
if renew and old ~= '' then
  local score = redis.call('ZSCORE', KEYS[2], old)
  renewed = score ~= false and tonumber(score) > now - window
else
  close_block(old, spent, last)
end
local function refuse(reply)
  if renewed then close_block(old, spent, last) end
  return reply
end
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
if used + umin > quota then
  return refuse({1, 0, used})
end
local places = 0
if burst > 0 and pwant > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
  local blocks = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
  local taken = 0
  for i = 1, #blocks, 2 do
    if not (renewed and blocks[i] == old) then
      local colon = string.find(blocks[i], ':', 1, true)
      taken = taken + (colon and tonumber(string.sub(blocks[i], colon + 1)) or 1)
    end
  end
  local free = math.max(burst - taken, 0)
  if free < pmin then
    return refuse({2, math.max(1, tonumber(blocks[2] or now) + window - now)})
  end
  -- Half of what is free beyond what a renewal carries (state::places_granted).
  local carried = renew and math.min(spent, free) or 0
  local share = carried + math.floor((free - carried) / tonumber(ARGV[15]))
  places = math.min(math.max(math.min(pwant, share), pmin), free)
end
local left = quota - used
local units = math.min(math.max(math.min(uwant, math.floor(left / tonumber(ARGV[14]))), umin), left)
if units > 0 then
  used = redis.call('INCRBY', KEYS[1], units)
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
local block = ''
if places > 0 then
  local counted = places
  if renewed then
    redis.call('ZREM', KEYS[2], old)
    counted = math.max(places, spent)
  elseif not renew and places <= pmin then
    -- A spot (state::spot): the one place a new block's asker needs, spent at once, ends now.
    hold = 0
  end
  block = redis.call('INCR', KEYS[3]) .. ':' .. counted
  redis.call('ZADD', KEYS[2], now + hold, block)
  redis.call('PEXPIRE', KEYS[2], (window + hold) * 2)
elseif renewed then
  close_block(old, spent, last)
end
if record_ttl > 0 and (units > 0 or places > 0) then
  redis.call('SET', KEYS[4], 'g:' .. units .. ':' .. places .. ':' .. block, 'PX', record_ttl)
end
return {0, units, used, places, block}
