-- The tail's load (bench/tail.ts): like case.lua (the request from request.lua), but
-- each request's latency is timed here, on CLOCK_MONOTONIC, from the moment wrk asks for it to its
-- response. wrk's own histogram is not used: on the machines this was measured on, its mean was 2 to
-- 9 times the one connection's round trip (1 / requests per second), which no histogram of
-- real latencies can be. Pairing a response with its request needs one connection per thread, so
-- run it with as many threads as connections (-tN -cN).
-- At the end it prints one line: "BENCH_RESULT <json>", the shape of case.lua's.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } tail_timespec;
int clock_gettime(int clock, tail_timespec *now);
]]
local CLOCK_MONOTONIC = 1
local now_struct = ffi.new("tail_timespec")
local function now_us()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, now_struct)
  return tonumber(now_struct.tv_sec) * 1000000 + tonumber(now_struct.tv_nsec) / 1000
end

-- request.lua, beside this script (BENCH_WRK_DIR).
package.path = (os.getenv("BENCH_WRK_DIR") or ".") .. "/?.lua;" .. package.path
local request_of_case = require("request")

local prepared = nil
local threads = {}
local started = 0

-- Per thread: a histogram keyed by the latency kept to three significant digits (µs), its count,
-- sum and maximum.
histogram = {}
count = 0
sum = 0
max = 0

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prepared = request_of_case.format()
end

function request()
  started = now_us()
  return prepared
end

local function bucket(us)
  if us < 1000 then return math.floor(us) end
  local unit = 10 ^ (math.floor(math.log10(us)) - 2)
  return math.floor(us / unit) * unit
end

function response(status, response_headers, response_body)
  local latency = now_us() - started
  local key = bucket(latency)
  histogram[key] = (histogram[key] or 0) + 1
  count = count + 1
  sum = sum + latency
  if latency > max then max = latency end
end

function done(summary, latency, requests)
  local merged, total, total_sum, total_max = {}, 0, 0, 0
  for _, thread in ipairs(threads) do
    for key, n in pairs(thread:get("histogram")) do merged[key] = (merged[key] or 0) + n end
    total = total + thread:get("count")
    total_sum = total_sum + thread:get("sum")
    total_max = math.max(total_max, thread:get("max"))
  end
  local keys = {}
  for key in pairs(merged) do keys[#keys + 1] = key end
  table.sort(keys)
  local function percentile(p)
    local rank = math.max(1, math.ceil(p / 100 * total))
    local seen = 0
    for _, key in ipairs(keys) do
      seen = seen + merged[key]
      if seen >= rank then return key end
    end
    return total_max
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p10":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"mean":%.1f,"max":%d},"tokens":0}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    percentile(10), percentile(50), percentile(90), percentile(99), percentile(99.9),
    total > 0 and total_sum / total or 0, total_max))
end
