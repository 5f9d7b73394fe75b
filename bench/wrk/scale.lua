-- The scale benchmark's load (bench/scale.ts): GET requests whose path and Authorization header are
-- picked from a file, configured through the environment:
--   SCALE_CREDENTIALS  the file: one request a line, "path<TAB>authorization", or
--                      "path<TAB>authorization<TAB>body" for a POST of a form (a token request)
--   SCALE_ORDER        "random" (default): each request picks a line uniformly at random;
--                      "sequential": the lines in order, once, then "SCALE_PASS_DONE" on stdout
--                      (the caller then stops wrk with SIGINT), then at random
--   SCALE_EXPECT       the status every answer must have (default 200); others are counted
-- At the end it prints one line: "SCALE_RESULT <json>".

local file = os.getenv("SCALE_CREDENTIALS")
local sequential = os.getenv("SCALE_ORDER") == "sequential"
local expected = tonumber(os.getenv("SCALE_EXPECT") or "200")

local paths = {}
local authorizations = {}
local bodies = {}
local n = 0
local next_line = 1
local announced = false
unexpected = 0
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for line in io.lines(file) do
    local tab = string.find(line, "\t", 1, true)
    if tab then
      n = n + 1
      paths[n] = string.sub(line, 1, tab - 1)
      local second = string.find(line, "\t", tab + 1, true)
      if second then
        authorizations[n] = string.sub(line, tab + 1, second - 1)
        bodies[n] = string.sub(line, second + 1)
      else
        authorizations[n] = string.sub(line, tab + 1)
      end
    end
  end
  if n == 0 then error("no requests in " .. tostring(file)) end
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end

function request()
  local index
  if sequential and next_line <= n then
    index = next_line
    next_line = next_line + 1
  else
    if sequential and not announced then
      announced = true
      io.write("SCALE_PASS_DONE\n")
      io.stdout:flush()
    end
    index = math.random(n)
  end
  local body = bodies[index]
  if body then
    return wrk.format("POST", paths[index],
      { ["Authorization"] = authorizations[index], ["Content-Type"] = "application/x-www-form-urlencoded" }, body)
  end
  return wrk.format("GET", paths[index], { ["Authorization"] = authorizations[index] })
end

function response(status, headers, body)
  if status ~= expected then unexpected = unexpected + 1 end
end

function done(summary, latency, requests)
  local wrong = 0
  for _, thread in ipairs(threads) do wrong = wrong + thread:get("unexpected") end
  local e = summary.errors
  io.write(string.format(
    'SCALE_RESULT {"requests":%d,"durationUs":%d,"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d},"unexpected":%d,' ..
    '"latencyUs":{"p50":%d,"p90":%d,"p99":%d,"mean":%.1f,"max":%d}}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.timeout, wrong,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))
end
