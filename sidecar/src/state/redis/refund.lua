-- Gives back units of one API key's day, atomically (see StateStore::refund): never below zero,
-- and with a cap, never more than the cap in all that day (those are counted).
-- KEYS[1] usage counter of the day   KEYS[2] units given back under the cap that day
-- ARGV[1] units   ARGV[2] cap a day (-1: none, and not counted)   ARGV[3] TTL (s) of the counters
-- Returns the units given back.
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local cap = tonumber(ARGV[2])
local n = math.min(used, tonumber(ARGV[1]))
if cap >= 0 then
  n = math.min(n, math.max(cap - tonumber(redis.call('GET', KEYS[2]) or '0'), 0))
end
if n > 0 then
  redis.call('DECRBY', KEYS[1], n)
  if cap >= 0 then
    redis.call('INCRBY', KEYS[2], n)
    redis.call('EXPIRE', KEYS[2], ARGV[3])
  end
end
return n
