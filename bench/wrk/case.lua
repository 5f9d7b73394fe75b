-- One benchmark case for wrk, configured through the environment: the request (request.lua),
--   BENCH_COLLECT_TOKENS=1 to keep every access_token answered (to check them afterwards).
-- At the end it prints one line: "BENCH_RESULT <json>".

-- request.lua, beside this script (BENCH_WRK_DIR).
package.path = (os.getenv("BENCH_WRK_DIR") or ".") .. "/?.lua;" .. package.path
local request_of_case = require("request")
local collect = os.getenv("BENCH_COLLECT_TOKENS") == "1"

local prepared = nil
tokens = {}
count = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  prepared = request_of_case.format()
end

function request()
  return prepared
end

if collect then
  function response(status, response_headers, response_body)
    if status == 200 then
      local token = string.match(response_body, '"access_token":"([^"]+)"')
      if token then
        count = count + 1
        tokens[count] = token
      end
    end
  end
end

function done(summary, latency, requests)
  local collected = {}
  if collect then
    for _, thread in ipairs(threads) do
      local list = thread:get("tokens")
      local n = thread:get("count")
      for i = 1, n do collected[#collected + 1] = list[i] end
    end
  end
  local file = os.getenv("BENCH_TOKENS_FILE")
  if collect and file then
    local out = io.open(file, "w")
    out:write(table.concat(collected, "\n"))
    out:close()
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"p10":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"mean":%.1f,"max":%d},"tokens":%d}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(10), latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9), latency.mean, latency.max,
    #collected))
end
