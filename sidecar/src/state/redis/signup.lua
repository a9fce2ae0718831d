-- One signup counted in each counter, atomically per counter (see state/signups.rs).
-- KEYS[i]   a counter's hash: fields h0..h11 (five-minute buckets), d0..d23 (one-hour buckets),
--           each "<bucket>:<count>"
-- ARGV[1] the current five-minute bucket   ARGV[2] the current one-hour bucket   ARGV[3] TTL (s)
-- Returns {hour_1, day_1, hour_2, day_2, ...}: each counter's signups in the last hour and day,
-- this one included.
local function parse(v)
  if not v then return nil, 0 end
  local b, c = string.match(v, '^(%-?%d+):(%d+)$')
  return tonumber(b), tonumber(c) or 0
end

-- Adds the signup to the ring's current slot and returns the ring's count in its window.
local function ring(key, prefix, slots, current)
  local fields = {}
  for s = 0, slots - 1 do fields[s + 1] = prefix .. s end
  local values = redis.call('HMGET', key, unpack(fields))
  local here = current % slots
  local total = 0
  for s = 0, slots - 1 do
    local b, c = parse(values[s + 1])
    if s == here then
      -- an older bucket starts over; a newer one (a replica's clock ahead) takes the signup too
      if b and b >= current then c = c + 1 else b, c = current, 1 end
      redis.call('HSET', key, fields[s + 1], b .. ':' .. c)
    end
    if b and b > current - slots then total = total + c end
  end
  return total
end

local out = {}
for _, key in ipairs(KEYS) do
  out[#out + 1] = ring(key, 'h', 12, tonumber(ARGV[1]))
  out[#out + 1] = ring(key, 'd', 24, tonumber(ARGV[2]))
  redis.call('EXPIRE', key, ARGV[3])
end
return out
